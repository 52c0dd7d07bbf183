#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "compiler/compile.hpp"
#include "compiler/host_lowering.hpp"
#include "models/step_trace.hpp"
#include "runner/checkpoint.hpp"
#include "runner/host_profile.hpp"
#include "runner/runner_registry.hpp"
#include "support/params_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

// A tiny fc_mnist trainer on fake data, its steps compiled for the CPU.
struct TinyRun {
  test::TempDir dir;
  test::LoadedParams params;
  std::optional<models::CheckedModel> model;
  compiler::PrecisionPolicy precision;

  explicit TinyRun(const std::string& extra_init, const std::string& loop = "{max_steps: 4}") {
    params = test::load_params_text(
        "trainer:\n  init:\n    device: CPU\n    model_dir: " + dir.path().string() +
        "\n    model: {name: fc_mnist, hidden_sizes: [8]}\n" + extra_init + "    loop: " + loop +
        "\n  fit:\n    train_dataloader: {data_processor: "
        "MNISTDataProcessor, batch_size: 4}\n");
    REQUIRE_FALSE(params.diagnostics.has_errors());
    config::Diagnostics diagnostics;
    model = models::check_model(params.trainer(), diagnostics);
    REQUIRE(model);
  }

  runner::StepProgram program(models::StepKind kind, std::int64_t batch = 4) const {
    const config::TrainerSpec& trainer = params.trainer();
    models::TraceOptions options{kind, 0, {}};
    if (kind == models::StepKind::train)
      options.training = {*trainer.optimizer, trainer.schedulers, trainer.precision};
    models::TracedStep step = models::trace_step(*model, batch, options);
    std::vector<data::SampleField> fields;
    for (const models::BatchField& field : step.batch) {
      bool integer = field.type.dtype == graph::DType::i32;
      fields.push_back({field.name, integer, graph::element_count(field.type.shape) / batch, 10});
    }
    compiler::StepInfo info{
        "test", "fingerprint",
        kind == models::StepKind::train ? compiler::StepKind::train : compiler::StepKind::eval,
        batch, 0};
    auto compiled = compiler::compile_step(std::move(step.graph), {precision, {}});
    return {compiler::build_plan(std::move(compiled), info, precision), std::move(fields),
            std::move(step.metric_averages)};
  }

  runner::RunSetup setup() const {
    runner::RunSetup result;
    result.settings = runner::LoopSettings::of(params.trainer());
    result.device = "CPU";
    result.model_name = "fc_mnist";
    result.train = program(models::StepKind::train);
    result.eval = program(models::StepKind::eval);
    data::DataloaderSpec loader;
    loader.processor = "MNISTDataProcessor";
    loader.batch_size = 4;
    loader.fake = true;
    result.train_loader = loader;
    loader.role = data::LoaderRole::eval;
    result.eval_loader = loader;
    return result;
  }
};

// Records the hooks it sees, by name.
struct Recorder : runner::Callback {
  std::vector<std::string>* calls;
  explicit Recorder(std::vector<std::string>* sink) : calls(sink) {}
  void on_train_start(const runner::RunState&) override { calls->push_back("train_start"); }
  void on_train_batch_end(const runner::RunState& s) override {
    calls->push_back("batch_end " + std::to_string(s.global_step));
  }
  void on_train_end(const runner::RunState&) override { calls->push_back("train_end"); }
  void on_train_epoch_start(const runner::RunState& s) override {
    if (epochs) calls->push_back("epoch_start " + std::to_string(s.epoch));
  }
  void on_train_epoch_end(const runner::RunState& s) override {
    if (epochs) calls->push_back("epoch_end " + std::to_string(s.epoch));
  }
  bool epochs = false;
  void on_eval_end(const runner::RunState&) override { calls->push_back("eval_end"); }
  void on_exception(const runner::RunState&, const std::exception& e) override {
    calls->push_back(std::string("exception ") + e.what());
  }
};

std::vector<std::string> recorded;

}  // namespace

TEST_CASE("a registered callback sees the hooks of a run, without changes to the runner") {
  runner::register_callback(
      "TestRecorder", [](const config::Node&) { return std::make_unique<Recorder>(&recorded); });
  REQUIRE(runner::has_callback("TestRecorder"));
  recorded.clear();
  TinyRun run("    optimizer: {SGD: {lr: 0.01}}\n");
  runner::CallbackList callbacks;
  callbacks.add(runner::make_callback("TestRecorder", config::Node()));
  runner::TrainingLoop loop(run.setup(), std::move(callbacks));
  loop.fit();
  CHECK(recorded == std::vector<std::string>{"train_start", "batch_end 1", "batch_end 2",
                                             "batch_end 3", "batch_end 4", "train_end"});
  CHECK(std::filesystem::exists(run.dir.path() / "checkpoint_4.mdl"));
  CHECK_THROWS_WITH(runner::make_callback("Nope", config::Node()),
                    Catch::Contains("no callback named 'Nope'"));
}

TEST_CASE("a NaN loss stops the run with the Model Zoo's message, end hooks do not run") {
  recorded.clear();
  TinyRun run("    optimizer: {SGD: {lr: 1.0e+30}}\n");
  runner::CallbackList callbacks;
  callbacks.add(std::make_unique<Recorder>(&recorded));
  runner::TrainingLoop loop(run.setup(), std::move(callbacks));
  CHECK_THROWS_WITH(loop.fit(), Catch::Contains("loss detected. This could potentially be due"));
  REQUIRE_FALSE(recorded.empty());
  CHECK(recorded.back().starts_with("exception "));
  CHECK(std::find(recorded.begin(), recorded.end(), "train_end") == recorded.end());
}

TEST_CASE("a resumed run continues the exact sequence of an uninterrupted one") {
  // Mixed precision too: the weights' 16-bit copies are no checkpoint entries, and are rounded
  // again from the weights a resumed run loads.
  for (compiler::PrecisionPolicy precision :
       {compiler::PrecisionPolicy{}, compiler::PrecisionPolicy{true, graph::DType::bf16, 1}}) {
    INFO("mixed precision " << precision.mixed);
    TinyRun straight("    optimizer: {Adam: {lr: 0.01}}\n");
    straight.precision = precision;
    runner::TrainingLoop(straight.setup(), {}).fit();

    TinyRun resumed("    optimizer: {Adam: {lr: 0.01}}\n");
    resumed.precision = precision;
    runner::RunSetup first = resumed.setup();
    first.settings.loop.max_steps = 2;
    runner::TrainingLoop(std::move(first), {}).fit();
    REQUIRE(std::filesystem::exists(resumed.dir.path() / "checkpoint_2.mdl"));
    runner::TrainingLoop(resumed.setup(), {}).fit();  // autoloads checkpoint_2

    auto a = runner::load_checkpoint((straight.dir.path() / "checkpoint_4.mdl").string());
    auto b = runner::load_checkpoint((resumed.dir.path() / "checkpoint_4.mdl").string());
    CHECK(a.global_step() == 4);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& [key, tensor] : a.tensors) {
      INFO(key);
      CHECK(key.find('@') == std::string::npos);
      CHECK(tensor == b.tensors.at(key));
    }
  }
}

// Requests a stop, as the SIGTERM handler does, once its step has been taken.
struct StopAt : runner::Callback {
  std::atomic<bool>* flag;
  std::int64_t step;
  StopAt(std::atomic<bool>* f, std::int64_t at) : flag(f), step(at) {}
  void on_train_batch_end(const runner::RunState& s) override {
    if (s.global_step == step) flag->store(true);
  }
};

TEST_CASE("a stop request checkpoints the step taken and ends fit, rerunning resumes exactly") {
  TinyRun straight("    optimizer: {Adam: {lr: 0.01}}\n");
  runner::TrainingLoop(straight.setup(), {}).fit();

  recorded.clear();
  TinyRun stopped("    optimizer: {Adam: {lr: 0.01}}\n");
  std::atomic<bool> stop{false};
  runner::RunSetup first = stopped.setup();
  first.stop_requested = &stop;
  runner::CallbackList callbacks;
  callbacks.add(std::make_unique<Recorder>(&recorded));
  callbacks.add(std::make_unique<StopAt>(&stop, 3));
  CHECK_THROWS_AS(runner::TrainingLoop(std::move(first), std::move(callbacks)).fit(),
                  runner::StopRequested);
  CHECK(std::filesystem::exists(stopped.dir.path() / "checkpoint_3.mdl"));
  CHECK_FALSE(std::filesystem::exists(stopped.dir.path() / "checkpoint_4.mdl"));
  REQUIRE_FALSE(recorded.empty());
  CHECK(recorded.back().starts_with("exception Stopped at step 3"));
  CHECK(std::find(recorded.begin(), recorded.end(), "train_end") == recorded.end());

  runner::TrainingLoop(stopped.setup(), {}).fit();  // autoloads checkpoint_3
  auto a = runner::load_checkpoint((straight.dir.path() / "checkpoint_4.mdl").string());
  auto b = runner::load_checkpoint((stopped.dir.path() / "checkpoint_4.mdl").string());
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [key, tensor] : a.tensors) {
    INFO(key);
    CHECK(tensor == b.tensors.at(key));
  }
}

TEST_CASE("eval loads a checkpoint and reports its loss and metrics") {
  TinyRun run("    optimizer: {SGD: {lr: 0.01}}\n");
  runner::TrainingLoop(run.setup(), {}).fit();
  runner::TrainingLoop eval(run.setup(), {});
  auto results = eval.validate({(run.dir.path() / "checkpoint_4.mdl").string()});
  REQUIRE(results.size() == 1);
  CHECK(results[0].global_step == 4);
  CHECK(std::isfinite(results[0].loss));
  auto broken = run.dir.write("checkpoint_9.mdl", "garbage");
  runner::TrainingLoop again(run.setup(), {});
  CHECK_THROWS_WITH(again.validate({broken}),
                    Catch::Contains("checkpoint_9.mdl is not an HDF5 file"));
}

TEST_CASE("load_checkpoint_states loads the states it names and no others") {
  TinyRun run("    optimizer: {SGD: {lr: 0.01}}\n");
  runner::TrainingLoop(run.setup(), {}).fit();
  std::string checkpoint = (run.dir.path() / "checkpoint_4.mdl").string();
  runner::EvalResult all = runner::TrainingLoop(run.setup(), {}).validate({checkpoint})[0];
  CHECK(all.global_step == 4);

  runner::RunSetup model_only = run.setup();
  model_only.settings.checkpoint.load_checkpoint_states = {"model"};
  runner::EvalResult weights =
      runner::TrainingLoop(std::move(model_only), {}).validate({checkpoint})[0];
  CHECK(weights.global_step == 0);
  CHECK(weights.loss == all.loss);

  runner::RunSetup step_only = run.setup();
  step_only.settings.checkpoint.load_checkpoint_states = {"global_step"};
  runner::EvalResult step =
      runner::TrainingLoop(std::move(step_only), {}).validate({checkpoint})[0];
  CHECK(step.global_step == 4);
  CHECK(step.loss != all.loss);  // the initial weights
  // The schedulers' step (2.0-2.2: lr_scheduler) is not the global step.
  for (const char* schedulers : {"schedulers", "lr_scheduler"}) {
    runner::RunSetup schedule_only = run.setup();
    schedule_only.settings.checkpoint.load_checkpoint_states = {schedulers};
    CHECK(
        runner::TrainingLoop(std::move(schedule_only), {}).validate({checkpoint})[0].global_step ==
        0);
  }
}

TEST_CASE("an evaluation reads its model's entries of a checkpoint, a resumed run every one") {
  TinyRun run("    optimizer: {Adam: {lr: 0.01}}\n");
  runner::TrainingLoop(run.setup(), {}).fit();
  std::string path = (run.dir.path() / "checkpoint_4.mdl").string();
  runner::EvalResult original = runner::TrainingLoop(run.setup(), {}).validate({path})[0];
  // An optimizer entry no model of this run could take: the evaluation does not read it.
  runner::Checkpoint checkpoint = runner::load_checkpoint(path);
  auto moment =
      std::find_if(checkpoint.tensors.begin(), checkpoint.tensors.end(),
                   [](const auto& entry) { return entry.first.starts_with("optimizer."); });
  REQUIRE(moment != checkpoint.tensors.end());
  std::string key = moment->first;
  moment->second = {{3}, runner::CheckpointTensor::Floats{1.0f, 2.0f, 3.0f}};
  test::TempDir other;
  std::string changed = (other.path() / "checkpoint_4.mdl").string();
  runner::save_checkpoint(changed, checkpoint);
  runner::EvalResult evaluated = runner::TrainingLoop(run.setup(), {}).validate({changed})[0];
  CHECK(evaluated.global_step == 4);
  CHECK(evaluated.loss == original.loss);
  runner::RunSetup resumed = run.setup();
  resumed.checkpoint_path = changed;
  resumed.settings.loop.max_steps = 6;
  CHECK_THROWS_WITH(runner::TrainingLoop(std::move(resumed), {}).fit(),
                    Catch::Contains(changed) && Catch::Contains("'" + key + "' has shape (3,)"));
}

TEST_CASE("an eval batch run as host batches gives the whole batch's per-sample means") {
  TinyRun run("    optimizer: {SGD: {lr: 0.01}}\n");
  runner::TrainingLoop(run.setup(), {}).fit();
  std::string checkpoint = (run.dir.path() / "checkpoint_4.mdl").string();
  runner::EvalResult whole = runner::TrainingLoop(run.setup(), {}).validate({checkpoint})[0];

  runner::RunSetup halves = run.setup();
  halves.eval = run.program(models::StepKind::eval, 2);
  halves.eval_host_batches = {2, "Each eval batch of 4 samples runs as 2 host batches of 2."};
  REQUIRE(runner::loader_jobs(halves).back().batch_size == 4);
  runner::EvalResult split = runner::TrainingLoop(std::move(halves), {}).validate({checkpoint})[0];
  CHECK(split.loss == Approx(whole.loss).epsilon(1e-6));
  REQUIRE(split.metrics.size() == whole.metrics.size());
  for (const auto& [name, value] : whole.metrics)
    CHECK(split.metrics.at(name) == Approx(value).epsilon(1e-6));
}

TEST_CASE("epoch hooks run at every epoch boundary, batch counts within the epoch") {
  recorded.clear();
  TinyRun run("    optimizer: {SGD: {lr: 0.01}}\n", "{num_epochs: 3, steps_per_epoch: 2}");
  runner::CallbackList callbacks;
  auto recorder = std::make_unique<Recorder>(&recorded);
  recorder->epochs = true;
  callbacks.add(std::move(recorder));
  runner::TrainingLoop(run.setup(), std::move(callbacks)).fit();
  CHECK(recorded == std::vector<std::string>{
                        "train_start", "epoch_start 0", "batch_end 1", "batch_end 2", "epoch_end 0",
                        "epoch_start 1", "batch_end 3", "batch_end 4", "epoch_end 1",
                        "epoch_start 2", "batch_end 5", "batch_end 6", "epoch_end 2", "train_end"});
}

namespace {

// A runner that only records that it ran: a user's runner, added without touching the loops.
struct RecordingRunner : runner::Runner {
  std::string device;
  explicit RecordingRunner(std::string name) : device(std::move(name)) {}
  runner::FitResult fit() override {
    recorded.push_back("fit on " + device);
    return {};
  }
  std::vector<runner::EvalResult> validate(const std::vector<std::string>&) override { return {}; }
};

}  // namespace

TEST_CASE("the runner factory: built-in devices, a registered runner, clear errors") {
  TinyRun run("    optimizer: {SGD: {lr: 0.01}}\n");
  CHECK(runner::has_runner("CSX"));
  CHECK(runner::has_runner("CPU"));
  runner::make_runner(run.setup(), {})->fit();
  CHECK(std::filesystem::exists(run.dir.path() / "checkpoint_4.mdl"));

  runner::RunSetup gpu = run.setup();
  gpu.device = "GPU";
  CHECK_THROWS_WITH(runner::make_runner(std::move(gpu), {}),
                    Catch::Contains("device GPU needs a csrun built with CUDA"));

  runner::register_runner("TEST", [](runner::RunSetup setup, runner::CallbackList) {
    return std::make_unique<RecordingRunner>(setup.device);
  });
  recorded.clear();
  runner::RunSetup custom = run.setup();
  custom.device = "TEST";
  runner::make_runner(std::move(custom), {})->fit();
  CHECK(recorded == std::vector<std::string>{"fit on TEST"});

  runner::RunSetup unknown = run.setup();
  unknown.device = "TPU";
  CHECK_THROWS_WITH(runner::make_runner(std::move(unknown), {}),
                    Catch::Contains("no runner for device 'TPU'"));
}

namespace {

std::vector<std::vector<std::string>> tsv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, '\t');)
      cells.push_back(cell);
    rows.push_back(std::move(cells));
  }
  return rows;
}

// The host steps of `plan` that run in its step, not at load.
std::vector<const compiler::HostStep*> step_host_steps(const compiler::Plan& plan) {
  std::vector<const compiler::HostStep*> steps;
  for (const compiler::HostStep& step : plan.host_steps) {
    if (!plan.kernels[static_cast<std::size_t>(step.kernel)].at_load) steps.push_back(&step);
  }
  return steps;
}

}  // namespace

TEST_CASE("a profiled run lists each host step of its programs in order, as their plans number") {
  TinyRun run("    optimizer: {Adam: {lr: 0.01}}\n",
              "{max_steps: 4, eval_frequency: 4, eval_steps: 3}");
  runner::RunSetup setup = run.setup();
  setup.profile = true;
  const compiler::Plan train_plan = setup.train->plan;
  const compiler::Plan eval_plan = setup.eval->plan;
  runner::TrainingLoop(std::move(setup), {}).fit();

  auto rows =
      tsv_rows(test::read_file(run.dir.path() / "cerebras_logs" / "latest" / "host_profile.tsv"));
  REQUIRE_FALSE(rows.empty());
  CHECK(rows.front() == std::vector<std::string>{"program", "kernel", "name", "call", "phase",
                                                 "scope", "node", "runs", "seconds", "share",
                                                 "gflop", "gflop_per_s"});
  // The first run of each program is left out: 3 of 4 training steps, 2 of 3 eval batches.
  for (auto [program, plan, runs] :
       {std::tuple{"train", &train_plan, "3"}, std::tuple{"eval", &eval_plan, "2"}}) {
    INFO(program);
    std::vector<const compiler::HostStep*> expected = step_host_steps(*plan);
    std::size_t seen = 0;
    double shares = 0.0;
    for (const auto& row : rows) {
      if (row.front() != program) continue;
      REQUIRE(row.size() == 12);
      REQUIRE(seen < expected.size());
      const compiler::HostStep& step = *expected[seen++];
      CHECK(row[1] == std::to_string(step.kernel));
      CHECK(row[2] == plan->kernels[static_cast<std::size_t>(step.kernel)].name);
      CHECK(row[3] == compiler::host_step_call(step));
      CHECK(row[7] == runs);
      shares += std::stod(row[9]);
    }
    CHECK(seen == expected.size());
    CHECK(shares > 0.0);
    CHECK(shares <= 100.5);
  }
}

TEST_CASE("a host profile's shares, rates and summary come from the seconds measured") {
  TinyRun run("    optimizer: {SGD: {lr: 0.01}}\n");
  runner::StepProgram program = run.program(models::StepKind::train);
  const compiler::Plan& plan = program.plan;
  std::vector<const compiler::HostStep*> steps = step_host_steps(plan);
  auto gemm = std::find_if(steps.begin(), steps.end(), [](const compiler::HostStep* step) {
    return step->kind == compiler::HostStepKind::gemm;
  });
  REQUIRE(gemm != steps.end());
  auto index = static_cast<std::size_t>(*gemm - plan.host_steps.data());

  // Two runs of a microsecond each: the GEMM took 1.2 us of them, every other host step 0.
  runner::ProfiledProgram profiled{"train", &plan, {}};
  profiled.profile.runs = 2;
  profiled.profile.run_seconds = 2e-6;
  profiled.profile.seconds.assign(plan.host_steps.size(), 0.0);
  profiled.profile.seconds[index] = 1.2e-6;
  std::vector<runner::ProfiledProgram> programs{profiled};

  auto rows = tsv_rows(runner::host_profile_table(programs));
  CHECK(rows.size() == steps.size() + 1);
  auto row = std::find_if(rows.begin(), rows.end(), [&](const std::vector<std::string>& cells) {
    return cells[1] == std::to_string((*gemm)->kernel) && cells[3].starts_with("gemm");
  });
  REQUIRE(row != rows.end());
  CHECK((*row)[7] == "2");
  CHECK((*row)[8] == "0.000000600");
  CHECK((*row)[9] == "60.00");
  double gflop = std::stod((*row)[10]);
  CHECK(gflop > 0.0);
  CHECK(std::stod((*row)[11]) == Approx(gflop / 6e-7).epsilon(1e-3));

  std::vector<std::string> summary = runner::host_profile_summary(programs);
  REQUIRE(summary.size() >= 3);
  CHECK_THAT(summary[0], Catch::StartsWith("Host profile of the train step (2 runs timed): "
                                           "1e-06 s a run: gemm 60.0 %"));
  CHECK_THAT(summary[0], Catch::EndsWith("between host steps 40.0 %."));
  CHECK_THAT(summary[2], Catch::StartsWith("  k" + std::to_string((*gemm)->kernel) + " "));
  CHECK_THAT(summary[2], Catch::Contains("6e-07 s, 60.0 %"));

  programs.front().profile = {};
  CHECK(runner::host_profile_summary(programs) ==
        std::vector<std::string>{"Host profile of the train step: not timed (it ran once; a "
                                 "program's first run, which touches its memory first, is left "
                                 "out)."});
}
