// docs/models.md: configs/unet_tiny.yaml trains on the generated shapes set
// (scripts/prepare_shapes.sh, written here by csrun-shapes-hdf5) on CPU and CSX, reaches the Dice
// coefficient the docs record, and its loss follows the same curve when the batch is split
// across replicas and micro-batches. Each case fits a sanitizer build's time limit.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <regex>

#include "runner/checkpoint.hpp"
#include "support/event_reader.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using csrun::test::run_csrun;
namespace fs = std::filesystem;

namespace {

void write_shapes(const fs::path& dir) {
  for (auto [split, examples, seed] :
       {std::tuple{"train_input", "256", "1"}, std::tuple{"eval_input", "64", "2"}}) {
    fs::create_directories(dir / "data" / "shapes" / split);
    auto written = csrun::test::run_process(
        {CSRUN_SHAPES_WRITER, (dir / "data" / "shapes" / split / "shapes-0_p0.h5").string(),
         examples, "32", seed});
    INFO(written.err);
    REQUIRE(written.exit_code == 0);
  }
}

std::vector<std::string> unet_run(const char* mode, const fs::path& dir,
                                  const std::string& model_dir, std::vector<std::string> flags) {
  std::vector<std::string> arguments = {mode, CSRUN_SOURCE_DIR "/configs/unet_tiny.yaml", "-o",
                                        (dir / model_dir).string()};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  return arguments;
}

std::vector<double> unet_losses(const fs::path& dir, const std::string& model_dir, int steps,
                                std::vector<std::string> flags) {
  flags.insert(flags.end(),
               {"--max_steps", std::to_string(steps), "--set", "runconfig.log_steps=1"});
  std::vector<std::string> command = unet_run("train", dir, model_dir, flags);
  command.insert(command.begin(), CSRUN_BINARY);
  // A sanitizer build trains a hundred steps in minutes.
  auto run = csrun::test::run_process(command, dir.string(), 280);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  auto events = csrun::test::read_scalar_events(
      fs::directory_iterator(dir / model_dir / "events")->path().string());
  return csrun::test::scalar_values(events, "loss");
}

double eval_metric(const std::string& out, const std::string& name) {
  std::smatch found;
  REQUIRE(std::regex_search(out, found, std::regex("- " + name + " = ([0-9.]+)")));
  return std::stod(found[1]);
}

}  // namespace

TEST_CASE("the UNet tiny config trains on CPU and CSX, and a split batch agrees") {
  csrun::test::TempDir dir;
  write_shapes(dir.path());
  for (const char* device : {"CPU", "CSX"}) {
    INFO(device);
    std::vector<double> losses =
        unet_losses(dir.path(), std::string("unet") + device, 15, {"--target_device", device});
    REQUIRE(losses.size() == 15);
    CHECK(losses.back() < 0.75 * losses.front());
  }
  std::vector<double> whole = unet_losses(dir.path(), "whole", 5, {"--target_device", "CPU"});
  std::vector<double> split = unet_losses(
      dir.path(), "split", 5,
      {"--target_device", "CPU", "--num_csx", "2", "--set", "train_input.micro_batch_size=4"});
  REQUIRE(split.size() == whole.size());
  for (std::size_t s = 0; s < whole.size(); ++s)
    CHECK(std::fabs(split[s] - whole[s]) <= 1e-5 * std::fabs(whole[s]));
}

// docs/models.md: 120 steps, then the whole evaluation set.
TEST_CASE("the UNet tiny config segments the shapes set as docs/models.md records") {
  csrun::test::TempDir dir;
  write_shapes(dir.path());
  unet_losses(dir.path(), "unet", 120, {"--target_device", "CPU"});
  auto eval = run_csrun(unet_run("eval", dir.path(), "unet", {"--target_device", "CPU"}),
                        dir.path().string());
  INFO(eval.out << eval.err);
  REQUIRE(eval.exit_code == 0);
  CHECK(eval_metric(eval.out, "eval/dice_coefficient") >= 0.9);
  CHECK(eval_metric(eval.out, "eval/mean_iou") >= 0.8);
  CHECK(eval_metric(eval.out, "eval/accuracy") >= 0.95);
}

// docs/models.md: batch norm's running statistics move once per optimizer step toward the whole
// global batch's moments, however the batch is split: the first norm's, whose input no other
// norm shapes, are the same after a step (deeper ones see activations each micro-batch's own
// normalization made); an evaluation normalizes with them.
TEST_CASE("batch norm's running statistics follow the global batch, however it is split") {
  csrun::test::TempDir dir;
  write_shapes(dir.path());
  std::vector<std::string> batch_norm = {"--target_device", "CPU",
                                         "--set",           "model.norm_layer=batchnorm2d",
                                         "--set",           "runconfig.checkpoint_steps=1"};
  unet_losses(dir.path(), "whole", 1, batch_norm);
  std::vector<std::string> split = batch_norm;
  split.insert(split.end(), {"--num_csx", "2", "--set", "train_input.micro_batch_size=4"});
  unet_losses(dir.path(), "split", 1, split);
  auto whole = csrun::runner::load_checkpoint((dir.path() / "whole" / "checkpoint_1.mdl").string());
  auto parts = csrun::runner::load_checkpoint((dir.path() / "split" / "checkpoint_1.mdl").string());
  for (const char* statistic : {"running_mean", "running_var"}) {
    std::string name = std::string("model.encoder.unet_blocks.0.layers.0.1.") + statistic;
    INFO(name);
    const csrun::runner::CheckpointTensor& expected = whole.tensors.at(name);
    const csrun::runner::CheckpointTensor& actual = parts.tensors.at(name);
    REQUIRE(actual.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(actual.value(i) == Approx(expected.value(i)).epsilon(1e-5).margin(1e-7));
      // Moved from the initial 0 and 1.
      CHECK(expected.value(i) != (std::string(statistic) == "running_mean" ? 0.0 : 1.0));
    }
  }
  auto eval = run_csrun(unet_run("eval", dir.path(), "whole", batch_norm), dir.path().string());
  INFO(eval.out << eval.err);
  CHECK(eval.exit_code == 0);
}
