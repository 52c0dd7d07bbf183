// `csrun compile` end to end: the report and its files, the compile cache, IR dumps, execution
// modes, every buildable Model Zoo config, and the performance model's calibration.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

using csrun::test::read_file;
using csrun::test::run_csrun;
using nlohmann::json;

std::string data(const std::string& file) {
  return std::string(CSRUN_MODELZOO_CONFIGS) + "/" + file;
}

// The compile directory of the only plan under model_dir.
std::filesystem::path plan_directory(const std::filesystem::path& model_dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir / "compile"))
    found.push_back(entry.path());
  REQUIRE(found.size() == 1);
  return found.front();
}

json compiled_json(std::vector<std::string> arguments) {
  arguments.push_back("--json");
  auto result = run_csrun(arguments);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.out)["compiled"][0];
}

const std::string kFcMnist = R"(trainer:
  init:
    device: CSX
    model: {name: fc_mnist, depth: 2, hidden_size: 32}
    optimizer: {SGD: {lr: 0.1}}
    loop: {max_steps: 5}
  fit:
    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 16}
)";

}  // namespace

TEST_CASE("compile writes a plan with its report, kernel table and picture, then reuses it") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kFcMnist);
  std::string model_dir = (dir.path() / "model").string();
  auto first = run_csrun({"compile", params, "--fake_data", "-o", model_dir});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("Compile for training completed successfully!") != std::string::npos);
  CHECK(first.out.find("mode        weight streaming: auto: params of Model Zoo 2.4 and later") !=
        std::string::npos);
  CHECK(first.out.find("throughput  ") != std::string::npos);
  CHECK(first.out.find("model.fc_layers.0") != std::string::npos);
  CHECK(first.out.find("  peak        kernel ") != std::string::npos);
  std::filesystem::path plan = plan_directory(model_dir);
  for (const char* file : {"plan.bin", "report.json", "kernels.tsv", "placement.svg"})
    CHECK(std::filesystem::exists(plan / file));
  json report = json::parse(read_file(plan / "report.json"));
  CHECK(report["mapping"]["mode"] == "weight_streaming");
  CHECK(report["mapping"]["estimate"]["samples_per_second"].get<double>() > 0.0);
  CHECK(report["mapping"]["estimate"]["spilled_bytes"].get<std::int64_t>() >= 0);
  CHECK(report["plan"]["from_cache"] == false);
  const json& peak = report["memory"]["live_peak"];
  CHECK(peak["bytes"].get<std::int64_t>() > 0);
  REQUIRE_FALSE(peak["values"].empty());
  CHECK(peak["values"][0]["bytes"].get<std::int64_t>() <= peak["bytes"].get<std::int64_t>());
  CHECK(read_file(plan / "placement.svg").find("<svg") == 0);
  CHECK(read_file(plan / "kernels.tsv").find("kernel\tname\tnodes") == 0);

  std::string bytes = read_file(plan / "plan.bin");
  // A report removed from the cache is written again when the plan is reused.
  std::filesystem::remove(plan / "report.json");
  std::filesystem::remove(plan / "placement.svg");
  auto second = run_csrun({"compile", params, "--fake_data", "-o", model_dir});
  REQUIRE(second.exit_code == 0);
  CHECK(second.out.find("(reused from the compile cache)") != std::string::npos);
  CHECK(read_file(plan / "plan.bin") == bytes);
  CHECK(json::parse(read_file(plan / "report.json"))["plan"]["from_cache"] == true);
  CHECK(read_file(plan / "placement.svg").find("<svg") == 0);
  // train finds the same plan and runs it.
  auto train = run_csrun({"train", params, "--fake_data", "-o", model_dir});
  CHECK(train.err.find("plan " + plan.string() + " (from the compile cache)") != std::string::npos);
  CHECK(train.exit_code == 0);

  // A damaged cache entry is compiled again, with a warning.
  std::ofstream(plan / "plan.bin", std::ios::trunc) << "not a plan";
  auto third = run_csrun({"compile", params, "--fake_data", "-o", model_dir});
  REQUIRE(third.exit_code == 0);
  CHECK(third.err.find("not a csrun plan; compiling again") != std::string::npos);
  CHECK(read_file(plan / "plan.bin") == bytes);
}

TEST_CASE("compile plans a split batch's micro-step and update too, and train reuses them") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kFcMnist);
  std::string model_dir = (dir.path() / "model").string();
  std::vector<std::string> split = {"--fake_data", "-o", model_dir, "--set",
                                    "trainer.fit.train_dataloader.micro_batch_size=4"};
  std::vector<std::string> compile = {"compile", params};
  compile.insert(compile.end(), split.begin(), split.end());
  auto compiled = run_csrun(compile);
  INFO(compiled.err);
  REQUIRE(compiled.exit_code == 0);
  CHECK(compiled.out.find("host        csrun train runs 4 micro-steps of 4 samples per step") !=
        std::string::npos);
  // The whole step's plan (for the wafer), the micro-step's and the update's; train writes none
  // of them again.
  std::map<std::filesystem::path, std::filesystem::file_time_type> plans;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir + "/compile"))
    plans[entry.path()] = std::filesystem::last_write_time(entry.path() / "plan.bin");
  CHECK(plans.size() == 3);
  std::vector<std::string> train = {"train", params};
  train.insert(train.end(), split.begin(), split.end());
  auto trained = run_csrun(train);
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  std::size_t found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir + "/compile")) {
    REQUIRE(plans.contains(entry.path()));
    CHECK(std::filesystem::last_write_time(entry.path() / "plan.bin") == plans.at(entry.path()));
    ++found;
  }
  CHECK(found == 3);
}

TEST_CASE("compile --json, --wafer, --execution_mode and --num_csx") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kFcMnist);
  std::string model_dir = (dir.path() / "model").string();
  json pipelined = compiled_json(
      {"compile", params, "--fake_data", "-o", model_dir, "--execution_mode", "pipelined"});
  CHECK(pipelined["mapping"]["mode"] == "pipelined");
  CHECK(pipelined["mapping"]["wafer"] == "wse2");
  CHECK(pipelined["alternative"]["mode"] == "weight_streaming");
  // --dump_ir prints to stderr beside --json: stdout stays one document.
  json cs3 = compiled_json({"compile", params, "--fake_data", "-o", model_dir, "--wafer", "wse3",
                            "--dump_ir", "fuse-elementwise", "--dump_ir", "lower-host"});
  CHECK(cs3["mapping"]["wafer"] == "wse3");
  CHECK(cs3["plan"]["key"] != pipelined["plan"]["key"]);
  json cluster = compiled_json({"compile", params, "--fake_data", "-o", model_dir, "--num_csx", "4",
                                "--set", "trainer.fit.train_dataloader.batch_size=64"});
  CHECK(cluster["mapping"]["mode"] == "weight_streaming");
  CHECK(cluster["mapping"]["mode_reason"].get<std::string>().find("4 systems need weight "
                                                                  "streaming") !=
        std::string::npos);
  const json& estimate = cluster["mapping"]["estimate"];
  CHECK(estimate["num_csx"] == 4);
  CHECK(estimate["cluster_samples_per_second"].get<double>() >
        estimate["samples_per_second"].get<double>());
  auto refused =
      run_csrun({"compile", params, "--fake_data", "-o", model_dir, "--num_csx", "2", "--set",
                 "trainer.fit.train_dataloader.batch_size=32", "--execution_mode", "pipelined"});
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("pipelined execution runs on one system only; num_csx is 2") !=
        std::string::npos);
  CHECK(run_csrun({"compile", params, "--wafer", "wse9"}).exit_code == 2);
  CHECK(run_csrun({"compile", params, "--execution_mode", "fastest"}).exit_code == 2);
}

TEST_CASE("compile --dump_ir prints the IR after the passes asked for") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kFcMnist);
  std::string model_dir = (dir.path() / "model").string();
  auto dumped = run_csrun({"compile", params, "--fake_data", "-o", model_dir, "--dump_ir", "trace",
                           "--dump_ir", "fuse-elementwise"});
  REQUIRE(dumped.exit_code == 0);
  CHECK(dumped.out.find("# IR after trace: ") != std::string::npos);
  CHECK(dumped.out.find("# IR after fuse-elementwise: ") != std::string::npos);
  CHECK(dumped.out.find("# IR after fold") == std::string::npos);
  CHECK(dumped.out.find("= matmul %") != std::string::npos);
  CHECK(dumped.out.find(" matmul}") != std::string::npos);
  auto wrong = run_csrun({"compile", params, "--dump_ir", "inline"});
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.err.find("fuse-matmul") != std::string::npos);
  CHECK(wrong.err.find("lower-host") != std::string::npos);
}

TEST_CASE("compile --dump_ir lower-host and kernels.tsv show the calls the simulator makes") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kFcMnist);
  std::string model_dir = (dir.path() / "model").string();
  auto dumped = run_csrun({"compile", params, "--fake_data", "-o", model_dir, "--target_device",
                           "CPU", "--dump_ir", "lower-host", "--dump_ir", "layout-scratch", "--set",
                           "trainer.init.precision.max_gradient_norm=1.0"});
  REQUIRE(dumped.exit_code == 0);
  // The gradients' squares are summed as their chains compute them.
  CHECK(dumped.out.find(" mul [sums as it goes: %") != std::string::npos);
  CHECK(dumped.out.find("# host steps after lower-host: ") != std::string::npos);
  CHECK(dumped.out.find("# scratch after layout-scratch: ") != std::string::npos);
  CHECK(dumped.out.find("\nregion ") != std::string::npos);
  CHECK(dumped.out.find("# IR after") == std::string::npos);
  CHECK(dumped.out.find(" matmul: gemm %") != std::string::npos);
  CHECK(dumped.out.find("^T) + %") != std::string::npos);
  CHECK(dumped.out.find(" transpose, %") != std::string::npos);  // [folds %N transpose, %M add]
  std::filesystem::path plan_dir =
      std::filesystem::directory_iterator(std::filesystem::path(model_dir) / "compile")->path();
  std::string table = read_file(plan_dir / "kernels.tsv");
  CHECK(table.find("\thost_steps\tscratch_bytes\n") != std::string::npos);
  CHECK(table.find("\tgemm+bias^T") != std::string::npos);
  CHECK(table.find("\tchain1+sum@registers") != std::string::npos);
}

TEST_CASE("pipelined execution that does not fit is an error saying by how much") {
  csrun::test::TempDir dir;
  auto result = run_csrun({"compile", data("gpt2_r2.3.1__params_gpt2_small.yaml"), "--fake_data",
                           "-o", dir.path().string(), "--execution_mode", "pipelined"});
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("pipelined execution does not fit") != std::string::npos);
  CHECK(result.err.find("too much") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "compile"));
}

TEST_CASE("every Model Zoo config of a model csrun builds compiles with --fake_data") {
  csrun::test::TempDir dir;
  // The one the Model Zoo itself rejects compiles once its duplicate key is gone.
  std::string gpt2_ws = read_file(data("gpt2_r1.8.0__params_gpt2_small_ws.yaml"));
  std::string duplicate = "        steps: 150000\n        steps: 150000\n";
  REQUIRE(gpt2_ws.find(duplicate) != std::string::npos);
  gpt2_ws.replace(gpt2_ws.find(duplicate), duplicate.size(), "        steps: 150000\n");
  std::vector<std::string> configs = {data("fc_mnist_r1.6.0__params.yaml"),
                                      data("fc_mnist__params.yaml"),
                                      data("fc_mnist__params_cszoov2.yaml"),
                                      data("gpt2_r2.3.1__params_gpt2_small.yaml"),
                                      data("gpt3__111m.yaml"),
                                      data("bert_r1.6.0__bert_base_msl128.yaml"),
                                      data("bert__bert_base_MSL128.yaml"),
                                      dir.write("gpt2_small_ws.yaml", gpt2_ws),
                                      data("gpt3_r2.0.2__params_gpt3_6p7b.yaml")};
  for (const std::string& params : configs) {
    INFO(params);
    auto result =
        run_csrun({"compile", params, "--fake_data", "-o", (dir.path() / "model").string()});
    INFO(result.err);
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("completed successfully!") != std::string::npos);
  }
}

TEST_CASE("attention over a long sequence is planned a block of queries at a time") {
  // Llama 3.2 1B as Release 2.10 ships it (MSL 8k, cbfloat16), at batch 1. Whole, each layer's
  // scores took 8.6 GB, the peak held four values of that size, and the step 55.9 GiB.
  csrun::test::TempDir dir;
  json compiled = compiled_json(
      {"compile", data("releases/Release_2.10.0/llama__params_llama3p2_1b_msl_8k.yaml"),
       "--fake_data", "-o", dir.path().string(), "--set",
       "trainer.fit.train_dataloader.batch_size=1", "--set",
       "trainer.fit.val_dataloader.batch_size=1", "--set",
       "trainer.init.callbacks.0.ScopedTrainFlags.csx.performance.micro_batch_size=1", "--set",
       "trainer.init.callbacks.1.ScopedValidateFlags.csx.performance.micro_batch_size=1"});
  // 16 layers of 16 blocks, a forward softmax and a backward one each.
  CHECK(compiled["kernel_counts"]["fused_softmax"] == 16 * 16 * 2);
  CHECK(compiled["graph"]["attention_blocks"] ==
        json({{"attentions", 16}, {"blocks", 16}, {"queries", 512}}));
  const json& memory = compiled["memory"];
  // The largest value at the peak is now the vocabulary's logits (8192 x 128256 in 16 bits).
  CHECK(memory["live_peak"]["values"][0]["bytes"].get<std::int64_t>() <= 2101346304);
  std::int64_t host =
      memory["arena_bytes"].get<std::int64_t>() + memory["scratch_bytes"].get<std::int64_t>();
  CHECK(host < std::int64_t{40} << 30);
}

TEST_CASE(
    "compile --recompute_layers plans a long sequence in less memory, for the same estimate") {
  csrun::test::TempDir dir;
  std::vector<std::string> compile = {
      "compile",
      data("releases/Release_2.10.0/llama__params_llama3p2_1b_msl_8k.yaml"),
      "--fake_data",
      "-o",
      dir.path().string(),
      "--set",
      "trainer.fit.train_dataloader.batch_size=1",
      "--set",
      "trainer.fit.val_dataloader.batch_size=1",
      "--set",
      "trainer.init.callbacks.0.ScopedTrainFlags.csx.performance.micro_batch_size=1",
      "--set",
      "trainer.init.callbacks.1.ScopedValidateFlags.csx.performance.micro_batch_size=1"};
  compile.push_back("--recompute_layers");
  json recomputed = compiled_json(compile);
  compile.pop_back();
  // The plan the wafer mapping is of, the step without layers recomputed, was compiled with it
  // into the cache, with its files: a run without the flag reuses it.
  json kept = compiled_json(compile);
  CHECK(kept["plan"]["from_cache"] == true);
  std::filesystem::path kept_directory = kept["plan"]["directory"].get<std::string>();
  CHECK(std::filesystem::exists(kept_directory / "report.json"));
  CHECK(std::filesystem::exists(kept_directory / "placement.svg"));
  CHECK(kept["plan"]["recompute_layers"] == false);
  CHECK(recomputed["plan"]["recompute_layers"] == true);
  CHECK(recomputed["plan"]["key"] != kept["plan"]["key"]);
  std::int64_t changes = -1;
  for (const json& pass : recomputed["passes"]) {
    if (pass["name"] == "recompute-layers") changes = pass["changes"].get<std::int64_t>();
  }
  CHECK(changes > 0);
  // The wafer keeps its own activations: its mapping is of the step without layers recomputed.
  CHECK(recomputed["mapping"] == kept["mapping"]);
  CHECK(recomputed["alternative"] == kept["alternative"]);
  // 16 layers' activations at 8k tokens no longer wait for the backward pass: 30.6 -> 22.2 GB.
  auto host = [](const json& report) {
    return report["memory"]["arena_bytes"].get<std::int64_t>() +
           report["memory"]["scratch_bytes"].get<std::int64_t>();
  };
  CHECK(host(recomputed) < host(kept) - (std::int64_t{7} << 30));
  CHECK(recomputed["memory"]["persistent_bytes"] == kept["memory"]["persistent_bytes"]);
  // An eval step has no backward pass: eval does not take the flag.
  auto eval =
      run_csrun({"eval", data("releases/Release_2.10.0/llama__params_llama3p2_1b_msl_8k.yaml"),
                 "--fake_data", "--recompute_layers"});
  CHECK(eval.exit_code == 2);
  CHECK(eval.err.find("--recompute_layers") != std::string::npos);
}

TEST_CASE("auto follows the params' release: 1.x pipelines what fits, 2.x streams weights") {
  csrun::test::TempDir dir;
  std::string model_dir = (dir.path() / "model").string();
  auto old =
      run_csrun({"compile", data("fc_mnist_r1.6.0__params.yaml"), "--fake_data", "-o", model_dir});
  REQUIRE(old.exit_code == 0);
  CHECK(old.out.find("mode        layer pipelined: auto: params of Model Zoo 1.9 and earlier and "
                     "everything fits on the wafer") != std::string::npos);
  // The same network in files 2.x reads: weight streaming, saying that pipelined would fit.
  for (const char* params : {"fc_mnist__params.yaml", "fc_mnist__params_cszoov2.yaml"}) {
    auto modern = run_csrun({"compile", data(params), "--fake_data", "-o", model_dir});
    INFO(params << "\n" << modern.out);
    REQUIRE(modern.exit_code == 0);
    CHECK(modern.out.find("mode        weight streaming: auto: params of Model Zoo ") !=
          std::string::npos);
    CHECK(modern.out.find("from 2.0 the Model Zoo runs weight streaming on a CS-2 cluster "
                          "(pipelined would fit: ") != std::string::npos);
  }
  auto asked = run_csrun({"compile", data("fc_mnist__params_cszoov2.yaml"), "--fake_data", "-o",
                          model_dir, "--execution_mode", "pipelined"});
  REQUIRE(asked.exit_code == 0);
  CHECK(asked.out.find("mode        layer pipelined: requested") != std::string::npos);
}

TEST_CASE("compile reports the global batch, each system's share and the cluster's rate") {
  csrun::test::TempDir dir;
  std::vector<std::string> gpt3 = {"compile", data("gpt3__111m.yaml"),         "--fake_data",
                                   "-o",      (dir.path() / "model").string(), "--num_csx",
                                   "2"};
  auto result = run_csrun(gpt3);
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("training step of 120 samples: 60 per system on 2 systems") !=
        std::string::npos);
  CHECK(result.out.find("(auto: the fastest the estimate finds)") != std::string::npos);
  CHECK(result.out.find("cluster     2 x CS-2, 120 samples per step: ") != std::string::npos);
  json report = compiled_json(gpt3);
  CHECK(report["batch_size_per_system"] == 60);
  CHECK(report["global_batch_size"] == 120);
  double system_rate = report["mapping"]["estimate"]["samples_per_second"];
  double cluster_rate = report["mapping"]["estimate"]["cluster_samples_per_second"];
  CHECK(cluster_rate > 1.8 * system_rate);
  CHECK(cluster_rate <= 2.0 * system_rate);

  gpt3.insert(gpt3.end(), {"--set", "trainer.fit.train_dataloader.micro_batch_size=10"});
  auto given = run_csrun(gpt3);
  REQUIRE(given.exit_code == 0);
  CHECK(given.out.find("micro-batch 10 samples x 6 per step (micro_batch_size)") !=
        std::string::npos);
}

// Weight streaming amortizes each step's weight traffic over its samples: a system's samples/s
// grows with the batch while weight I/O bounds the step, then levels off once compute does
// (../shared/reference/wafer.md, batch-size sensitivity).
TEST_CASE("the estimate's samples/s grows with the batch and levels off as a CS-2's does") {
  csrun::test::TempDir dir;
  auto rate = [&](const std::string& params, std::int64_t batch, const std::string& batch_key) {
    json report = compiled_json({"compile", data(params), "--fake_data", "-o",
                                 (dir.path() / "model").string(), "--set",
                                 batch_key + "=" + std::to_string(batch)});
    return report["mapping"]["estimate"]["samples_per_second"].get<double>();
  };
  for (const auto& [params, key] : std::vector<std::pair<std::string, std::string>>{
           {"gpt2_r2.3.1__params_gpt2_small.yaml", "train_input.batch_size"},
           {"bert__bert_base_MSL128.yaml", "trainer.fit.train_dataloader.batch_size"}}) {
    INFO(params);
    std::vector<double> rates;
    for (std::int64_t batch : {1, 4, 16, 64, 256, 1024})
      rates.push_back(rate(params, batch, key));
    for (std::size_t i = 1; i < rates.size(); ++i)
      CHECK(rates[i] >= 0.97 * rates[i - 1]);
    CHECK(rates.front() < 0.6 * rates.back());
    CHECK(rates[rates.size() - 2] > 0.85 * rates.back());
  }
}

TEST_CASE("the performance model matches the measured CS-2 runs it is calibrated on") {
  csrun::test::TempDir dir;
  std::string model_dir = (dir.path() / "model").string();
  // GPT-2 small, MSL 2048, batch 112, weight streaming: 494.5 samples/s measured.
  json gpt2 = compiled_json({"compile", data("gpt2_r2.3.1__params_gpt2_small.yaml"), "--fake_data",
                             "-o", model_dir, "--execution_mode", "weight_streaming"});
  double gpt2_rate = gpt2["mapping"]["estimate"]["samples_per_second"];
  CHECK(gpt2_rate == Approx(494.5).epsilon(0.15));
  // BERT-Large, MSL 128, batch 1024, weight streaming: 4,040 samples/s measured.
  json bert = compiled_json(
      {"compile", data("bert__bert_base_MSL128.yaml"), "--fake_data", "-o", model_dir,
       "--execution_mode", "weight_streaming", "--set", "trainer.init.model.hidden_size=1024",
       "--set", "trainer.init.model.num_hidden_layers=24", "--set",
       "trainer.init.model.num_heads=16", "--set", "trainer.init.model.filter_size=4096", "--set",
       "trainer.fit.train_dataloader.batch_size=1024"});
  double bert_rate = bert["mapping"]["estimate"]["samples_per_second"];
  CHECK(bert_rate == Approx(4040.0).epsilon(0.15));
}

TEST_CASE("a plan cached by one build of csrun is compiled again by another build") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kFcMnist);
  std::string model_dir = (dir.path() / "model").string();
  auto version = run_csrun({"--version"});
  std::size_t at = version.out.find("\nbuild id: ");
  REQUIRE(at != std::string::npos);
  std::string id = version.out.substr(at + 11, version.out.find('\n', at + 1) - at - 11);
  REQUIRE(id.size() == 40);

  // Another build: the same executable with one byte of its build ID changed.
  std::string binary = read_file(CSRUN_BINARY);
  std::string raw;
  for (std::size_t digit = 0; digit < id.size(); digit += 2)
    raw += static_cast<char>(std::stoi(id.substr(digit, 2), nullptr, 16));
  std::size_t note = binary.find(raw);
  REQUIRE(note != std::string::npos);
  CHECK(binary.find(raw, note + 1) == std::string::npos);
  binary[note] = static_cast<char>(binary[note] ^ 0x5a);
  std::filesystem::path other = dir.path() / "csrun-other";
  std::ofstream(other, std::ios::binary) << binary;
  std::filesystem::permissions(other, std::filesystem::perms::owner_all);
  auto other_version = csrun::test::run_process({other.string(), "--version"});
  CHECK(other_version.out.find("\nbuild id: " + id + "\n") == std::string::npos);

  auto first = run_csrun({"compile", params, "--fake_data", "-o", model_dir});
  REQUIRE(first.exit_code == 0);
  auto same = run_csrun({"compile", params, "--fake_data", "-o", model_dir});
  CHECK(same.out.find("(reused from the compile cache)") != std::string::npos);
  auto rebuilt =
      csrun::test::run_process({other.string(), "compile", params, "--fake_data", "-o", model_dir});
  INFO(rebuilt.err);
  REQUIRE(rebuilt.exit_code == 0);
  CHECK(rebuilt.out.find("(reused from the compile cache)") == std::string::npos);
  std::size_t plans = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(model_dir) / "compile"))
    ++plans;
  CHECK(plans == 2);
}
