#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "runner/checkpoint.hpp"
#include "runner/checkpointing.hpp"
#include "runner/run_reports.hpp"
#include "support/event_reader.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;
namespace fs = std::filesystem;

namespace {

// The built-in hooks on their own: a run log in a temporary model_dir and the states a loop
// of `total` steps would show them.
struct HookBench {
  test::TempDir dir;
  runner::RunLog log{dir.path().string(), "INFO"};
  std::int64_t snapshots = 0;

  runner::Checkpoint snapshot() {
    ++snapshots;
    return {
        {{"model.w", runner::CheckpointTensor{{2}, runner::CheckpointTensor::Floats{1.0f, 2.0f}}},
         {"global_step", runner::CheckpointTensor{{}, runner::CheckpointTensor::Integers{3}}}},
        "{}"};
  }

  static runner::RunState step(std::int64_t global_step, std::int64_t done, std::int64_t total) {
    runner::RunState state;
    state.global_step = global_step;
    state.done = done;
    state.total = total;
    state.batch_size = 4;
    state.loss = 1.0 / static_cast<double>(global_step);
    return state;
  }

  std::vector<std::int64_t> checkpoint_steps(const fs::path& directory) const {
    std::vector<std::int64_t> steps;
    for (const runner::CheckpointNames::Found& found : runner::CheckpointNames().find(directory))
      steps.push_back(found.step);
    return steps;
  }

  // The scalars of the one event file in model_dir/events.
  std::vector<test::ScalarEvent> events() const {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir.path() / "events"))
      files.push_back(entry.path());
    REQUIRE(files.size() == 1);
    return test::read_scalar_events(files[0].string());
  }

  std::string run_log() const {
    std::ifstream file(fs::path(log.directory()) / "run.log");
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
};

}  // namespace

TEST_CASE("checkpoints are written at checkpoint steps and the last step, keep_last kept") {
  HookBench bench;
  config::CheckpointSpec settings;
  settings.steps = 2;
  SECTION("every one kept") {
    runner::Checkpointing hook(settings, bench.dir.path(), bench.log,
                               [&] { return bench.snapshot(); });
    for (std::int64_t step = 1; step <= 5; ++step)
      hook.on_train_batch_end(HookBench::step(step, step, 5));
    CHECK(bench.checkpoint_steps(bench.dir.path()) == std::vector<std::int64_t>{2, 4, 5});
  }
  SECTION("keep_last: 2") {
    settings.keep_last = 2;
    runner::Checkpointing hook(settings, bench.dir.path(), bench.log,
                               [&] { return bench.snapshot(); });
    for (std::int64_t step = 1; step <= 5; ++step)
      hook.on_train_batch_end(HookBench::step(step, step, 5));
    CHECK(bench.checkpoint_steps(bench.dir.path()) == std::vector<std::int64_t>{4, 5});
  }
}

TEST_CASE("save_initial_checkpoint writes the starting step unless the run resumes from it") {
  HookBench bench;
  config::CheckpointSpec settings;
  settings.save_initial_checkpoint = true;
  runner::Checkpointing first(settings, bench.dir.path(), bench.log,
                              [&] { return bench.snapshot(); });
  first.on_train_start(HookBench::step(0, 0, 3));
  CHECK(bench.checkpoint_steps(bench.dir.path()) == std::vector<std::int64_t>{0});
  runner::Checkpointing resumed(settings, bench.dir.path(), bench.log,
                                [&] { return bench.snapshot(); });
  resumed.on_train_start(HookBench::step(0, 0, 3));
  CHECK(bench.snapshots == 1);

  settings.save_initial_checkpoint = false;
  runner::Checkpointing without(settings, bench.dir.path() / "other", bench.log,
                                [&] { return bench.snapshot(); });
  without.on_train_start(HookBench::step(0, 0, 3));
  CHECK(bench.snapshots == 1);
}

TEST_CASE("a checkpoint of an existing name is stamped, a stop writes a step only once") {
  HookBench bench;
  config::CheckpointSpec settings;
  settings.checkpoint_name = "saved/step_{step}.mdl";
  runner::Checkpointing hook(settings, bench.dir.path(), bench.log,
                             [&] { return bench.snapshot(); });
  hook.on_train_batch_end(HookBench::step(3, 3, 3));
  CHECK(fs::exists(bench.dir.path() / "saved" / "step_3.mdl"));
  hook.save_unless_saved(HookBench::step(3, 3, 3));
  CHECK(bench.snapshots == 1);

  runner::Checkpointing again(settings, bench.dir.path(), bench.log,
                              [&] { return bench.snapshot(); });
  again.save_unless_saved(HookBench::step(3, 3, 3));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(bench.dir.path() / "saved"))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() == 2);
  CHECK(names[0] == "step_3.mdl");
  CHECK(names[1].starts_with("step_3_20"));
  CHECK(runner::load_checkpoint((bench.dir.path() / "saved" / names[1]).string())
            .tensors.at("model.w") ==
        runner::CheckpointTensor{{2}, runner::CheckpointTensor::Floats{1.0f, 2.0f}});
}

TEST_CASE("a run's checkpoint_name is what autoload and keep_last look for") {
  HookBench bench;
  config::CheckpointSpec settings;
  settings.steps = 2;
  settings.keep_last = 2;
  settings.checkpoint_name = "ck_{step}.mdl";
  bench.dir.write("checkpoint_9.mdl", "");  // another naming's: neither loaded nor pruned
  runner::Checkpointing hook(settings, bench.dir.path(), bench.log,
                             [&] { return bench.snapshot(); });
  for (std::int64_t step = 1; step <= 6; ++step)
    hook.on_train_batch_end(HookBench::step(step, step, 6));
  CHECK(!fs::exists(bench.dir.path() / "ck_2.mdl"));
  CHECK(fs::exists(bench.dir.path() / "ck_4.mdl"));
  CHECK(fs::exists(bench.dir.path() / "checkpoint_9.mdl"));
  auto latest = runner::checkpoint_to_load("", nullptr, settings, bench.dir.path(), bench.log);
  REQUIRE(latest);
  CHECK(fs::path(*latest).filename() == "ck_6.mdl");
  CHECK(bench.run_log().find("naming convention: `ck_(step)(_timestamp)?.mdl`") !=
        std::string::npos);
  settings.checkpoint_name = "other_{step}.mdl";
  CHECK(!runner::checkpoint_to_load("", nullptr, settings, bench.dir.path(), bench.log));
}

// docs/training.md (--async_checkpoint): a checkpoint written in the background holds its step's
// state, which the next step changes once before_state_changes has returned.
TEST_CASE("checkpoints written in the background hold their step's state, keep_last kept") {
  HookBench bench;
  config::CheckpointSpec settings;
  settings.steps = 1;
  settings.keep_last = 2;
  std::vector<float> weights(1 << 18);  // 1 MiB: written past the page cache
  auto snapshot = [&] {
    return runner::Checkpoint{
        {{"model.w",
          runner::CheckpointTensor{{weights.size()}, runner::CheckpointTensor::Borrowed(weights)}},
         {"global_step", runner::CheckpointTensor{{}, runner::CheckpointTensor::Integers{1}}}},
        "{}"};
  };
  runner::Checkpointing hook(settings, bench.dir.path(), bench.log, snapshot, true);
  for (std::int64_t step = 1; step <= 5; ++step) {
    std::fill(weights.begin(), weights.end(), static_cast<float>(step));
    hook.on_train_batch_end(HookBench::step(step, step, 5));
    hook.before_state_changes();
    std::fill(weights.begin(), weights.end(), -1.0f);  // the next step's update
  }
  hook.on_train_end(HookBench::step(5, 5, 5));
  CHECK(bench.checkpoint_steps(bench.dir.path()) == std::vector<std::int64_t>{4, 5});
  for (std::int64_t step : {4, 5}) {
    runner::Checkpoint written = runner::load_checkpoint(
        (bench.dir.path() / ("checkpoint_" + std::to_string(step) + ".mdl")).string());
    const runner::CheckpointTensor& tensor = written.tensors.at("model.w");
    REQUIRE(tensor.size() == weights.size());
    CHECK(tensor.value(0) == static_cast<double>(step));
    CHECK(tensor.value(weights.size() - 1) == static_cast<double>(step));
  }
  CHECK(bench.run_log().find("Saved checkpoint " +
                             (bench.dir.path() / "checkpoint_5.mdl").string()) !=
        std::string::npos);
}

TEST_CASE("a checkpoint that fails in the background ends the run at the next step") {
  HookBench bench;
  config::CheckpointSpec settings;
  settings.steps = 1;
  std::vector<float> weights(1 << 18, 1.0f);
  auto snapshot = [&] {
    return runner::Checkpoint{
        {{"model.w",
          runner::CheckpointTensor{{weights.size()}, runner::CheckpointTensor::Borrowed(weights)}}},
        "{}"};
  };
  // A file-size limit fails the write as a full disk does.
  auto message = test::error_under_file_size_limit(64 << 10, [&] {
    runner::Checkpointing hook(settings, bench.dir.path(), bench.log, snapshot, true);
    hook.on_train_batch_end(HookBench::step(1, 1, 3));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    hook.on_train_batch_end(HookBench::step(2, 2, 3));
    hook.on_train_end(HookBench::step(2, 2, 3));
  });
  REQUIRE(message);
  CHECK_THAT(*message, Catch::Contains("checkpoint_1.mdl") && Catch::Contains("File too large"));
  CHECK(bench.checkpoint_steps(bench.dir.path()).empty());
}

TEST_CASE("run reports log every log_steps and the last step, write events and performance") {
  HookBench bench;
  runner::RunReports reports(bench.log, "CPU", 2, (bench.dir.path() / "events").string());
  runner::RunState state = HookBench::step(0, 0, 5);
  reports.on_train_start(state);
  for (std::int64_t step = 1; step <= 5; ++step) {
    state = HookBench::step(step, step, 5);
    state.learning_rate = 0.5;
    reports.on_train_batch_end(state);
  }
  state.simulated_seconds = 0.25;
  reports.on_train_end(state);

  std::string log = bench.run_log();
  CHECK(log.find("Step=1,") == std::string::npos);
  CHECK(log.find("| Train Device=CPU, Step=2, Loss=0.50000") != std::string::npos);
  CHECK(log.find("Step=4,") != std::string::npos);
  CHECK(log.find("Step=5,") != std::string::npos);
  CHECK(log.find("Processed 20 training sample(s)") != std::string::npos);
  CHECK(log.find("Simulated CPU time: 0.25 seconds, 80.00 samples/sec") != std::string::npos);

  std::ifstream performance_file(fs::path(bench.log.directory()) / "performance.json");
  auto performance = nlohmann::json::parse(performance_file);
  CHECK(performance["total_samples"] == 20);
  CHECK(performance["global_step"] == 5);
  CHECK(performance["simulated_samples_per_sec"].get<double>() == Approx(80.0));

  auto events = bench.events();
  CHECK(test::scalar_values(events, "loss") == std::vector<double>{0.5, 0.25, 0.20000000298023224});
  CHECK(test::scalar_values(events, "lr/0").size() == 3);
  CHECK(test::scalar_values(events, "loss_scale").empty());
}

TEST_CASE("run reports summarize an evaluation: mean loss, metrics, validate_0 events") {
  HookBench bench;
  runner::RunReports reports(bench.log, "CSX", 10, (bench.dir.path() / "events").string());
  runner::RunState state = HookBench::step(7, 0, 3);
  reports.on_eval_start(state);
  for (std::int64_t batch = 1; batch <= 3; ++batch) {
    state.done = batch;
    reports.on_eval_batch_end(state);
  }
  state.eval_loss = 0.75;
  state.metrics["accuracy"] = 0.5;
  reports.on_eval_end(state);
  std::string log = bench.run_log();
  CHECK(log.find("Batch=1,") == std::string::npos);
  CHECK(log.find("| Eval Device=CSX, GlobalStep=7, Batch=3,") != std::string::npos);
  CHECK(log.find("Avg Eval Loss: 0.75000") != std::string::npos);
  CHECK(log.find("  - accuracy = 0.500000") != std::string::npos);
  auto events = bench.events();
  CHECK(test::scalar_values(events, "validate_0/loss") == std::vector<double>{0.75});
  CHECK(test::scalar_values(events, "validate_0/accuracy") == std::vector<double>{0.5});
}
