#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

using csrun::test::run_csrun;
using csrun::test::run_process;

namespace {

const std::string kConfigs = CSRUN_MODELZOO_CONFIGS "/";

const std::string kValid = R"(trainer:
  init:
    device: CPU
    model: {name: fc_mnist, depth: 1, hidden_size: 8}
    optimizer: {SGD: {lr: 0.1}}
    loop: {max_steps: 5}
  fit:
    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 4}
)";

}  // namespace

TEST_CASE("help and version on every level") {
  auto top = run_csrun({"--help"});
  CHECK(top.exit_code == 0);
  for (const char* command : {"validate", "compile", "train", "eval"}) {
    CHECK(top.out.find(command) != std::string::npos);
    auto help = run_csrun({command, "--help"});
    CHECK(help.exit_code == 0);
    for (const char* option :
         {"--params", "--model_dir", "--target_device", "--checkpoint_path", "--num_csx",
          "--num_workers_per_csx", "--max_steps", "--num_steps", "--eval_steps", "--seed",
          "--logging", "--set", "--json", "--fake_data"}) {
      INFO(command << " " << option);
      CHECK(help.out.find(option) != std::string::npos);
    }
  }
  auto version = run_csrun({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("csrun 0.1.0", 0) == 0);
}

TEST_CASE("CSRUN_CPU forces a kernel set, and one this csrun lacks is a usage error") {
  auto forced = run_process({"/usr/bin/env", "CSRUN_CPU=baseline", CSRUN_BINARY, "--version"});
  CHECK(forced.exit_code == 0);
  CHECK(forced.out.find("\nkernels: baseline (CSRUN_CPU)\n") != std::string::npos);
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kValid);
  CHECK(run_process(
            {"/usr/bin/env", "CSRUN_CPU=baseline", CSRUN_BINARY, "validate", params, "--fake_data"})
            .exit_code == 0);
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"--version"}, {"validate", params, "--fake_data"}}) {
    std::vector<std::string> arguments = {"/usr/bin/env", "CSRUN_CPU=sse9", CSRUN_BINARY};
    arguments.insert(arguments.end(), command.begin(), command.end());
    auto unknown = run_process(arguments);
    INFO(command[0] << ": " << unknown.err);
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.err.find("csrun: CSRUN_CPU=sse9: this csrun has no kernel set 'sse9'; it has ") !=
          std::string::npos);
  }
}

TEST_CASE("a run whose f32 products go through OpenBLAS's SSE3 fallback says what to set") {
  // Where OpenBLAS does not know this CPU it runs its Prescott kernels: --version says so, and a
  // run on the baseline set (every f32 product through OpenBLAS) warns. Kernels the user named in
  // OPENBLAS_CORETYPE are never questioned.
  auto version = run_process(
      {"/usr/bin/env", "-u", "OPENBLAS_CORETYPE", "CSRUN_CPU=baseline", CSRUN_BINARY, "--version"});
  REQUIRE(version.exit_code == 0);
  bool fell_back =
      version.out.find("it does not know the CPU (OPENBLAS_CORETYPE=") != std::string::npos;
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kValid);
  auto run = run_process({"/usr/bin/env", "-u", "OPENBLAS_CORETYPE", "CSRUN_CPU=baseline",
                          CSRUN_BINARY, "train", params, "--fake_data", "--max_steps", "1", "-o",
                          (dir.path() / "own").string()});
  INFO(version.out << run.err);
  CHECK(run.exit_code == 0);
  const std::string warning =
      "csrun train: warning: OpenBLAS runs its Prescott kernels here (it "
      "does not know this CPU), and the baseline kernel set multiplies "
      "every f32 product through OpenBLAS: export OPENBLAS_CORETYPE=";
  CHECK((run.err.find(warning) != std::string::npos) == fell_back);
  auto named = run_process({"/usr/bin/env", "OPENBLAS_CORETYPE=Prescott", "CSRUN_CPU=baseline",
                            CSRUN_BINARY, "train", params, "--fake_data", "--max_steps", "1", "-o",
                            (dir.path() / "named").string()});
  CHECK(named.exit_code == 0);
  CHECK(named.err.find("warning: OpenBLAS") == std::string::npos);
  auto named_version =
      run_process({"/usr/bin/env", "OPENBLAS_CORETYPE=Prescott", CSRUN_BINARY, "--version"});
  CHECK(named_version.out.find("its Prescott kernels (OPENBLAS_CORETYPE forces others)") !=
        std::string::npos);
}

TEST_CASE("usage errors exit with status 2") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kValid);
  CHECK(run_csrun({}).exit_code == 2);
  auto unknown = run_csrun({"frobnicate"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("unknown subcommand 'frobnicate' (validate, compile, train, eval, worker "
                         "or config)") != std::string::npos);
  auto late_dump = run_csrun({"validate", params, "--dump_ir", "lower-host"});
  CHECK(late_dump.exit_code == 2);
  CHECK(late_dump.err.find("lower-host comes after kernel matching, where validate stops") !=
        std::string::npos);
  CHECK(run_csrun({"validate"}).exit_code == 2);
  CHECK(run_csrun({"validate", params, "--bogus"}).exit_code == 2);
  CHECK(run_csrun({"validate", params, "--num_csx", "0"})
            .err.find("--num_csx: expected an integer >= 1, got '0'") != std::string::npos);
  CHECK(run_csrun({"validate", params, "--num_csx", "two"}).exit_code == 2);
  CHECK(run_csrun({"validate", params, "--target_device", "TPU"}).exit_code == 2);
  CHECK(run_csrun({"validate", params, "--logging", "LOUD"}).exit_code == 2);
  CHECK(run_csrun({"validate", params, "--set", "novalue"}).exit_code == 2);
  CHECK(run_csrun({"validate", params, "-p", params}).exit_code == 2);
  auto seed = run_csrun({"validate", params, "--seed", "18446744073709551616"});
  CHECK(seed.exit_code == 2);
  CHECK(seed.err.find("--seed: expected an integer from -2^63 to 2^63-1") != std::string::npos);
  auto no_host = run_csrun({"train", params, "--stream_listen", "tcp://:5555"});
  CHECK(no_host.exit_code == 2);
  CHECK(no_host.err.find("expected tcp://HOST:PORT") != std::string::npos);
  auto port = run_csrun({"train", params, "--stream_listen", "tcp://127.0.0.1:99999"});
  CHECK(port.exit_code == 2);
  CHECK(port.err.find("the port of 'tcp://127.0.0.1:99999' must be 1 to 65535 or *") !=
        std::string::npos);
  CHECK(run_csrun({"train", params, "--stream_listen", "udp://x:1"}).exit_code == 2);
}

TEST_CASE("sizes beyond what csrun can count or this machine can hold are refused up front") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kValid);
  auto wide = run_csrun(
      {"validate", params, "--fake_data", "--set", "trainer.init.model.hidden_size=2147483648"});
  CHECK(wide.exit_code == 1);
  CHECK(wide.err.find("trainer.init.model.hidden_size: expected an integer ≥ 1 and ≤ 1048576; "
                      "found the integer 2147483648") != std::string::npos);
  auto positions =
      run_csrun({"validate", CSRUN_SOURCE_DIR "/configs/bert_tiny.yaml", "--fake_data", "--set",
                 "trainer.init.model.max_position_embeddings=144115188075855872"});
  CHECK(positions.exit_code == 1);
  CHECK(positions.err.find("max_position_embeddings: expected an integer ≥ 1 and ≤ 1048576") !=
        std::string::npos);
  auto batch = run_csrun({"compile", params, "--fake_data", "-o", (dir.path() / "a").string(),
                          "--set", "trainer.fit.train_dataloader.batch_size=4611686018427387904"});
  CHECK(batch.exit_code == 1);
  CHECK(batch.err.find("a tensor of shape [4611686018427387904, 784] has more elements than a "
                       "64-bit count holds") != std::string::npos);
  auto planned = run_csrun({"compile", params, "--fake_data", "-o", (dir.path() / "b").string(),
                            "--set", "trainer.fit.train_dataloader.batch_size=1000000000"});
  CHECK(planned.exit_code == 0);
  CHECK(planned.out.find(": csrun train would refuse it here") != std::string::npos);
  auto memory = run_csrun({"train", params, "--fake_data", "-o", (dir.path() / "b").string(),
                           "--set", "trainer.fit.train_dataloader.batch_size=1000000000"});
  CHECK(memory.exit_code == 1);
  CHECK_THAT(memory.err, Catch::Contains("of host memory in micro-steps of 1 sample (its "
                                         "parameters and optimizer state ") &&
                             Catch::Contains("), more than this machine's") &&
                             Catch::EndsWith(": lower the batch size\n"));
  // A model of 10^12 parameters (4 TB): no batch fits.
  auto state =
      run_csrun({"train", params, "--fake_data", "-o", (dir.path() / "c").string(), "--set",
                 "trainer.init.model.hidden_size=1000000", "--set", "trainer.init.model.depth=2"});
  CHECK(state.exit_code == 1);
  CHECK_THAT(state.err,
             Catch::Contains("the parameters and optimizer state alone do not fit, whatever"));
  // Attention scores of 2^18 x 2^18 tokens for each sample (8.5 TiB), a state of 1.5 GiB.
  auto sequence = run_csrun({"train", CSRUN_SOURCE_DIR "/configs/bert_tiny.yaml", "--fake_data",
                             "-o", (dir.path() / "d").string(), "--set",
                             "trainer.init.model.max_position_embeddings=262144", "--set",
                             "trainer.fit.train_dataloader.max_sequence_length=262144", "--set",
                             "trainer.fit.val_dataloader.max_sequence_length=262144"});
  CHECK(sequence.exit_code == 1);
  CHECK_THAT(sequence.err, Catch::Contains(": lower the sequence length") &&
                               Catch::Contains("; or train with --recompute_layers, which runs "
                                               "each layer's forward pass again"));
  // A UNet's samples are images, 32768 x 32768 pixels each here: no sequence length to lower.
  auto image = run_csrun({"train", CSRUN_SOURCE_DIR "/configs/unet_tiny.yaml", "--fake_data", "-o",
                          (dir.path() / "e").string(), "--set",
                          "train_input.image_shape=[32768, 32768, 1]"});
  CHECK(image.exit_code == 1);
  CHECK_THAT(image.err, Catch::Contains(": lower the size of a sample (its image_shape): a larger "
                                        "batch runs as more micro-steps"));
}

TEST_CASE("validate: success prints a summary, a failure exits 1 with every error") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kValid);
  auto ok = run_csrun({"validate", params, "--fake_data"});
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("model       fc_mnist, 6,370 parameters") != std::string::npos);
  CHECK(ok.out.find("Config validation was successful!") != std::string::npos);
  auto by_flag = run_csrun({"validate", "-p", params, "--fake_data"});
  CHECK(by_flag.exit_code == 0);
  auto bad = run_csrun({"validate", params, "--fake_data", "--set", "trainer.init.loop.max_steps=0",
                        "--set", "trainer.fit.train_dataloader.batch_size=x"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("`max_steps` must be greater than 0 in the loop config, got 0") !=
        std::string::npos);
  CHECK(bad.err.find("trainer.fit.train_dataloader.batch_size: expected an integer ≥ 1; found the "
                     "string 'x'") != std::string::npos);
  CHECK(bad.err.find("csrun validate: 2 errors in") != std::string::npos);
}

TEST_CASE("flags override the file only when given") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kValid);
  auto json_of = [&](std::vector<std::string> extra) {
    std::vector<std::string> arguments = {"validate", params, "--fake_data", "--json"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    auto result = run_csrun(arguments);
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out);
  };
  auto plain = json_of({});
  CHECK(plain["trainers"][0]["loop"]["max_steps"] == 5);
  CHECK(plain["trainers"][0]["device"] == "CPU");
  CHECK(plain["trainers"][0]["model_dir"] == "./model_dir");
  auto overridden = json_of(
      {"--max_steps", "9", "--target_device", "CSX", "-o", dir.path().string(), "--seed", "3"});
  CHECK(overridden["trainers"][0]["loop"]["max_steps"] == 9);
  CHECK(overridden["trainers"][0]["device"] == "CSX");
  CHECK(overridden["trainers"][0]["model_dir"] == dir.path().string());
  CHECK(overridden["trainers"][0]["seed"] == 3);
}

TEST_CASE("the JSON report covers failures too") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", "runconfig:\n  max_step: 3\n");
  auto result = run_csrun({"validate", params, "--json"});
  CHECK(result.exit_code == 1);
  auto report = nlohmann::json::parse(result.out);
  CHECK(report["ok"] == false);
  CHECK(report["errors"].get<int>() >= 1);
  auto first = report["diagnostics"][0];
  CHECK(first["severity"] == "error");
  CHECK(first["line"] == 2);
  CHECK(first["column"] == 3);
  CHECK(first["key"] == "runconfig.max_step");
}

TEST_CASE("the logging level chooses which findings are printed") {
  auto warnings = run_csrun({"validate", kConfigs + "fc_mnist_r1.6.0__params.yaml", "--fake_data"});
  CHECK(warnings.err.find("save_losses is a Model Zoo 1.x runconfig key") != std::string::npos);
  auto quiet = run_csrun(
      {"validate", kConfigs + "fc_mnist_r1.6.0__params.yaml", "--fake_data", "--logging", "error"});
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("compile, train and eval start with validation") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kValid);
  for (const char* command : {"compile", "train", "eval"}) {
    auto invalid =
        run_csrun({command, params, "--set", "trainer.init.loop.max_steps=-1", "--fake_data"});
    CHECK(invalid.exit_code == 1);
    CHECK(invalid.err.find(std::string("csrun ") + command + ": 1 error in") != std::string::npos);
  }
}

TEST_CASE("every example config in configs/ validates (its data replaced by --fake_data)") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(CSRUN_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    auto result = run_csrun({"validate", entry.path().string(), "--fake_data"});
    INFO(entry.path() << "\n" << result.out << result.err);
    CHECK(result.exit_code == 0);
    ++checked;
  }
  CHECK(checked >= 4);
}

TEST_CASE("config convert: a legacy file in the 2.10 trainer format, one comment per change") {
  csrun::test::TempDir dir;
  std::string legacy = dir.write("legacy.yaml", R"(# An fc_mnist run of Release 1.9.
train_input: {data_processor: MNISTDataProcessor, batch_size: 8, use_multiple_workers: true}
model: {depth: 1, hidden_size: 8, mixed_precision: true}
optimizer: {optimizer_type: adam, learning_rate: 0.001, epsilon: 1e-8}
runconfig: {max_steps: 5, use_cs_grad_accum: false, save_losses: true}
)");
  std::string converted = (dir.path() / "converted.yaml").string();
  auto result = run_csrun({"config", "convert", legacy, "-o", converted});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  std::ifstream file(converted);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  INFO(text);
  CHECK(text.rfind("# An fc_mnist run of Release 1.9.\n# csrun config convert: legacy.yaml "
                   "(legacy params) in the Model Zoo 2.10 trainer format; changes:\n",
                   0) == 0);
  for (const char* change :
       {"#   runconfig.use_cs_grad_accum (line 5): use_cs_grad_accum is a Model Zoo 2.0",
        "#   runconfig.save_losses (line 5): save_losses is a Model Zoo 1.x runconfig key",
        "#   optimizer.epsilon (line 4): epsilon is the Model Zoo 1.x spelling of eps",
        "#   train_input.use_multiple_workers (line 2): left out: use_multiple_workers",
        "#   model.name (line 3): set to 'fc_mnist'",
        "#   optimizer.epsilon (line 4): written as a number: PyYAML reads 1e-8 as a string",
        "#   backend.execution_mode (line 2): auto: Model Zoo 1.9 ran this file "
        "pipelined where the model fits the wafer; in the 2.10 format auto runs weight streaming "
        "(add execution_mode: pipelined"}) {
    CHECK(text.find(change) != std::string::npos);
  }
  CHECK(text.find("\ntrainer:\n  init:\n") != std::string::npos);
  CHECK(text.find("      name: \"fc_mnist\"\n") != std::string::npos);
  CHECK(text.find("eps: 1.0e-08") != std::string::npos);
  CHECK(text.find("use_multiple_workers", text.find("\ntrainer:")) == std::string::npos);

  // The converted file converts to itself, on standard output when no -o is given.
  auto again = run_csrun({"config", "convert", converted});
  CHECK(again.exit_code == 0);
  CHECK(again.out == text);
}

TEST_CASE("config convert refuses a file with errors, and config keys names what it knows") {
  csrun::test::TempDir dir;
  std::string broken =
      dir.write("broken.yaml", "train_input: {batch_size: 8}\nmodel: {depth: x}\n");
  auto refused = run_csrun({"config", "convert", broken, "-o", (dir.path() / "out.yaml").string()});
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("csrun config convert: ") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "out.yaml"));
  CHECK(run_csrun({"config"}).exit_code == 2);
  CHECK(run_csrun({"config", "convert"}).exit_code == 2);

  auto listing = run_csrun({"config", "keys"});
  CHECK(listing.exit_code == 0);
  CHECK(listing.out.find("networks: fc_mnist gpt2") != std::string::npos);
  CHECK(listing.out.find("optimizer: SGD Adam AdamW") != std::string::npos);
  auto gpt2 = run_csrun({"config", "keys", "gpt2"});
  CHECK(gpt2.out.find("| `vocab_size` | an integer ≥ 1 and ≤ 1048576 | **required** |") !=
        std::string::npos);
  // Any case finds a model or a processor, as it finds a class.
  CHECK(run_csrun({"config", "keys", "GPT2"}).out == gpt2.out);
  auto processor = run_csrun({"config", "keys", "mnistdataprocessor"});
  CHECK(processor.exit_code == 0);
  CHECK(processor.out == run_csrun({"config", "keys", "MNISTDataProcessor"}).out);
  auto adamw = run_csrun({"config", "keys", "adamw"});
  CHECK(adamw.out.find("| `correct_bias` | a boolean (true or false) | true |") !=
        std::string::npos);
  auto typo = run_csrun({"config", "keys", "gtp2"});
  CHECK(typo.exit_code == 1);
  CHECK(typo.err.find("nothing is named 'gtp2'; did you mean 'gpt2'?") != std::string::npos);
}
