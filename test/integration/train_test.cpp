#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "data/hdf5_file.hpp"
#include "support/event_reader.hpp"
#include "support/process.hpp"
#include "support/same_weights.hpp"
#include "support/temp_dir.hpp"

using csrun::test::read_file;
using csrun::test::run_csrun;
namespace fs = std::filesystem;

namespace {

const std::string kRun = R"(trainer:
  init:
    device: CSX
    seed: 3
    model: {name: fc_mnist, hidden_sizes: [16], compute_eval_metrics: true}
    optimizer: {SGD: {lr: 0.01, momentum: 0.9}}
    precision: {enabled: true, fp16_type: cbfloat16, loss_scaling_factor: dynamic}
    loop: {max_steps: 6, eval_frequency: 3, eval_steps: 2}
    checkpoint: {steps: 3}
    logging: {log_steps: 2}
  fit:
    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
    val_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
)";

// Runs `csrun train PARAMS --fake_data -o MODEL_DIR` with its output in OUT and sends it SIGTERM
// once that output holds `logged`, as a scheduler's signal comes mid-run (`kill`: the shell's
// command that sends it, run with the process's id as $pid); the shell prints the exit status as
// "status=N".
csrun::test::ProcessResult terminate_once_logged(const std::string& params,
                                                 const fs::path& model_dir, const std::string& out,
                                                 const std::string& logged,
                                                 const std::string& kill = "kill -TERM $pid") {
  std::string script = std::string(CSRUN_BINARY) + " train '" + params + "' --fake_data -o '" +
                       model_dir.string() + "' >'" + out + "' 2>&1 & pid=$!\n" +
                       "for i in $(seq 1200); do grep -q '" + logged + "' '" + out +
                       "' && break; sleep 0.05; done\n" + kill + "; wait $pid; echo status=$?\n";
  return csrun::test::run_process({"/bin/sh", "-c", script});
}

// `train` of the project's config `config` on fake data into `model_dir` for `steps` steps.
std::vector<std::string> tiny_train(const std::string& config, const fs::path& model_dir,
                                    int steps) {
  return {"train",
          CSRUN_SOURCE_DIR "/configs/" + config + ".yaml",
          "--fake_data",
          "-o",
          model_dir.string(),
          "--max_steps",
          std::to_string(steps)};
}

}  // namespace

TEST_CASE(
    "train writes the Model Zoo's logs, checkpoints, events and performance, then eval reads "
    "them") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  auto train = run_csrun({"train", params, "--fake_data", "-o", model_dir.string()});
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(train.out.find("| Train Device=CSX, Step=2, Loss=") != std::string::npos);
  CHECK(train.out.find(" samples/sec, GlobalRate=") != std::string::npos);
  CHECK(train.out.find("| Eval Device=CSX, GlobalStep=3, Batch=2, Loss=") != std::string::npos);
  CHECK(train.out.find("Evaluation metrics:") != std::string::npos);
  CHECK(train.out.find("  - accuracy = ") != std::string::npos);
  CHECK(train.out.find("samples/sec on the wafer model") != std::string::npos);
  CHECK(train.out.find("Training completed successfully!") != std::string::npos);
  CHECK(fs::exists(model_dir / "checkpoint_3.mdl"));
  CHECK(fs::exists(model_dir / "checkpoint_6.mdl"));
  fs::path logs = model_dir / "cerebras_logs" / "latest";
  CHECK(read_file(logs / "run.log").find("Training completed successfully!") != std::string::npos);
  CHECK(read_file(logs / "trainer_params.yaml").find("max_steps: 6\n") != std::string::npos);
  auto performance = nlohmann::json::parse(read_file(logs / "performance.json"));
  CHECK(performance["total_samples"] == 48);
  CHECK(performance["simulated_samples_per_sec"].get<double>() > 0.0);
  REQUIRE(fs::is_directory(model_dir / "events"));
  std::string events = read_file(fs::directory_iterator(model_dir / "events")->path());
  for (const char* tag : {"loss", "lr/0", "local_samples_per_sec", "avg_samples_per_sec",
                          "loss_scale", "validate_0/accuracy"})
    CHECK(events.find(tag) != std::string::npos);

  // Rerunning resumes from the latest checkpoint: nothing is left to do at max_steps.
  auto again =
      run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--max_steps", "8"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("Found latest checkpoint at") != std::string::npos);
  CHECK(again.out.find("Step=8,") != std::string::npos);
  CHECK(again.out.find("Step=2,") == std::string::npos);

  auto all = run_csrun({"eval", params, "--fake_data", "-o", model_dir.string(), "--all"});
  INFO(all.err);
  CHECK(all.exit_code == 0);
  for (const char* checkpoint : {"checkpoint_3.mdl", "checkpoint_6.mdl", "checkpoint_8.mdl"})
    CHECK(all.out.find(checkpoint) != std::string::npos);
}

TEST_CASE(
    "a run's checkpoint_name is what a rerun resumes from and eval --all reads, and "
    "validate_all.ckpt_paths names the checkpoints --all evaluates") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  auto run = [&](std::vector<std::string> arguments) {
    arguments.insert(arguments.end(), {params, "--fake_data", "-o", model_dir.string(), "--set",
                                       "trainer.init.checkpoint.checkpoint_name=ck/{step}.mdl"});
    return run_csrun(arguments);
  };
  REQUIRE(run({"train"}).exit_code == 0);
  CHECK(fs::exists(model_dir / "ck" / "3.mdl"));
  auto again = run({"train", "--max_steps", "8"});
  INFO(again.out << again.err);
  CHECK(again.out.find("Found latest checkpoint at \"" + (model_dir / "ck" / "6.mdl").string()) !=
        std::string::npos);
  CHECK(again.out.find("Step=2,") == std::string::npos);

  auto all = run({"eval", "--all"});
  INFO(all.err);
  REQUIRE(all.exit_code == 0);
  std::vector<std::size_t> at;
  for (const char* checkpoint : {"ck/3.mdl", "ck/6.mdl", "ck/8.mdl"})
    at.push_back(all.out.find(checkpoint));
  CHECK(at[0] < at[1]);
  CHECK(at[1] < at[2]);
  CHECK(at[2] != std::string::npos);

  auto named = run({"eval", "--all", "--set",
                    "trainer.validate_all.ckpt_paths=['" + model_dir.string() + "/ck/[86].mdl']"});
  INFO(named.err);
  CHECK(named.exit_code == 0);
  CHECK(named.out.find("ck/3.mdl") == std::string::npos);
  CHECK(named.out.find("ck/6.mdl") < named.out.find("ck/8.mdl"));
  CHECK(named.out.find("ck/8.mdl") != std::string::npos);

  auto both = run({"eval", "--all", "--checkpoint_path", (model_dir / "ck" / "3.mdl").string()});
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("give one of the two") != std::string::npos);

  // Nothing of that name in an empty model_dir: --all says what it looked for, and eval says
  // that it evaluates the initial weights.
  model_dir = dir.path() / "empty";
  auto none = run({"eval", "--all"});
  CHECK(none.exit_code == 1);
  CHECK(none.err.find("no checkpoint named ck/(step)(_timestamp)?.mdl in") != std::string::npos);
  auto initial = run({"eval"});
  CHECK(initial.exit_code == 0);
  CHECK(initial.out.find("WARNING:     No checkpoint to evaluate: the metrics below are those of "
                         "the model's initial (random) weights") != std::string::npos);
}

// docs/training.md: eval_steps counts the configured (global) batches whatever num_csx is; each
// system's share of a batch runs in turn.
TEST_CASE("eval on two systems evaluates the samples and loss eval on one does") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  REQUIRE(run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--max_steps", "3"})
              .exit_code == 0);
  auto evaluate = [&](const std::string& systems) {
    fs::path ledger = dir.path() / ("ledger" + systems);
    auto eval = run_csrun({"eval", params, "--fake_data", "-o", model_dir.string(), "--num_csx",
                           systems, "--execution_mode", "weight_streaming", "--eval_steps", "3",
                           "--sample_ledger", ledger.string()});
    INFO(eval.out << eval.err);
    REQUIRE(eval.exit_code == 0);
    std::smatch average;
    REQUIRE(std::regex_search(eval.out, average, std::regex("Avg Eval Loss: [0-9.]+")));
    std::string samples = read_file(ledger);
    return std::pair{average.str(), std::count(samples.begin(), samples.end(), '\n')};
  };
  auto one = evaluate("1");
  CHECK(one.second == 3 * 8);
  CHECK(evaluate("2") == one);

  auto beyond = run_csrun(
      {"eval", params, "--fake_data", "-o", model_dir.string(), "--eval_steps", "100000"});
  CHECK(beyond.exit_code == 0);
  CHECK(beyond.out.find("WARNING:     eval_steps is 100000 and the eval data holds ") !=
        std::string::npos);
}

TEST_CASE(
    "a checkpoint missing some parameters loads only with disable_strict_checkpoint_loading, "
    "with a warning naming them, and another model's checkpoint does not load at all") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  REQUIRE(run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--max_steps", "3"})
              .exit_code == 0);
  std::string checkpoint = (model_dir / "checkpoint_3.mdl").string();
  auto deeper = [&](std::vector<std::string> extra) {
    std::vector<std::string> arguments = {"train",
                                          params,
                                          "--fake_data",
                                          "-o",
                                          (dir.path() / "deeper").string(),
                                          "--checkpoint_path",
                                          checkpoint,
                                          "--max_steps",
                                          "4",
                                          "--set",
                                          "trainer.init.model.hidden_sizes=[16, 16]"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return run_csrun(arguments);
  };
  // Each refusal says what to do next: load the model alone, then let the missing parameters
  // keep their initial values.
  auto whole = deeper({});
  CHECK(whole.exit_code == 1);
  CHECK(whole.err.find("the optimizer's state is numbered by parameter") != std::string::npos);
  const std::string model_alone =
      "trainer.init.callbacks=[{LoadCheckpointStates: {load_checkpoint_states: model}}]";
  auto strict = deeper({"--set", model_alone});
  CHECK(strict.exit_code == 1);
  CHECK(strict.err.find("has no entries for 2 of the model's 6 parameters: "
                        "'model.fc_layers.1.bias', 'model.fc_layers.1.weight' (set "
                        "disable_strict_checkpoint_loading to start them from their initial "
                        "values)") != std::string::npos);
  const std::string lenient_loading =
      "trainer.init.checkpoint.disable_strict_checkpoint_loading=true";
  auto lenient = deeper({"--set", model_alone, "--set", lenient_loading});
  INFO(lenient.out << lenient.err);
  CHECK(lenient.exit_code == 0);
  CHECK(lenient.out.find("WARNING:     2 of the model's 6 parameters are not in the checkpoint "
                         "and start from their initial values") != std::string::npos);

  fs::path gpt2 = dir.path() / "gpt2";
  REQUIRE(run_csrun({"train", CSRUN_SOURCE_DIR "/configs/gpt2_tiny.yaml", "--fake_data", "-o",
                     gpt2.string(), "--max_steps", "1"})
              .exit_code == 0);
  checkpoint = (gpt2 / "checkpoint_1.mdl").string();
  for (auto other : {deeper({}), deeper({"--set", model_alone, "--set", lenient_loading})}) {
    CHECK(other.exit_code == 1);
    CHECK(other.err.find("holds none of the model's 6 parameters") != std::string::npos);
    CHECK(other.err.find("it is another model's (its metadata names model 'gpt2')") !=
          std::string::npos);
  }
}

TEST_CASE("eval metrics count every token of the evaluation once, however it is batched") {
  csrun::test::TempDir dir;
  // Four sequences of 8 tokens that keep 8, 1, 5 and 2 of them: batches of 2 hold 9 and 7.
  const std::vector<int> kept = {8, 1, 5, 2};
  std::vector<std::int32_t> rows;
  for (std::size_t e = 0; e < kept.size(); ++e) {
    for (int field = 0; field < 3; ++field) {
      for (int t = 0; t < 8; ++t) {
        int token = static_cast<int>((e * 17 + static_cast<std::size_t>(t) * 5) % 64);
        rows.push_back(field == 1 ? (t < kept[e] ? 1 : 0) : token);
      }
    }
  }
  fs::create_directories(dir.path() / "text");
  csrun::data::Hdf5Writer writer((dir.path() / "text" / "part-0.h5").string());
  writer.write("data", {4, 3, 8}, rows);
  writer.set_attribute("n_examples", std::int64_t{4});
  writer.close();
  // Evaluations of the same initial weights in one batch of 4 and in two of 2.
  auto evaluate = [&](int batch_size) {
    std::string params = dir.write(
        "b" + std::to_string(batch_size) + ".yaml",
        "trainer:\n  init:\n    device: CPU\n    seed: 5\n    model: {name: gpt2, vocab_size: "
        "64, hidden_size: 16, num_hidden_layers: 1, num_heads: 2, filter_size: 32, "
        "max_position_embeddings: 8}\n    optimizer: {SGD: {lr: 0.1}}\n    loop: {max_steps: "
        "1}\n  validate:\n    ckpt_path: null\n    val_dataloader: {data_processor: "
        "GptHDF5DataProcessor, batch_size: " +
            std::to_string(batch_size) + ", data_dir: '" + (dir.path() / "text").string() + "'}\n");
    auto eval = run_csrun({"eval", params, "-o", (dir.path() / "model").string(), "--json"});
    INFO(eval.err);
    REQUIRE(eval.exit_code == 0);
    return nlohmann::json::parse(eval.out)["trainers"][0]["evaluations"][0]["metrics"];
  };
  nlohmann::json whole = evaluate(4);
  nlohmann::json halves = evaluate(2);
  // The Model Zoo's metrics: correct tokens over kept tokens, exp(summed loss over kept tokens).
  // A mean over the batches (of 9 and 7 tokens) would weigh each of the second batch's tokens more.
  CHECK(halves["eval/accuracy"].get<double>() == whole["eval/accuracy"].get<double>());
  double perplexity = whole["eval/lm_perplexity"].get<double>();
  CHECK(perplexity > 1.0);
  CHECK(halves["eval/lm_perplexity"].get<double>() == Approx(perplexity).epsilon(1e-5));
}

TEST_CASE("train --json and eval --json print one JSON document: steps, losses, evaluations") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  std::string model_dir = (dir.path() / "model").string();
  auto train = run_csrun({"train", params, "--fake_data", "-o", model_dir, "--json"});
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  // The log lines went to stderr.
  CHECK(train.err.find("Training completed successfully!") != std::string::npos);
  auto trained = nlohmann::json::parse(train.out);
  CHECK(trained["command"] == "train");
  CHECK(trained["ok"] == true);
  const nlohmann::json& fitted = trained["trainers"].at(0);
  CHECK(fitted["global_step"] == 6);
  CHECK(fitted["loss"].get<double>() > 0.0);
  REQUIRE(fitted["evaluations"].size() == 2);
  CHECK(fitted["evaluations"][1]["global_step"] == 6);
  CHECK(fitted["evaluations"][1]["metrics"].contains("accuracy"));

  auto eval = run_csrun({"eval", params, "--fake_data", "-o", model_dir, "--all", "--json"});
  INFO(eval.err);
  REQUIRE(eval.exit_code == 0);
  const nlohmann::json evaluations = nlohmann::json::parse(eval.out)["trainers"][0]["evaluations"];
  REQUIRE(evaluations.size() == 2);
  CHECK(evaluations[0]["checkpoint"] == model_dir + "/checkpoint_3.mdl");
  // The checkpoint of step 6 holds the weights fit evaluated at step 6.
  CHECK(evaluations[1]["loss"] == fitted["evaluations"][1]["loss"]);

  std::ofstream(dir.path() / "model" / "checkpoint_9.mdl") << "garbage";
  auto broken = run_csrun({"eval", params, "--fake_data", "-o", model_dir, "--json"});
  CHECK(broken.exit_code == 1);
  auto failed = nlohmann::json::parse(broken.out);
  CHECK(failed["ok"] == false);
  CHECK(failed["error"].get<std::string>().find("checkpoint_9.mdl is not an HDF5 file") !=
        std::string::npos);
}

TEST_CASE("a run on two systems simulates the cluster's step, SwarmX included, as compile does") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  std::string model_dir = (dir.path() / "model").string();
  std::vector<std::string> cluster = {
      "--fake_data", "-o", model_dir, "--num_csx", "2", "--execution_mode", "weight_streaming"};
  std::vector<std::string> compile = {"compile", params, "--json"};
  compile.insert(compile.end(), cluster.begin(), cluster.end());
  auto compiled = run_csrun(compile);
  REQUIRE(compiled.exit_code == 0);
  double rate = nlohmann::json::parse(
      compiled.out)["compiled"][0]["mapping"]["estimate"]["cluster_samples_per_second"];
  std::vector<std::string> train = {"train", params, "--max_steps", "3"};
  train.insert(train.end(), cluster.begin(), cluster.end());
  auto trained = run_csrun(train);
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  auto performance = nlohmann::json::parse(
      read_file(fs::path(model_dir) / "cerebras_logs" / "latest" / "performance.json"));
  CHECK(performance["simulated_samples_per_sec"].get<double>() == Approx(rate).epsilon(1e-9));
}

TEST_CASE("the GPU device is a clear error in a build without CUDA") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  auto train = run_csrun({"train", params, "--fake_data", "--target_device", "GPU", "-o",
                          (dir.path() / "model").string()});
  CHECK(train.exit_code == 1);
  CHECK(train.err.find("device GPU needs a csrun built with CUDA") != std::string::npos);
  auto compile = run_csrun({"compile", params, "--fake_data", "--target_device", "GPU", "-o",
                            (dir.path() / "model").string()});
  CHECK(compile.exit_code == 0);
  CHECK(compile.out.find("a GPU run needs a csrun built with CUDA, which this one is not") !=
        std::string::npos);
}

TEST_CASE("a damaged checkpoint stops eval with the file named") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  fs::create_directories(model_dir);
  std::ofstream(model_dir / "checkpoint_5.mdl") << "garbage";
  auto eval = run_csrun({"eval", params, "--fake_data", "-o", model_dir.string()});
  CHECK(eval.exit_code == 1);
  CHECK(eval.err.find("checkpoint_5.mdl is not an HDF5 file") != std::string::npos);
}

TEST_CASE(
    "eval runs the eval step alone: a training batch this host cannot hold does not stop it") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  auto with_huge_batch = [&](const std::string& command) {
    return run_csrun({command, params, "--fake_data", "-o", (dir.path() / "model").string(),
                      "--set", "trainer.fit.train_dataloader.batch_size=200000000"});
  };
  auto train = with_huge_batch("train");
  CHECK(train.exit_code == 1);
  CHECK(train.err.find("of host memory") != std::string::npos);
  auto eval = with_huge_batch("eval");
  INFO(eval.err);
  CHECK(eval.exit_code == 0);
  CHECK(eval.out.find("| Eval Device=CSX, GlobalStep=0, Batch=2, Loss=") != std::string::npos);
  CHECK(eval.out.find("Evaluation completed successfully!") != std::string::npos);
}

TEST_CASE("on a terminal train shows a live progress line, in a pipe only plain lines") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  std::string command = std::string(CSRUN_BINARY) + " train '" + params + "' --fake_data -o '" +
                        (dir.path() / "tty").string() + "'";
  // script(1) runs the command on a pseudo-terminal, as an interactive shell would.
  auto tty = csrun::test::run_process({"/usr/bin/script", "-q", "-e", "-c", command, "/dev/null"});
  INFO(tty.out << tty.err);
  REQUIRE(tty.exit_code == 0);
  CHECK(tty.out.find("\rTrain [") != std::string::npos);
  CHECK(tty.out.find(" samples/s") != std::string::npos);
  CHECK(tty.out.find("\rEval  [") != std::string::npos);
  CHECK(tty.out.find("Training completed successfully!") != std::string::npos);

  auto piped = run_csrun({"train", params, "--fake_data", "-o", (dir.path() / "pipe").string()});
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.out.find('\r') == std::string::npos);
  CHECK(piped.out.find("\033[") == std::string::npos);
}

namespace {

// A run that evaluates after every step: 40 eval batches of 256 samples through two 4096-wide
// layers, seconds, where a batch takes a tenth of one.
std::string long_eval_params() {
  std::string long_eval = kRun;
  long_eval.replace(long_eval.find("hidden_sizes: [16]"), 18, "hidden_sizes: [4096, 4096]");
  long_eval.replace(long_eval.find("max_steps: 6, eval_frequency: 3, eval_steps: 2"), 46,
                    "max_steps: 100000000, eval_frequency: 1, eval_steps: 40");
  long_eval.replace(long_eval.find("log_steps: 2"), 12, "log_steps: 1");
  long_eval.replace(long_eval.rfind("batch_size: 8"), 13, "batch_size: 256");
  return long_eval;
}

}  // namespace

TEST_CASE("SIGTERM during an evaluation stops it at its next batch and checkpoints the step") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", long_eval_params());
  fs::path model_dir = dir.path() / "model";
  std::string out = (dir.path() / "out").string();
  auto stopped = terminate_once_logged(params, model_dir, out, "| Eval Device=");
  std::string log = read_file(out);
  INFO(stopped.out << stopped.err << log);
  REQUIRE(stopped.out.find("status=143") != std::string::npos);
  CHECK(log.find("Evaluation at step 1 stopped on request after ") != std::string::npos);
  CHECK(log.find("Evaluation completed successfully!") == std::string::npos);
  CHECK(log.find("Stopped at step 1 on request (SIGTERM or SIGINT), its checkpoint written") !=
        std::string::npos);
  CHECK(fs::exists(model_dir / "checkpoint_1.mdl"));
}

TEST_CASE("SIGTERM checkpoints the step in progress and exits 143, rerunning resumes from it") {
  csrun::test::TempDir dir;
  std::string long_run = kRun;
  long_run.replace(long_run.find("max_steps: 6"), 12, "max_steps: 100000000");
  long_run.replace(long_run.find("log_steps: 2"), 12, "log_steps: 1");
  long_run.replace(long_run.find("steps: 3}"), 9, "steps: 100000000}");
  std::string params = dir.write("p.yaml", long_run);
  fs::path model_dir = dir.path() / "model";
  std::string out = (dir.path() / "out").string();
  auto stopped = terminate_once_logged(params, model_dir, out, "| Train Device=");
  std::string log = read_file(out);
  INFO(stopped.out << stopped.err << log);
  REQUIRE(stopped.out.find("status=143") != std::string::npos);
  CHECK(log.find("on request (SIGTERM or SIGINT), its checkpoint written") != std::string::npos);
  CHECK(log.find("Training completed successfully!") == std::string::npos);
  std::vector<fs::path> checkpoints;
  for (const auto& entry : fs::directory_iterator(model_dir))
    if (entry.path().extension() == ".mdl") checkpoints.push_back(entry.path());
  REQUIRE(checkpoints.size() == 1);
  std::string name = checkpoints[0].stem().string();  // checkpoint_<step>
  std::int64_t step = std::stoll(name.substr(name.find('_') + 1));

  auto resumed = run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--max_steps",
                            std::to_string(step + 2)});
  INFO(resumed.out << resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.out.find("Found latest checkpoint at \"" + checkpoints[0].string()) !=
        std::string::npos);
  CHECK(resumed.out.find("Step=" + std::to_string(step + 2) + ",") != std::string::npos);
  CHECK(resumed.out.find("Step=" + std::to_string(step) + ",") == std::string::npos);
  std::smatch read;
  REQUIRE(std::regex_search(resumed.out, read,
                            std::regex(R"(Read (\d+) variables from it in \d+\.\d\d s\.)")));
  // fc_mnist's 4 weights and their momentum buffers, the loss scaler's 2 values, the global step
  // and the schedulers' step.
  CHECK(read[1] == "12");
}

TEST_CASE("SIGTERM twice at once, as GNU timeout sends it, is one request: the step is kept") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", long_eval_params());
  fs::path model_dir = dir.path() / "model";
  std::string out = (dir.path() / "out").string();
  // The second signal comes while an eval batch still runs (the first stops it after the batch).
  auto stopped = terminate_once_logged(
      params, model_dir, out, "| Eval Device=", "kill -TERM $pid; sleep 0.02; kill -TERM $pid");
  std::string log = read_file(out);
  INFO(stopped.out << stopped.err << log);
  REQUIRE(stopped.out.find("status=143") != std::string::npos);
  CHECK(log.find("Stopped at step 1 on request (SIGTERM or SIGINT), its checkpoint written") !=
        std::string::npos);
  CHECK(fs::exists(model_dir / "checkpoint_1.mdl"));
}

TEST_CASE("the eval step beside training is planned once, in the compile cache, and reused") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  REQUIRE(run_csrun({"train", params, "--fake_data", "-o", model_dir.string()}).exit_code == 0);
  // The training step (mapped onto the wafer) and the eval step (host only).
  std::map<fs::path, fs::file_time_type> plans;
  for (const fs::directory_entry& entry : fs::directory_iterator(model_dir / "compile"))
    plans[entry.path()] = fs::last_write_time(entry.path() / "plan.bin");
  CHECK(plans.size() == 2);
  auto resumed =
      run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--max_steps", "9"});
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);
  std::size_t entries = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(model_dir / "compile")) {
    ++entries;
    CHECK(fs::last_write_time(entry.path() / "plan.bin") == plans[entry.path()]);
  }
  CHECK(entries == 2);
}

TEST_CASE("fit evaluates with its own val_dataloader, not the validate section's") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun + R"(  validate:
    val_dataloader: {data_processor: MNISTDataProcessor, batch_size: 4}
)");
  auto with_own = run_csrun({"train", params, "--fake_data", "-o", (dir.path() / "a").string()});
  INFO(with_own.out << with_own.err);
  REQUIRE(with_own.exit_code == 0);
  CHECK(with_own.out.find("| Eval Device=CSX, GlobalStep=3, Batch=2") != std::string::npos);
  auto without = run_csrun({"train", params, "--fake_data", "-o", (dir.path() / "b").string(),
                            "--set", "trainer.fit.val_dataloader=null"});
  INFO(without.out << without.err);
  REQUIRE(without.exit_code == 0);
  CHECK(without.out.find("Training completed successfully!") != std::string::npos);
  CHECK(without.out.find("Eval Device") == std::string::npos);
  auto validate = run_csrun({"eval", params, "--fake_data", "-o", (dir.path() / "a").string()});
  INFO(validate.out << validate.err);
  REQUIRE(validate.exit_code == 0);
  CHECK(validate.out.find("Evaluation completed successfully!") != std::string::npos);
}

TEST_CASE("the run's log is written at the logging level, stamped as the Model Zoo's") {
  csrun::test::TempDir dir;
  std::string params = dir.write("p.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  auto quiet =
      run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--logging", "warning"});
  INFO(quiet.out << quiet.err);
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.out.find("INFO:") == std::string::npos);
  CHECK(read_file(model_dir / "cerebras_logs" / "latest" / "run.log").empty());
  auto full =
      run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--max_steps", "9"});
  REQUIRE(full.exit_code == 0);
  std::string log = read_file(model_dir / "cerebras_logs" / "latest" / "run.log");
  std::smatch line;
  REQUIRE(std::regex_search(log, line,
                            std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO:     \S)")));
  CHECK(line.position(0) == 0);
}

// docs/training.md: batch_size is the global batch of one optimizer step, whatever num_csx and
// micro_batch_size split it into; each replica reads its share of it from its own workers.
TEST_CASE("3 steps of batch 32 consume 96 samples for every num_csx and micro-batch, each once") {
  csrun::test::TempDir dir;
  std::string text =
      std::regex_replace(kRun, std::regex("batch_size: 8\\}\n    val"), "batch_size: 32}\n    val");
  text = std::regex_replace(text, std::regex("max_steps: 6, eval_frequency: 3, eval_steps: 2"),
                            "max_steps: 3");
  std::string params = dir.write("params.yaml", text);
  for (const char* num_csx : {"1", "2"}) {
    for (const char* micro_batch : {"", "8"}) {
      for (const char* workers : {"0", "2"}) {
        std::string name = std::string(num_csx) + "_" + micro_batch + "_" + workers;
        INFO(name);
        fs::path ledger = dir.path() / (name + ".tsv");
        std::vector<std::string> arguments = {
            "train",        params,  "--fake_data",           "-o",    (dir.path() / name).string(),
            "--num_csx",    num_csx, "--num_workers_per_csx", workers, "--sample_ledger",
            ledger.string()};
        if (*micro_batch) {
          arguments.push_back("--set");
          arguments.push_back(std::string("trainer.fit.train_dataloader.micro_batch_size=") +
                              micro_batch);
        }
        auto run = run_csrun(arguments);
        INFO(run.out << run.err);
        REQUIRE(run.exit_code == 0);
        std::ifstream lines(ledger);
        std::map<std::int64_t, int> uses;
        std::set<std::int64_t> positions;
        std::string role, producer;
        std::int64_t epoch = 0, position = 0, index = 0;
        std::int64_t samples = 0;
        while (lines >> role >> epoch >> position >> index >> producer) {
          std::int64_t worker = -1;
          if (producer == "worker") lines >> worker;
          if (role != "train") continue;
          ++samples;
          ++uses[index];
          positions.insert(position);
          if (worker < 0) continue;
          // Each replica streams its share from its own 2 workers: replica r's are 2r and 2r+1.
          std::int64_t replica = num_csx == std::string("2") ? position % 32 / 16 : 0;
          CHECK(worker / 2 == replica);
        }
        CHECK(samples == 96);
        CHECK(uses.size() == 96);
        CHECK(positions.size() == 96);
      }
    }
  }
}

// docs/running.md: --async_checkpoint writes the same checkpoints, in the background.
TEST_CASE("checkpoints written with --async_checkpoint are those of a synchronous run") {
  csrun::test::TempDir dir;
  std::string params = dir.write("params.yaml", kRun);
  for (const char* mode : {"sync", "async"}) {
    std::vector<std::string> arguments = {"train",
                                          params,
                                          "--fake_data",
                                          "-o",
                                          (dir.path() / mode).string(),
                                          "--set",
                                          "trainer.init.checkpoint.steps=1"};
    if (std::string(mode) == "async") arguments.push_back("--async_checkpoint");
    auto run = run_csrun(arguments);
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    CHECK((run.out + run.err)
              .find("Saved checkpoint " + (dir.path() / mode / "checkpoint_6.mdl").string()) !=
          std::string::npos);
  }
  for (int step = 1; step <= 6; ++step) {
    std::string name = "checkpoint_" + std::to_string(step) + ".mdl";
    INFO(name);
    csrun::test::expect_same_weights(dir.path() / "sync" / name, dir.path() / "async" / name);
  }
}

namespace {

// The (program, kernel, name) of each line of a run's host_profile.tsv, and the lines' count per
// program and runs.
struct HostProfileLines {
  std::set<std::string> kernels;                         // "kernel\tname"
  std::map<std::string, int> lines_by_program_and_runs;  // "train 5" -> lines
};

HostProfileLines host_profile_lines(const fs::path& model_dir) {
  HostProfileLines result;
  std::istringstream lines(read_file(model_dir / "cerebras_logs" / "latest" / "host_profile.tsv"));
  std::string line;
  std::getline(lines, line);
  CHECK(line.starts_with("program\tkernel\tname\tcall\t"));
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, '\t');)
      cells.push_back(cell);
    REQUIRE(cells.size() == 12);
    result.kernels.insert(cells[1] + "\t" + cells[2]);
    ++result.lines_by_program_and_runs[cells[0] + " " + cells[7]];
  }
  return result;
}

// "kernel\tname" of every kernel of the plans compiled into `model_dir` (their kernels.tsv).
std::set<std::string> planned_kernels(const fs::path& model_dir) {
  std::set<std::string> kernels;
  for (const auto& entry : fs::recursive_directory_iterator(model_dir)) {
    if (entry.path().filename() != "kernels.tsv") continue;
    std::istringstream lines(read_file(entry.path()));
    std::string line;
    std::getline(lines, line);
    while (std::getline(lines, line))
      kernels.insert(line.substr(0, line.find('\t', line.find('\t') + 1)));
  }
  return kernels;
}

}  // namespace

// docs/running.md: --profile times the simulator's host steps and names them as kernels.tsv does.
TEST_CASE("train and eval --profile write each host step's seconds, named as in kernels.tsv") {
  csrun::test::TempDir dir;
  std::string params = dir.write("params.yaml", kRun);
  fs::path model_dir = dir.path() / "model";
  auto train = run_csrun({"train", params, "--fake_data", "-o", model_dir.string(), "--profile"});
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  // 6 steps and two evaluations of 2 batches, each program's first run left out.
  CHECK(train.out.find("Host profile of the train step (5 runs timed): ") != std::string::npos);
  CHECK(train.out.find("Host profile of the eval step (3 runs timed): ") != std::string::npos);
  CHECK(train.out.find("The longest host steps of the train step:\n") != std::string::npos);
  // Its chains in registers, compiled to the code `csrun --version` names, or interpreted.
  auto version = run_csrun({"--version"});
  std::smatch code;
  bool compiles =
      std::regex_search(version.out, code, std::regex("\nchains: compiled to (\\S+) code"));
  std::regex chains(
      compiles ? R"(Chains in registers: \d+, [1-9]\d* of them compiled to )" + code[1].str() +
                     " code\\."
               : std::string(R"(Chains in registers: \d+, 0 of them compiled \(interpreted\)\.)"));
  CHECK(std::regex_search(train.out, chains));
  std::set<std::string> planned = planned_kernels(model_dir);
  HostProfileLines profiled = host_profile_lines(model_dir);
  CHECK(profiled.lines_by_program_and_runs.size() == 2);
  CHECK(profiled.lines_by_program_and_runs["train 5"] > 10);
  CHECK(profiled.lines_by_program_and_runs["eval 3"] > 3);
  for (const std::string& kernel : profiled.kernels) {
    INFO(kernel);
    CHECK(planned.count(kernel) == 1);
  }

  auto eval = run_csrun({"eval", params, "--fake_data", "-o", model_dir.string(), "--profile"});
  INFO(eval.out << eval.err);
  REQUIRE(eval.exit_code == 0);
  CHECK(eval.out.find("Host profile of the eval step (1 run timed): ") != std::string::npos);
  CHECK(host_profile_lines(model_dir).lines_by_program_and_runs ==
        std::map<std::string, int>{{"eval 1", profiled.lines_by_program_and_runs["eval 3"]}});
}

namespace {

// fc_mnist with 20M weights (80 MB) on fake MNIST digits, batches of 8, with `loop` and any
// further `init` lines.
std::string wide_fc_mnist(const std::string& loop, const std::string& more_init = "") {
  return R"(trainer:
  init:
    device: CPU
    model: {name: fc_mnist, hidden_sizes: [4096, 4096]}
    optimizer: {Adam: {lr: 0.001}}
    loop: )" +
         loop + "\n" + more_init +
         R"(  fit:
    train_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
    val_dataloader: {data_processor: MNISTDataProcessor, batch_size: 8}
)";
}

}  // namespace

// docs/running.md: a checkpoint is read into the run's own variables, and an evaluation reads
// its model's entries only, so neither holds a copy of the checkpoint beside its memory plan.
TEST_CASE("a resumed run and an evaluation hold no copy of the checkpoint they read") {
  csrun::test::TempDir dir;
  // A checkpoint of 240 MB with Adam's moments, far above the noise of a peak RSS.
  std::string params = dir.write("params.yaml", wide_fc_mnist("{max_steps: 1}"));
  std::string model_dir = (dir.path() / "model").string();
  auto csrun = [&](std::vector<std::string> arguments) {
    arguments.insert(arguments.end(), {params, "--fake_data", "-o", model_dir});
    auto run = run_csrun(arguments);
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    return run.peak_rss_kib * 1024;
  };
  std::int64_t fresh = csrun({"train"});
  auto checkpoint_bytes = static_cast<std::int64_t>(fs::file_size(model_dir + "/checkpoint_1.mdl"));
  REQUIRE(checkpoint_bytes > 200'000'000);
  std::int64_t resumed = csrun({"train", "--max_steps", "2"});
  std::int64_t evaluated = csrun({"eval", "--eval_steps", "1"});
  INFO("peak RSS: fresh " << fresh << ", resumed " << resumed << ", evaluated " << evaluated
                          << "; checkpoint " << checkpoint_bytes << " bytes");
  CHECK(resumed < fresh + checkpoint_bytes / 4);
  // The weights, a third of the checkpoint: not the optimizer's moments nor the gradients.
  CHECK(evaluated < fresh - checkpoint_bytes / 3);
}

// docs/running.md: the eval step beside training reads the weights where the training step keeps
// them, so evaluating inside fit holds no copy of them and evaluates the weights just trained.
TEST_CASE("evaluating inside training holds no copy of the weights and reads the trained ones") {
  csrun::test::TempDir dir;
  // 80 MB of weights, far above the noise of a peak RSS.
  std::string params = dir.write("params.yaml", wide_fc_mnist("{max_steps: 2, eval_steps: 1}",
                                                              "    checkpoint: {steps: 2}\n"));
  auto csrun = [&](const std::string& model, std::vector<std::string> arguments) {
    arguments.insert(arguments.end(), {params, "--fake_data", "-o", (dir.path() / model).string()});
    auto run = run_csrun(arguments);
    INFO(run.out << run.err);
    REQUIRE(run.exit_code == 0);
    return run;
  };
  auto trained = csrun("plain", {"train", "--set", "trainer.fit.val_dataloader=null"});
  auto evaluating = csrun("evaluating", {"train", "--set", "trainer.init.loop.eval_frequency=1"});
  std::int64_t weights_bytes = 4 * (784 * 4096 + 4096 * 4096 + 4096 * 10);
  INFO("peak RSS: without evaluation " << trained.peak_rss_kib << " KiB, evaluating "
                                       << evaluating.peak_rss_kib << " KiB");
  CHECK(evaluating.peak_rss_kib * 1024 < trained.peak_rss_kib * 1024 + weights_bytes / 2);

  // The evaluation after the last step, of the weights checkpointed there: what csrun eval gives
  // for that checkpoint (--checkpoint_path from another model_dir, the params without a validate
  // section: the flag once went nowhere and the random initial weights were evaluated).
  auto average = [](const std::string& log) {
    std::size_t at = log.rfind("Avg Eval Loss: ");
    REQUIRE(at != std::string::npos);
    return log.substr(at, log.find('\n', at) - at);
  };
  std::string checkpoint = (dir.path() / "evaluating" / "checkpoint_2.mdl").string();
  auto evaluated = csrun("evaluated", {"eval", "--checkpoint_path", checkpoint});
  CHECK(average(evaluating.out + evaluating.err) == average(evaluated.out + evaluated.err));
}

// A run's bits depend on its config and seed, not on the cores it runs on: products split into
// row blocks by their shape alone (docs/numerics.md), so one core and all of them agree, and so
// do MPI ranks bound to one core each.
TEST_CASE("training on one core and on every core gives the same checkpoint bit for bit") {
  csrun::test::TempDir dir;
  for (const char* config : {"llama_tiny", "gpt2_tiny"}) {
    INFO(config);
    std::vector<fs::path> checkpoints;
    for (bool one_core : {true, false}) {
      fs::path model_dir = dir.path() / (std::string(config) + (one_core ? "_one" : "_all"));
      std::vector<std::string> command = tiny_train(config, model_dir, 4);
      command.insert(command.begin(), CSRUN_BINARY);
      command.insert(command.end(), {"--set", "trainer.init.checkpoint.steps=4"});
      if (one_core) command.insert(command.begin(), {"/usr/bin/taskset", "-c", "0"});
      auto run = csrun::test::run_process(command);
      INFO(run.out << run.err);
      REQUIRE(run.exit_code == 0);
      checkpoints.push_back(model_dir / "checkpoint_4.mdl");
    }
    CHECK(read_file(checkpoints[0]) == read_file(checkpoints[1]));
  }
}

namespace {

// A small text corpus where the encoder-decoder configs look for theirs (data/text/seq2seq):
// T5's documents and the Transformer's sentence pairs (each sentence into its words reversed),
// words w0..w29, the same for training and validation.
void write_seq2seq_text(const csrun::test::TempDir& dir) {
  std::string vocab = "<pad>\n<unk>\n<s>\n</s>\n";
  for (int w = 0; w < 30; ++w)
    vocab += "w" + std::to_string(w) + "\n";
  dir.write("data/text/seq2seq/vocab.txt", vocab);
  std::string documents, sources, targets;
  for (int line = 0; line < 64; ++line) {
    std::vector<std::string> words;
    for (int i = 0; i < 6 + line % 7; ++i)
      words.push_back("w" + std::to_string((line * 7 + i * (1 + line % 3)) % 30));
    for (const std::string& word : words) {
      documents += word + " ";
      sources += word + " ";
    }
    documents += words.front() + " " + words.back() + "\n";
    sources += "\n";
    for (auto word = words.rbegin(); word != words.rend(); ++word)
      targets += *word + " ";
    targets += "\n";
  }
  for (const char* split : {"train", "val"}) {
    std::string t5 = std::string("data/text/seq2seq/t5/") + split + "/";
    dir.write(t5 + "part-0.txt", documents);
    dir.write(t5 + "meta.dat", "part-0.txt 64\n");
    std::string pairs = std::string("data/text/seq2seq/transformer/") + split + "/";
    dir.write(pairs + "source.txt", sources);
    dir.write(pairs + "target.txt", targets);
    dir.write(pairs + "meta.dat", "source.txt target.txt 64\n");
  }
}

// The logged losses of `steps` steps of a tiny encoder-decoder config trained on that corpus in
// `dir` (extra flags appended): the vocabulary's size set, dropout off.
std::vector<double> seq2seq_losses(const std::string& config, const fs::path& dir,
                                   const std::string& model_dir, int steps,
                                   std::vector<std::string> flags) {
  std::vector<std::string> arguments = {
      "train",       CSRUN_SOURCE_DIR "/configs/" + config + ".yaml",
      "-o",          (dir / model_dir).string(),
      "--max_steps", std::to_string(steps),
      "--set",       "trainer.init.model.src_vocab_size=34",
      "--set",       "trainer.init.model.dropout_rate=0.0",
      "--set",       "trainer.init.logging.log_steps=1"};
  if (config == "transformer_tiny")
    arguments.insert(arguments.end(), {"--set", "trainer.init.model.tgt_vocab_size=34"});
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  auto run = run_csrun(arguments, dir.string());
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  auto events = csrun::test::read_scalar_events(
      fs::directory_iterator(dir / model_dir / "events")->path().string());
  return csrun::test::scalar_values(events, "loss");
}

}  // namespace

// docs/models.md: configs/t5_tiny.yaml and configs/transformer_tiny.yaml train on their text
// layouts on CPU and CSX; and their losses, normalized over the whole batch's target tokens,
// follow the same curve when the batch is split across replicas and micro-batches.
TEST_CASE("train --recompute_layers says so and writes the checkpoint of a run without it") {
  csrun::test::TempDir dir;
  // GPT-2 with dropout, and T5 (an encoder's output read by every decoder layer), both split in
  // two micro-steps the second time.
  for (const char* config : {"gpt2_tiny", "t5_tiny"}) {
    for (bool split : {false, true}) {
      INFO(config << (split ? ", num_csx 2" : ""));
      std::vector<fs::path> checkpoints;
      for (bool recompute : {false, true}) {
        fs::path model_dir = dir.path() / (std::string(config) + (split ? "_split" : "") +
                                           (recompute ? "_recomputed" : "_kept"));
        std::vector<std::string> command = tiny_train(config, model_dir, 2);
        command.insert(command.end(), {"--num_csx", split ? "2" : "1"});
        if (recompute) command.push_back("--recompute_layers");
        auto run = run_csrun(command);
        INFO(run.out << run.err);
        REQUIRE(run.exit_code == 0);
        bool said = run.err.find(
                        "each layer's forward pass run again for its backward pass "
                        "(--recompute_layers)") != std::string::npos;
        CHECK(said == recompute);
        fs::path checkpoint = model_dir / "checkpoint_2.mdl";
        REQUIRE(fs::exists(checkpoint));
        checkpoints.push_back(checkpoint);
      }
      CHECK(read_file(checkpoints[0]) == read_file(checkpoints[1]));
    }
  }
}

TEST_CASE("the T5 and Transformer tiny configs train on their text, and a split batch agrees") {
  csrun::test::TempDir dir;
  write_seq2seq_text(dir);
  for (const std::string config : {"t5_tiny", "transformer_tiny"}) {
    INFO(config);
    for (const char* device : {"CPU", "CSX"}) {
      INFO(device);
      std::vector<double> losses =
          seq2seq_losses(config, dir.path(), config + device, 30, {"--target_device", device});
      REQUIRE(losses.size() == 30);
      CHECK(losses.back() < 0.8 * losses.front());
    }
    std::vector<double> whole =
        seq2seq_losses(config, dir.path(), config + "whole", 5, {"--target_device", "CPU"});
    std::vector<double> split = seq2seq_losses(config, dir.path(), config + "split", 5,
                                               {"--target_device", "CPU", "--num_csx", "2", "--set",
                                                "trainer.fit.train_dataloader.micro_batch_size=4"});
    REQUIRE(split.size() == whole.size());
    for (std::size_t s = 0; s < whole.size(); ++s)
      CHECK(std::fabs(split[s] - whole[s]) <= 1e-5 * std::fabs(whole[s]));
  }
}
