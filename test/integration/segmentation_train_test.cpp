// docs/models.md: configs/unet_tiny.yaml segments the generated shapes set
// (scripts/prepare_shapes.sh, written here by csrun-shapes-hdf5) on CPU and CSX, reaches the Dice
// coefficient the docs record, and its loss follows the same curve when the batch is split
// across replicas and micro-batches.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <regex>

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
  auto run = run_csrun(unet_run("train", dir, model_dir, flags), dir.string());
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

TEST_CASE("the UNet tiny config segments the shapes set, and a split batch agrees") {
  csrun::test::TempDir dir;
  write_shapes(dir.path());
  for (const char* device : {"CPU", "CSX"}) {
    INFO(device);
    std::vector<double> losses =
        unet_losses(dir.path(), std::string("unet") + device, 40, {"--target_device", device});
    REQUIRE(losses.size() == 40);
    CHECK(losses.back() < 0.6 * losses.front());
  }
  // The run docs/models.md records: 300 steps, then the whole evaluation set.
  unet_losses(dir.path(), "unet_full", 300, {"--target_device", "CPU"});
  auto eval = run_csrun(unet_run("eval", dir.path(), "unet_full", {"--target_device", "CPU"}),
                        dir.path().string());
  INFO(eval.out << eval.err);
  REQUIRE(eval.exit_code == 0);
  CHECK(eval_metric(eval.out, "eval/dice_coefficient") >= 0.95);
  CHECK(eval_metric(eval.out, "eval/mean_iou") >= 0.9);
  CHECK(eval_metric(eval.out, "eval/accuracy") >= 0.98);

  std::vector<double> whole = unet_losses(dir.path(), "whole", 5, {"--target_device", "CPU"});
  std::vector<double> split = unet_losses(
      dir.path(), "split", 5,
      {"--target_device", "CPU", "--num_csx", "2", "--set", "train_input.micro_batch_size=4"});
  REQUIRE(split.size() == whole.size());
  for (std::size_t s = 0; s < whole.size(); ++s)
    CHECK(std::fabs(split[s] - whole[s]) <= 1e-5 * std::fabs(whole[s]));
}
