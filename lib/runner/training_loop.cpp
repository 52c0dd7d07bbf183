#include "training_loop.hpp"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "batch_feed.hpp"
#include "checkpointing.hpp"
#include "config/yaml_writer.hpp"
#include "host_profile.hpp"
#include "live_progress.hpp"
#include "metric_totals.hpp"
#include "model_state.hpp"
#include "run_log.hpp"
#include "run_reports.hpp"
#include "runtime/executable.hpp"
#include "storage/atomic_file.hpp"

namespace csrun::runner {

namespace {

namespace fs = std::filesystem;
using runtime::Executable;

void check_loss(double loss) {
  if (std::isfinite(loss)) return;
  throw std::runtime_error(std::string(std::isnan(loss) ? "NaN" : "inf") +
                           " loss detected. This could potentially be due to selected "
                           "hyperparameters such as the learning rate, batch size, etc. or it "
                           "could due an internal error. Please try with different set of "
                           "hyperparameters and contact Cerebras Support if the issue persists.");
}

// An evaluation changes no weight: a loss that is not finite comes from the weights it was given
// or from the batch, not from the training's hyperparameters.
void check_eval_loss(double loss, std::int64_t batch) {
  if (std::isfinite(loss)) return;
  throw std::runtime_error(std::string(std::isnan(loss) ? "NaN" : "inf") +
                           " loss in evaluation batch " + std::to_string(batch) +
                           ": the weights evaluated (the checkpoint loaded, or the training's "
                           "weights at this step) or the batch hold values that are not finite");
}

std::optional<Executable::Slot> output_slot(const Executable& executable, const std::string& name) {
  if (!executable.plan().graph.find_output(name)) return std::nullopt;
  return executable.slot(name);
}

std::optional<double> scalar_of(const Executable& executable,
                                std::optional<Executable::Slot> slot) {
  if (!slot) return std::nullopt;
  return executable.scalar(*slot);
}

// The training batches this process reads: each of its replicas' share of the global batch when
// the replicas share it (so an MPI rank reads only its own), else the whole batch.
std::vector<data::LoaderJob> train_jobs(const RunSetup& setup) {
  data::LoaderJob whole{*setup.train_loader, setup.train->fields, setup.train->plan.batch_size,
                        setup.settings.seed};
  if (!setup.train_micro_steps || setup.train_micro_steps->split.replicas == 1) return {whole};
  const BatchSplit& split = setup.train_micro_steps->split;
  std::vector<data::LoaderJob> jobs;
  for (std::int64_t j = 0; j < split.local_replicas; ++j) {
    data::LoaderJob& job = jobs.emplace_back(whole);
    job.share = split.first_replica + j;
    job.shares = split.replicas;
  }
  return jobs;
}

// This process alone, or an MPI job's first rank: it writes the run's files and evaluates.
bool first_process(const RunSetup& setup) {
  return !setup.group || setup.group->primary();
}

// The eval dataloader's batch: the eval plan's, times the host batches it runs as.
std::int64_t eval_batch_size(const RunSetup& setup) {
  return setup.eval->plan.batch_size * setup.eval_host_batches.runs;
}

data::LoaderJob eval_job(const RunSetup& setup) {
  return {*setup.eval_loader, setup.eval->fields, eval_batch_size(setup), setup.settings.seed};
}

// Seconds since `start`, as a log line shows them.
std::string seconds_since(std::chrono::steady_clock::time_point start) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return seconds;
}

std::string split_text(const BatchSplit& split) {
  std::string text = "Each step runs " + std::to_string(split.micro_steps()) + " micro-steps of " +
                     std::to_string(split.micro_batch) +
                     (split.micro_batch == 1 ? " sample (" : " samples (");
  if (split.replicas > 1) text += std::to_string(split.replicas) + " replicas x ";
  text += std::to_string(split.micro_batches_per_replica) +
          (split.micro_batches_per_replica == 1 ? " micro-batch" : " micro-batches");
  if (split.accumulated_batch > 0) text += ": the batches grad_accum_steps accumulates";
  return text + ") and one update with the sum of their gradients.";
}

}  // namespace

LoopSettings LoopSettings::of(const config::TrainerSpec& trainer) {
  LoopSettings settings;
  settings.model_dir = trainer.model_dir;
  settings.seed = static_cast<std::uint64_t>(trainer.seed.value_or(0));
  settings.loop = trainer.loop;
  settings.checkpoint = trainer.checkpoint;
  settings.logging = trainer.logging;
  if (trainer.fit) settings.fit_checkpoint = trainer.fit->checkpoint;
  if (trainer.validate) settings.validate_checkpoint = trainer.validate->checkpoint;
  settings.params = trainer.tree;
  return settings;
}

std::vector<data::LoaderJob> loader_jobs(const RunSetup& setup) {
  std::vector<data::LoaderJob> jobs;
  if (setup.train && setup.train_loader) jobs = train_jobs(setup);
  if (setup.eval && setup.eval_loader && first_process(setup)) jobs.push_back(eval_job(setup));
  return jobs;
}

// The loops: steps, batches, evaluation and the hooks around them. What happens at a hook
// (progress, logs and summaries, checkpoints, the user's callbacks) lives in the callbacks.
struct TrainingLoop::State {
  RunSetup setup;
  const LoopSettings& settings;
  bool primary;  // writes the run's files; the other ranks of an MPI job only train
  RunLog log;
  fs::path checkpoints;
  std::vector<EvalResult> evaluations;  // fit's, in order
  bool eval_steps_clamp_logged = false;
  LiveProgress progress;
  RunReports reports;
  CallbackList user_callbacks;
  RunState run;
  std::optional<Executable> train;  // with micro-steps: the update, which holds the state
  std::optional<AccumulatedStep> micro_steps;
  std::optional<Executable> eval;
  std::vector<BatchFeed> train_feeds;  // one per replica this process runs, or the whole batch
  std::vector<const data::BatchView*> train_batch;  // a step's batch: the feeds' shares
  std::optional<BatchFeed> eval_feed;
  bool eval_split_logged = false;
  // Destroyed before the executables: a checkpoint still being written in the background reads
  // the training step's variables.
  Checkpointing checkpointing;

  State(RunSetup run_setup, CallbackList hooks)
      : setup(std::move(run_setup)),
        settings(setup.settings),
        primary(first_process(setup)),
        log(primary ? RunLog(settings.model_dir, settings.logging.log_level) : RunLog("WARNING")),
        checkpoints(checkpoint_directory(settings.checkpoint, settings.model_dir)),
        progress(log),
        reports(log, setup.device, settings.logging.log_steps,
                (fs::path(settings.model_dir) / "events").string()),
        user_callbacks(std::move(hooks)),
        checkpointing(
            settings.checkpoint, checkpoints, log, [this] { return train_snapshot(); },
            setup.async_checkpoint) {
    if (setup.train) train.emplace(setup.train->plan);
    if (setup.train_micro_steps) {
      const MicroSteps& micro = *setup.train_micro_steps;
      // The micro-step reads the weights where the update step keeps them.
      micro_steps.emplace(Executable(micro.program.plan, {}, *train), micro.program.fields,
                          micro.split, micro.normalizer_fields, *train, setup.group);
    }
    // Beside a training step, the eval step reads the weights where the training step keeps them.
    if (setup.eval && train) {
      eval.emplace(setup.eval->plan, std::string_view{}, *train);
    } else if (setup.eval) {
      eval.emplace(setup.eval->plan);
    }
    if (primary)
      storage::write_file_atomically(fs::path(log.directory()) / "trainer_params.yaml",
                                     config::to_yaml(settings.params));
  }

  // The built-in hooks run first, in this order, then the user's.
  std::array<Callback*, 3> built_in_callbacks() { return {&progress, &reports, &checkpointing}; }

  template <class Hook>
  void call(Hook hook) {
    if (!primary) return;
    for (Callback* callback : built_in_callbacks())
      (callback->*hook)(run);
    user_callbacks.call(hook, run);
  }

  void exception(const std::exception& error) {
    if (!primary) return;
    for (Callback* callback : built_in_callbacks())
      callback->on_exception(run, error);
    user_callbacks.exception(run, error);
  }

  // ---- state ----

  Checkpoint train_snapshot() const {
    LoopPosition position{run.global_step, std::nullopt};
    if (!train_feeds.empty()) position.dataloader = train_feeds.front().position();
    std::string metadata = nlohmann::json{
        {"version", "csrun"},
        {"model_name", setup.model_name},
        {"device", setup.device},
        {"params",
         setup.params_path}}.dump();
    return snapshot(*train, position, std::move(metadata));
  }

  std::optional<std::string> checkpoint_named(
      const std::optional<config::CheckpointChoice>& choice) {
    return checkpoint_to_load(setup.checkpoint_path, choice ? &*choice : nullptr,
                              settings.checkpoint, checkpoints, log);
  }

  // The variables from the checkpoint at `path` where it holds them (and the settings want
  // them), the others from their initializers: a resumed run draws no weights it overwrites.
  void load_into(Executable& executable, const std::optional<std::string>& path) {
    if (!path) {
      log.info("No checkpoint was provided. Using randomly initialized model parameters.");
      auto started = std::chrono::steady_clock::now();
      initialize_variables(executable, settings.seed);
      log.info("Initialized the variables in " + seconds_since(started) + " s.");
      return;
    }
    log.info("Loading weights from checkpoint " + *path);
    auto started = std::chrono::steady_clock::now();
    Restored restored = restore(executable, *path, settings.checkpoint);
    log.info("Read " + std::to_string(restored.variables.size()) + " variables from it in " +
             seconds_since(started) + " s.");
    if (!restored.parameters_not_loaded.empty()) log.warning(not_loaded_text(restored));
    initialize_variables(executable, settings.seed, restored.variables);
    const LoopPosition& position = restored.position;
    if (position.global_step) run.global_step = *position.global_step;
    if (position.dataloader) {
      for (BatchFeed& feed : train_feeds)
        feed.seek(*position.dataloader);
      note_position_past_epoch(*position.dataloader);
    }
  }

  // A checkpoint of another dataset (one that has since shrunk) may stand past this one's epoch:
  // the run goes on from the next epoch's start, as a position at an epoch's end does.
  void note_position_past_epoch(const data::BatchPosition& position) {
    if (train_feeds.empty()) return;
    std::int64_t samples = train_feeds.front().samples_per_epoch();
    if (position.sample <= samples) return;
    log.warning("The checkpoint's training data position, sample " +
                std::to_string(position.sample) + " of epoch " + std::to_string(position.epoch) +
                ", is past the end of this dataset's epoch of " + std::to_string(samples) +
                " samples (the data changed since it was written?): the run continues at the "
                "start of epoch " +
                std::to_string(position.epoch + 1));
  }

  std::unique_ptr<data::BatchSource> open_batches(const data::LoaderJob& job) {
    if (!setup.open_batches) return data::read_in_process(job);
    return setup.open_batches(job, [this](const std::string& text) { log.warning(text); });
  }

  // ---- training ----

  std::int64_t steps_to_run() const {
    const config::LoopSpec& loop = settings.loop;
    if (loop.num_steps) return *loop.num_steps;
    if (loop.max_steps) return std::max<std::int64_t>(0, *loop.max_steps - run.global_step);
    std::int64_t per_epoch = loop.steps_per_epoch.value_or(batches_per_epoch());
    return loop.num_epochs.value_or(1) * per_epoch;
  }

  // The training data's batches per epoch: every share has as many as the whole batch.
  std::int64_t batches_per_epoch() const { return train_feeds.front().batches_per_epoch(); }

  void open_train_batches() {
    for (const data::LoaderJob& job : train_jobs(setup))
      train_feeds.emplace_back(open_batches(job), job.batch_size);
    train_batch.resize(train_feeds.size());
  }

  // The next step's batch: each feed's share of it, valid until the next call.
  // A stop request while the data waits for workers that went away ends the wait, and the run
  // stops as between steps, at the step before this batch.
  std::span<const data::BatchView* const> next_train_batch() {
    std::size_t taken = 0;
    try {
      for (; taken < train_feeds.size(); ++taken)
        train_batch[taken] = &train_feeds[taken].next();
    } catch (const data::StoppedWaiting& stopped) {
      // The feeds read shares of the same batches: those that took this one give it back.
      for (std::size_t i = 0; i < taken; ++i)
        train_feeds[i].seek(train_feeds[taken].position());
      // The other ranks are in the step's collectives, where this rank cannot meet them.
      if (setup.group && setup.group->size() > 1)
        throw std::runtime_error(std::string(stopped.what()) +
                                 "; a rank cannot checkpoint alone, so a rerun resumes from "
                                 "the last checkpoint written");
      log.info("The run " + std::string(stopped.what()) + ".");
      stop();
    }
    return train_batch;
  }

  std::int64_t eval_every(std::int64_t total) const {
    const auto& frequency = settings.loop.eval_frequency;
    if (!frequency || !setup.eval || !setup.eval_loader) return 0;
    if (frequency->steps) return *frequency->steps;
    if (frequency->fraction)
      return std::max<std::int64_t>(
          1, static_cast<std::int64_t>(std::ceil(*frequency->fraction * total)));
    return 0;
  }

  FitResult fit() {
    if (!train || !setup.train_loader) throw std::logic_error("fit needs a training step");
    Executable& step = *train;
    start_profiling();
    open_train_batches();
    std::optional<BatchInputs> inputs;
    if (!micro_steps) inputs.emplace(setup.train->fields, step);
    load_into(step, checkpoint_named(settings.fit_checkpoint));
    std::int64_t total = steps_to_run();
    if (total == 0 && settings.loop.max_steps) {
      log.info("The run is at step " + std::to_string(run.global_step) + ", max_steps is " +
               std::to_string(*settings.loop.max_steps) + ": there is nothing left to train.");
    }
    for (BatchFeed& feed : train_feeds)
      feed.expect(total);
    std::int64_t every_eval = eval_every(total);
    std::optional<Executable::Slot> loss = output_slot(step, "loss");
    std::optional<Executable::Slot> lr = output_slot(step, "lr/0");
    std::optional<Executable::Slot> scale = output_slot(step, "loss_scale");
    std::int64_t per_epoch = settings.loop.steps_per_epoch.value_or(batches_per_epoch());
    run.epoch = run.global_step / per_epoch;
    start_train_batches(total);
    if (setup.train_micro_steps) {
      log.info(split_text(setup.train_micro_steps->split));
      if (!setup.train_micro_steps->why.empty())
        log.info("The micro-batch is smaller than configured: " + setup.train_micro_steps->why +
                 ".");
    }
    if (every_eval > 0) note_eval_split();
    call(&Callback::on_train_start);
    call(&Callback::on_train_epoch_start);
    double simulated_before = step.simulated_seconds();
    auto started = std::chrono::steady_clock::now();
    // A checkpoint written in the background reads the variables until the step changes them.
    const std::function<void()> before_state_changes = [this] {
      checkpointing.before_state_changes();
    };
    for (std::int64_t done = 1; done <= total; ++done) {
      run.done = done;
      run.batch = run.global_step % per_epoch + 1;
      call(&Callback::on_train_batch_start);
      std::span<const data::BatchView* const> batch = next_train_batch();
      if (micro_steps) {
        micro_steps->run(batch, step, before_state_changes);
        run.loss = micro_steps->loss();
      } else {
        inputs->write(step, *batch.front());
        step.run(before_state_changes);
        run.loss = step.scalar(*loss);
      }
      ++run.global_step;
      run.learning_rate = scalar_of(step, lr);
      run.loss_scale = scalar_of(step, scale);
      check_loss(run.loss);
      call(&Callback::on_train_batch_end);
      bool last = done == total;
      if (primary && every_eval > 0 && (done % every_eval == 0 || last)) run_eval();
      if (last || run.global_step % per_epoch == 0) end_train_epoch(last);
      if (!last && stop_requested()) stop();
    }
    run.simulated_seconds = step.simulated_seconds() - simulated_before;
    if (micro_steps && setup.group && setup.group->size() > 1) log_combining(started);
    if (setup.train_micro_steps)
      run.simulated_seconds =
          static_cast<double>(total) * setup.train_micro_steps->simulated_step_seconds;
    call(&Callback::on_train_end);
    write_host_profile();
    log.info("Training completed successfully!");
    return {run.global_step, run.loss, std::move(evaluations)};
  }

  // ---- --profile ----

  std::vector<Executable*> programs() {
    std::vector<Executable*> all;
    if (train) all.push_back(&*train);
    if (micro_steps) all.push_back(&micro_steps->micro_step());
    if (eval) all.push_back(&*eval);
    return all;
  }

  void start_profiling() {
    if (!setup.profile) return;
    for (Executable* program : programs())
      program->set_profiling(true);
  }

  std::string program_name(const Executable& program) const {
    if (eval && &program == &*eval) return "eval";
    if (micro_steps) return &program == &*train ? "update" : "micro-step";
    return "train";
  }

  void write_host_profile() {
    if (!setup.profile || !primary) return;
    std::vector<ProfiledProgram> profiled;
    for (Executable* program : programs()) {
      if (program->steps_run() > 0)
        profiled.push_back({program_name(*program), &program->plan(), program->host_profile()});
    }
    fs::path path = fs::path(log.directory()) / "host_profile.tsv";
    storage::write_file_atomically(path, host_profile_table(profiled));
    for (const std::string& line : host_profile_summary(profiled))
      log.info(line);
    log.info("Each host step's seconds: " + path.string() + ".");
  }

  // How much of the run the ranks spent adding up their gradients (waiting for each other
  // included): the cost of running the replicas as MPI ranks.
  void log_combining(std::chrono::steady_clock::time_point started) {
    double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    double combining = micro_steps->combining_seconds();
    char text[160];
    std::snprintf(text, sizeof text,
                  "The %d ranks spent %.3f s of the %.3f s of training (%.1f %%) combining their "
                  "gradients.",
                  setup.group->size(), combining, total,
                  total > 0.0 ? 100.0 * combining / total : 0.0);
    log.info(text);
  }

  void start_train_batches(std::int64_t total) {
    run.done = 0;
    run.total = total;
    run.batch_size = setup.train->plan.batch_size;
  }

  // This process was asked to stop (a signal).
  bool asked_to_stop() const { return setup.stop_requested && setup.stop_requested->load(); }

  // Collective in an MPI job: the ranks stop together when any of them was asked to.
  bool stop_requested() const {
    bool asked = asked_to_stop();
    return setup.group ? setup.group->any(asked) : asked;
  }

  // Ends fit between steps: the state of the step just taken is checkpointed (atomically, as
  // every checkpoint), so running the same command again resumes from it.
  [[noreturn]] void stop() {
    if (primary) checkpointing.save_unless_saved(run);
    std::string message = "Stopped at step " + std::to_string(run.global_step) +
                          " on request (SIGTERM or SIGINT), its checkpoint written; run the "
                          "same command again to resume.";
    log.info(message);
    throw StopRequested(message);
  }

  // The Model Zoo's epochs: steps_per_epoch steps (default: the batches of the dataset).
  void end_train_epoch(bool last) {
    call(&Callback::on_train_epoch_end);
    if (last) return;
    ++run.epoch;
    call(&Callback::on_train_epoch_start);
  }

  // An evaluation inside fit, of the weights trained so far; the training batch's state comes
  // back after it, with the evaluation's results.
  void run_eval() {
    for (const graph::Variable& variable : eval->plan().graph.variables()) {
      Executable::Slot slot = eval->slot(variable.name);
      if (!train->plan().graph.find_variable(variable.name)) continue;
      if (eval->borrowed(slot)) {
        eval->changed(slot);
        continue;
      }
      eval->write(slot, std::span<const double>(train->read(train->slot(variable.name))));
    }
    RunState training = run;
    // The training steps and the eval step hold their temporaries in turn, never together
    // (modes::plan_host_eval_batch sizes the eval step's host batches so).
    train->release_temporaries();
    if (micro_steps) micro_steps->micro_step().release_temporaries();
    std::optional<EvalResult> evaluated = evaluate();
    eval->release_temporaries();
    if (evaluated) evaluations.push_back(*evaluated);
    if (!evaluated) {
      log.info("Evaluation at step " + std::to_string(training.global_step) +
               " stopped on request after " + std::to_string(run.done) + " of " +
               std::to_string(run.total) + " batches; its metrics are not recorded.");
    }
    training.eval_loss = run.eval_loss;
    training.metrics = run.metrics;
    run = std::move(training);
  }

  // ---- evaluation ----

  // Once per run: the eval batch runs as host batches, and why.
  void note_eval_split() {
    if (!eval_split_logged && !setup.eval_host_batches.why.empty())
      log.info(setup.eval_host_batches.why);
    eval_split_logged = true;
  }

  // Null when the run was asked to stop while the data waited for workers that went away.
  static const data::BatchView* next_or_stopped(BatchFeed& feed) {
    try {
      return &feed.next();
    } catch (const data::StoppedWaiting&) {
      return nullptr;
    }
  }

  // Empty when the process was asked to stop: an evaluation can take hours, and a scheduler's
  // SIGTERM gives a run seconds; the training state it evaluates is unchanged, so fit stops (and
  // checkpoints) right after.
  std::optional<EvalResult> evaluate() {
    Executable& step = *eval;
    if (!eval_feed) {
      data::LoaderJob job = eval_job(setup);
      eval_feed.emplace(open_batches(job), job.batch_size);
    }
    BatchFeed& feed = *eval_feed;
    BatchInputs inputs(setup.eval->fields, step);
    std::int64_t batches = settings.loop.eval_steps.value_or(feed.batches_per_epoch());
    if (batches > feed.batches_per_epoch() && !eval_steps_clamp_logged) {
      log.warning("eval_steps is " + std::to_string(batches) + " and the eval data holds " +
                  std::to_string(feed.batches_per_epoch()) + " batches: each evaluation reads " +
                  "those once");
      eval_steps_clamp_logged = true;
    }
    batches = std::min(batches, feed.batches_per_epoch());
    feed.seek({});
    feed.expect(batches);
    MetricTotals totals(step, setup.eval->metric_averages);
    auto loss = step.slot("loss");
    run.batch = 0;
    run.done = 0;
    run.total = batches;
    run.batch_size = eval_batch_size(setup);
    note_eval_split();
    call(&Callback::on_eval_start);
    call(&Callback::on_eval_epoch_start);
    std::int64_t rows = step.plan().batch_size;
    for (std::int64_t b = 1; b <= batches; ++b) {
      if (asked_to_stop()) return std::nullopt;
      run.batch = run.done = b;
      call(&Callback::on_eval_batch_start);
      const data::BatchView* batch = next_or_stopped(feed);
      if (!batch) return std::nullopt;
      // The batch's loss, as a log line shows it: the mean of its runs' (each of as many rows).
      double batch_loss = 0.0;
      for (std::int64_t part = 0; part < setup.eval_host_batches.runs; ++part) {
        inputs.write(step, *batch, part * rows, rows);
        step.run();
        totals.add(step);
        double part_loss = step.scalar(loss);
        check_eval_loss(part_loss, b);
        batch_loss += part_loss;
      }
      run.loss = batch_loss / static_cast<double>(setup.eval_host_batches.runs);
      call(&Callback::on_eval_batch_end);
    }
    EvalResult result{run.global_step, 0.0, totals.averages(), ""};
    result.loss = result.metrics.at("loss");
    result.metrics.erase("loss");
    run.eval_loss = result.loss;
    run.metrics = result.metrics;
    call(&Callback::on_eval_epoch_end);
    call(&Callback::on_eval_end);
    log.info("Evaluation completed successfully!");
    return result;
  }

  std::vector<EvalResult> validate(const std::vector<std::string>& paths) {
    if (!eval || !setup.eval_loader) throw std::logic_error("validate needs an eval step");
    // It evaluates checkpoints, not the training step's weights: its eval step holds its own.
    if (train) eval.emplace(setup.eval->plan);
    start_profiling();
    std::vector<std::optional<std::string>> targets(paths.begin(), paths.end());
    if (targets.empty()) targets.push_back(checkpoint_named(settings.validate_checkpoint));
    bool initial_on_purpose =
        settings.validate_checkpoint &&
        settings.validate_checkpoint->kind == config::CheckpointChoice::Kind::none;
    if (!targets.front() && !initial_on_purpose) {
      log.warning(
          "No checkpoint to evaluate: the metrics below are those of the model's initial "
          "(random) weights. Give --checkpoint_path, or train into this model_dir "
          "first; validate.ckpt_path: null asks for the initial weights on purpose.");
    }
    std::vector<EvalResult> results;
    for (const auto& path : targets) {
      run.global_step = 0;
      load_into(*eval, path);
      std::optional<EvalResult> result = evaluate();
      if (!result) throw StopRequested("Stopped evaluating on request (SIGTERM or SIGINT).");
      result->checkpoint = path.value_or("");
      results.push_back(*result);
    }
    write_host_profile();
    return results;
  }
};

TrainingLoop::TrainingLoop(RunSetup setup, CallbackList callbacks)
    : state_(std::make_unique<State>(std::move(setup), std::move(callbacks))) {}
TrainingLoop::~TrainingLoop() = default;

FitResult TrainingLoop::fit() {
  try {
    return state_->fit();
  } catch (const std::exception& error) {
    state_->exception(error);
    throw;
  }
}

std::vector<EvalResult> TrainingLoop::validate(const std::vector<std::string>& checkpoints) {
  try {
    return state_->validate(checkpoints);
  } catch (const std::exception& error) {
    state_->exception(error);
    throw;
  }
}

}  // namespace csrun::runner
