#include "training_loop.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "checkpoint.hpp"
#include "config/yaml_writer.hpp"
#include "event_file.hpp"
#include "nn/initializers.hpp"
#include "run_log.hpp"
#include "runtime/executable.hpp"
#include "storage/atomic_file.hpp"

namespace csrun::runner {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using runtime::Executable;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The Model Zoo's rate format: 3 significant digits below 1, else 2 decimals.
std::string format_rate(double rate) {
  char text[64];
  std::snprintf(text, sizeof text, rate < 1.0 ? "%.3g" : "%.2f", rate);
  return text;
}

std::string format_loss(double loss) {
  char text[64];
  std::snprintf(text, sizeof text, "%.5f", loss);
  return text;
}

std::string dims_text(const std::vector<std::uint64_t>& dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

// A checkpoint entry loads into a model variable only with its exact shape and kind of number.
void check_fits(const CheckpointTensor& stored, const graph::TensorType& type,
                const std::string& key, const std::string& path) {
  std::vector<std::uint64_t> dims(type.shape.begin(), type.shape.end());
  if (stored.dims != dims) {
    throw CheckpointError("checkpoint " + path + ": '" + key + "' has shape " +
                          dims_text(stored.dims) + "; the model's is " + dims_text(dims));
  }
  bool integer_variable = !graph::is_floating(type.dtype);
  if (stored.integer != integer_variable) {
    throw CheckpointError("checkpoint " + path + ": '" + key + "' is stored as " +
                          (stored.integer ? "integers" : "floating-point numbers") +
                          "; the model's is " + type.to_string());
  }
}

void check_loss(double loss) {
  if (std::isfinite(loss)) return;
  throw std::runtime_error(std::string(std::isnan(loss) ? "NaN" : "inf") +
                           " loss detected. This could potentially be due to selected "
                           "hyperparameters such as the learning rate, batch size, etc. or it "
                           "could due an internal error. Please try with different set of "
                           "hyperparameters and contact Cerebras Support if the issue persists.");
}

// A dataloader's batches in the run's order, written into a step's inputs.
class BatchFeed {
 public:
  BatchFeed(std::unique_ptr<data::BatchSource> source, const StepProgram& program,
            const Executable& executable)
      : source_(std::move(source)),
        fields_(program.fields),
        cursor_(source_->samples(), program.plan.batch_size) {
    for (const data::SampleField& field : fields_)
      slots_.push_back(executable.slot(field.name));
  }

  std::int64_t batches_per_epoch() const { return cursor_.batches_per_epoch(); }
  data::BatchPosition position() const { return cursor_.position(); }
  void seek(data::BatchPosition at) { cursor_.seek(at); }
  // The next `count` batches will be read from the position on: the source may fetch ahead.
  void expect(std::int64_t count) { source_->seek(cursor_.position(), count); }

  void next(Executable& executable) {
    cursor_.take();
    const data::BatchView& batch = source_->next();
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      if (fields_[f].integer) {
        executable.write(slots_[f], batch.integers[f]);
      } else {
        executable.write(slots_[f], batch.floats[f]);
      }
    }
  }

 private:
  std::unique_ptr<data::BatchSource> source_;
  std::vector<data::SampleField> fields_;
  data::BatchCursor cursor_;
  std::vector<Executable::Slot> slots_;
};

// Host samples/s over the last log window and since the start.
struct RateMeter {
  Clock::time_point start = Clock::now();
  Clock::time_point window = start;
  std::int64_t samples = 0;
  std::int64_t window_samples = 0;

  void add(std::int64_t count) {
    samples += count;
    window_samples += count;
  }
  double local() {
    double rate = static_cast<double>(window_samples) / std::max(seconds_since(window), 1e-9);
    window = Clock::now();
    window_samples = 0;
    return rate;
  }
  double global() const {
    return static_cast<double>(samples) / std::max(seconds_since(start), 1e-9);
  }
};

std::optional<Executable::Slot> output_slot(const Executable& executable, const std::string& name) {
  if (!executable.plan().graph.find_output(name)) return std::nullopt;
  return executable.slot(name);
}

data::LoaderJob loader_job(const RunSetup& setup, const data::DataloaderSpec& loader,
                           const StepProgram& program) {
  return {loader, program.fields, program.plan.batch_size, setup.settings.seed};
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
  if (setup.train && setup.train_loader)
    jobs.push_back(loader_job(setup, *setup.train_loader, *setup.train));
  if (setup.eval && setup.eval_loader)
    jobs.push_back(loader_job(setup, *setup.eval_loader, *setup.eval));
  return jobs;
}

struct TrainingLoop::State {
  RunSetup setup;
  const LoopSettings& settings;
  CallbackList callbacks;
  RunLog log;
  RunState run;
  std::optional<Executable> train;
  std::optional<Executable> eval;
  std::optional<BatchFeed> train_feed;
  std::optional<BatchFeed> eval_feed;
  std::unique_ptr<EventFile> events;
  std::uint64_t seed;
  double train_host_seconds = 0.0;
  std::int64_t train_samples = 0;

  State(RunSetup run_setup, CallbackList hooks)
      : setup(std::move(run_setup)),
        settings(setup.settings),
        callbacks(std::move(hooks)),
        log(settings.model_dir, settings.logging.log_level),
        seed(settings.seed) {
    if (setup.train) train.emplace(setup.train->plan);
    if (setup.eval) eval.emplace(setup.eval->plan);
    storage::write_file_atomically(fs::path(log.directory()) / "trainer_params.yaml",
                                   config::to_yaml(settings.params));
    events = std::make_unique<EventFile>((fs::path(settings.model_dir) / "events").string());
  }

  // ---- state: initial values, checkpoints ----

  void initialize(Executable& executable) {
    for (const graph::Variable& variable : executable.plan().graph.variables()) {
      const graph::TensorType& type = executable.plan().graph.node(variable.node).type;
      executable.write(executable.slot(variable.name),
                       nn::initial_values(variable.init, type.shape, seed, variable.name));
    }
  }

  Checkpoint snapshot(const Executable& executable) const {
    Checkpoint checkpoint;
    for (const graph::Variable& variable : executable.plan().graph.variables()) {
      const graph::TensorType& type = executable.plan().graph.node(variable.node).type;
      CheckpointTensor tensor{std::vector<std::uint64_t>(type.shape.begin(), type.shape.end()),
                              type.dtype == graph::DType::i32,
                              executable.read(executable.slot(variable.name))};
      checkpoint.tensors[variable.name] = std::move(tensor);
    }
    auto scalar = [&](const std::string& key, std::int64_t value) {
      checkpoint.tensors[key] = CheckpointTensor{{}, true, {static_cast<double>(value)}};
    };
    scalar("global_step", run.global_step);
    scalar("lr_scheduler.last_epoch", run.global_step);
    if (train_feed) {
      scalar("dataloader.epoch", train_feed->position().epoch);
      scalar("dataloader.samples_in_epoch", train_feed->position().sample);
    }
    checkpoint.metadata = nlohmann::json{
        {"version", "csrun"},
        {"model_name", setup.model_name},
        {"device", setup.device},
        {"params",
         setup.params_path}}.dump();
    return checkpoint;
  }

  bool state_wanted(const std::string& key) const {
    const std::vector<std::string>& states = settings.checkpoint.load_checkpoint_states;
    if (states.empty()) return true;
    std::string top = key.substr(0, key.find('.'));
    if (top == "global_step") top = "lr_scheduler";
    return std::find(states.begin(), states.end(), top) != states.end();
  }

  void restore(Executable& executable, const Checkpoint& checkpoint, const std::string& path) {
    bool strict = !settings.checkpoint.disable_strict_checkpoint_loading;
    for (const graph::Variable& variable : executable.plan().graph.variables()) {
      if (!state_wanted(variable.name)) continue;
      auto found = checkpoint.tensors.find(variable.name);
      if (found == checkpoint.tensors.end()) {
        if (strict && variable.role == graph::VariableRole::parameter) {
          throw CheckpointError("checkpoint " + path + " has no entry '" + variable.name +
                                "' (set disable_strict_checkpoint_loading to start it from its "
                                "initial value)");
        }
        continue;
      }
      auto slot = executable.slot(variable.name);
      check_fits(found->second, executable.type(slot), variable.name, path);
      executable.write(slot, std::span<const double>(found->second.values));
    }
    if (state_wanted("global_step")) run.global_step = checkpoint.global_step();
    if (train_feed && state_wanted("dataloader.epoch")) {
      auto value = [&](const char* key) {
        auto found = checkpoint.tensors.find(key);
        return found == checkpoint.tensors.end()
                   ? 0
                   : static_cast<std::int64_t>(found->second.values[0]);
      };
      train_feed->seek({value("dataloader.epoch"), value("dataloader.samples_in_epoch")});
    }
  }

  fs::path checkpoint_directory() const {
    return settings.checkpoint.checkpoint_root.value_or(settings.model_dir);
  }

  // The checkpoint the params or --checkpoint_path name, or the latest in model_dir.
  std::optional<std::string> checkpoint_to_load(const config::CheckpointChoice* choice) {
    if (!setup.checkpoint_path.empty()) return setup.checkpoint_path;
    if (choice && choice->kind == config::CheckpointChoice::Kind::path) return choice->path;
    if ((choice && choice->kind == config::CheckpointChoice::Kind::none) ||
        !settings.checkpoint.autoload_last_checkpoint)
      return std::nullopt;
    std::string directory = checkpoint_directory().string();
    log.info("Checkpoint autoloading is enabled. Looking for latest checkpoint in \"" + directory +
             "\" directory with the following naming convention: "
             "`checkpoint_(step)(_timestamp)?.mdl`.");
    auto found = find_checkpoints(directory);
    if (found.empty()) {
      log.info("No checkpoints were found in \"" + directory + "\".");
      return std::nullopt;
    }
    log.info("Found latest checkpoint at \"" + found.back().second + "\".");
    return found.back().second;
  }

  void load_into(Executable& executable, const std::optional<std::string>& path) {
    if (!path) {
      log.info("No checkpoint was provided. Using randomly initialized model parameters.");
      return;
    }
    log.info("Loading weights from checkpoint " + *path);
    restore(executable, load_checkpoint(*path), *path);
  }

  void save(const Executable& executable) {
    std::string name = settings.checkpoint.checkpoint_name;
    auto placeholder = name.find("{step}");
    if (placeholder != std::string::npos)
      name.replace(placeholder, 6, std::to_string(run.global_step));
    fs::path path = checkpoint_directory() / name;
    if (fs::exists(path)) {
      // As the Model Zoo does: an existing checkpoint of this step is kept, the new one stamped.
      std::time_t now = std::time(nullptr);
      std::tm parts{};
      localtime_r(&now, &parts);
      char stamp[32];
      std::strftime(stamp, sizeof stamp, "_%Y%m%d_%H%M%S", &parts);
      path.replace_filename(path.stem().string() + stamp + path.extension().string());
    }
    fs::create_directories(path.parent_path());
    log.info("Saving checkpoint at step " + std::to_string(run.global_step));
    save_checkpoint(path.string(), snapshot(executable));
    log.info("Saved checkpoint " + path.string());
    prune_checkpoints();
  }

  void prune_checkpoints() {
    if (!settings.checkpoint.keep_last) return;
    auto found = find_checkpoints(checkpoint_directory().string());
    auto keep = static_cast<std::size_t>(*settings.checkpoint.keep_last);
    for (std::size_t i = 0; i + keep < found.size(); ++i)
      fs::remove(found[i].second);
  }

  // ---- training ----

  std::int64_t steps_to_run() const {
    const config::LoopSpec& loop = settings.loop;
    if (loop.num_steps) return *loop.num_steps;
    if (loop.max_steps) return std::max<std::int64_t>(0, *loop.max_steps - run.global_step);
    std::int64_t per_epoch = loop.steps_per_epoch.value_or(train_feed->batches_per_epoch());
    return loop.num_epochs.value_or(1) * per_epoch;
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

  void fit() {
    if (!train || !setup.train_loader) throw std::logic_error("fit needs a training step");
    initialize(*train);
    train_feed.emplace(open_batches(data::LoaderRole::train), *setup.train, *train);
    for (const std::string& path : remove_stale_checkpoint_files(checkpoint_directory()))
      log.warning("Removed " + path + ", left by a checkpoint write that was killed");
    load_into(*train,
              checkpoint_to_load(settings.fit_checkpoint ? &*settings.fit_checkpoint : nullptr));
    std::int64_t total = steps_to_run();
    if (total == 0 && settings.loop.max_steps) {
      log.info("The run is at step " + std::to_string(run.global_step) + ", max_steps is " +
               std::to_string(*settings.loop.max_steps) + ": there is nothing left to train.");
    }
    train_feed->expect(total);
    std::int64_t every_eval = eval_every(total);
    std::int64_t log_steps = std::max<std::int64_t>(1, settings.logging.log_steps);
    std::int64_t batch = setup.train->plan.batch_size;
    Executable& step = *train;
    auto loss_slot = step.slot("loss");
    std::optional<Executable::Slot> lr = output_slot(step, "lr/0");
    std::optional<Executable::Slot> scale = output_slot(step, "loss_scale");
    std::int64_t per_epoch =
        settings.loop.steps_per_epoch.value_or(train_feed->batches_per_epoch());
    run.epoch = run.global_step / per_epoch;
    callbacks.call(&Callback::on_train_start, run);
    callbacks.call(&Callback::on_train_epoch_start, run);
    RateMeter rate;
    double simulated_before = step.simulated_seconds();
    for (std::int64_t done = 1; done <= total; ++done) {
      run.batch = run.global_step % per_epoch + 1;
      callbacks.call(&Callback::on_train_batch_start, run);
      train_feed->next(step);
      step.run();
      ++run.global_step;
      rate.add(batch);
      run.loss = step.scalar(loss_slot);
      check_loss(run.loss);
      callbacks.call(&Callback::on_train_batch_end, run);
      if (log.progress().live())
        log.progress().show(progress_text("Train", done, total, run.loss, rate.global(),
                                          seconds_since(rate.start)));
      bool last = done == total;
      if (last || run.global_step % log_steps == 0) report_train_step(rate, lr, scale);
      bool saved = last || (settings.checkpoint.steps && *settings.checkpoint.steps > 0 &&
                            run.global_step % *settings.checkpoint.steps == 0);
      if (saved) save(step);
      if (every_eval > 0 && (done % every_eval == 0 || last)) run_eval();
      if (last || run.global_step % per_epoch == 0) end_train_epoch(last);
      if (!last && stop_requested()) stop(step, saved);
    }
    log.progress().finish();
    train_samples = rate.samples;
    train_host_seconds = seconds_since(rate.start);
    double simulated = step.simulated_seconds() - simulated_before;
    log.info("Processed " + std::to_string(train_samples) + " training sample(s) in " +
             format_rate(train_host_seconds) + " seconds.");
    if (simulated > 0.0) {
      log.info("Simulated " + setup.device + " time: " + format_rate(simulated) + " seconds, " +
               format_rate(static_cast<double>(train_samples) / simulated) +
               " samples/sec on the wafer model (host: " +
               format_rate(static_cast<double>(train_samples) / train_host_seconds) +
               " samples/sec).");
    }
    write_performance(simulated);
    callbacks.call(&Callback::on_train_end, run);
    log.info("Training completed successfully!");
  }

  std::unique_ptr<data::BatchSource> open_batches(data::LoaderRole role) {
    bool train_role = role == data::LoaderRole::train;
    data::LoaderJob job = train_role ? loader_job(setup, *setup.train_loader, *setup.train)
                                     : loader_job(setup, *setup.eval_loader, *setup.eval);
    if (!setup.open_batches) return data::read_in_process(job);
    return setup.open_batches(job, [this](const std::string& text) { log.warning(text); });
  }

  bool stop_requested() const { return setup.stop_requested && setup.stop_requested->load(); }

  // Ends fit between steps: the state of the step just taken is checkpointed (atomically, as
  // every checkpoint), so running the same command again resumes from it.
  [[noreturn]] void stop(const Executable& step, bool saved) {
    log.progress().finish();
    if (!saved) save(step);
    std::string message = "Stopped at step " + std::to_string(run.global_step) +
                          " on request (SIGTERM or SIGINT), its checkpoint written; run the "
                          "same command again to resume.";
    log.info(message);
    throw StopRequested(message);
  }

  // The Model Zoo's epochs: steps_per_epoch steps (default: the batches of the dataset).
  void end_train_epoch(bool last) {
    callbacks.call(&Callback::on_train_epoch_end, run);
    if (last) return;
    ++run.epoch;
    callbacks.call(&Callback::on_train_epoch_start, run);
  }

  void report_train_step(RateMeter& rate, std::optional<Executable::Slot> lr,
                         std::optional<Executable::Slot> scale) {
    double local = rate.local();
    double global = rate.global();
    log.info("| Train Device=" + setup.device + ", Step=" + std::to_string(run.global_step) +
             ", Loss=" + format_loss(run.loss) + ", Rate=" + format_rate(local) +
             " samples/sec, GlobalRate=" + format_rate(global) + " samples/sec");
    events->scalar("loss", run.loss, run.global_step);
    events->scalar("local_samples_per_sec", local, run.global_step);
    events->scalar("avg_samples_per_sec", global, run.global_step);
    if (lr) events->scalar("lr/0", train->scalar(*lr), run.global_step);
    if (scale) events->scalar("loss_scale", train->scalar(*scale), run.global_step);
    events->flush();
  }

  void write_performance(double simulated) const {
    nlohmann::json performance{
        {"device", setup.device},
        {"total_samples", train_samples},
        {"total_time", train_host_seconds},
        {"samples_per_sec", train_samples / std::max(train_host_seconds, 1e-9)},
        {"simulated_time", simulated},
        {"simulated_samples_per_sec",
         simulated > 0.0 ? nlohmann::json(train_samples / simulated) : nlohmann::json(nullptr)},
        {"global_step", run.global_step}};
    storage::write_file_atomically(fs::path(log.directory()) / "performance.json",
                                   performance.dump(2) + "\n");
  }

  // ---- evaluation ----

  void copy_weights_to_eval() {
    for (const graph::Variable& variable : eval->plan().graph.variables()) {
      if (!train->plan().graph.find_variable(variable.name)) continue;
      eval->write(eval->slot(variable.name),
                  std::span<const double>(train->read(train->slot(variable.name))));
    }
  }

  EvalResult run_eval() {
    copy_weights_to_eval();
    return evaluate();
  }

  bool geometric(const std::string& metric) const {
    auto found = setup.eval->metric_averages.find(metric);
    return found != setup.eval->metric_averages.end() &&
           found->second == nn::MetricAverage::geometric;
  }

  EvalResult evaluate() {
    Executable& step = *eval;
    if (!eval_feed) eval_feed.emplace(open_batches(data::LoaderRole::eval), *setup.eval, step);
    BatchFeed& feed = *eval_feed;
    std::int64_t batches = settings.loop.eval_steps.value_or(feed.batches_per_epoch());
    batches = std::min(batches, feed.batches_per_epoch());
    feed.seek({});
    feed.expect(batches);
    // Per output: its slot and whether it averages geometrically (the mean of its logs).
    std::vector<std::tuple<std::string, Executable::Slot, bool>> metrics;
    for (const graph::NamedNode& output : step.plan().graph.outputs())
      metrics.emplace_back(output.name, step.slot(output.name), geometric(output.name));
    std::map<std::string, double> totals;
    std::int64_t batch = setup.eval->plan.batch_size;
    RateMeter rate;
    run.batch = 0;
    callbacks.call(&Callback::on_eval_start, run);
    callbacks.call(&Callback::on_eval_epoch_start, run);
    for (std::int64_t b = 1; b <= batches; ++b) {
      run.batch = b;
      callbacks.call(&Callback::on_eval_batch_start, run);
      feed.next(step);
      step.run();
      rate.add(batch);
      for (const auto& [name, slot, logs] : metrics) {
        double value = step.scalar(slot);
        totals[name] += logs ? std::log(value) : value;
      }
      run.loss = step.scalar(step.slot("loss"));
      check_loss(run.loss);
      callbacks.call(&Callback::on_eval_batch_end, run);
      if (log.progress().live())
        log.progress().show(
            progress_text("Eval ", b, batches, run.loss, rate.global(), seconds_since(rate.start)));
      if (b == batches || b % std::max<std::int64_t>(1, settings.logging.log_steps) == 0) {
        log.info("| Eval Device=" + setup.device + ", GlobalStep=" +
                 std::to_string(run.global_step) + ", Batch=" + std::to_string(b) +
                 ", Loss=" + format_loss(run.loss) + ", Rate=" + format_rate(rate.local()) +
                 " samples/sec, GlobalRate=" + format_rate(rate.global()) + " samples/sec");
      }
    }
    EvalResult result{run.global_step, 0.0, {}};
    for (auto& [name, total] : totals) {
      double mean = total / static_cast<double>(std::max<std::int64_t>(batches, 1));
      if (geometric(name)) mean = std::exp(mean);
      if (name == "loss") {
        result.loss = mean;
      } else {
        result.metrics[name] = mean;
      }
    }
    log.progress().finish();
    callbacks.call(&Callback::on_eval_epoch_end, run);
    log.info("Avg Eval Loss: " + format_loss(result.loss));
    log.info("Evaluation metrics:");
    for (const auto& [name, value] : result.metrics)
      log.info("  - " + name + " = " + std::to_string(value));
    events->scalar("validate_0/loss", result.loss, run.global_step);
    for (const auto& [name, value] : result.metrics)
      events->scalar("validate_0/" + name, value, run.global_step);
    events->flush();
    run.metrics = result.metrics;
    callbacks.call(&Callback::on_eval_end, run);
    log.info("Evaluation completed successfully!");
    return result;
  }

  std::vector<EvalResult> validate(const std::vector<std::string>& checkpoints) {
    if (!eval || !setup.eval_loader) throw std::logic_error("validate needs an eval step");
    std::vector<std::optional<std::string>> targets(checkpoints.begin(), checkpoints.end());
    if (targets.empty())
      targets.push_back(checkpoint_to_load(
          settings.validate_checkpoint ? &*settings.validate_checkpoint : nullptr));
    std::vector<EvalResult> results;
    for (const auto& path : targets) {
      initialize(*eval);
      run.global_step = 0;
      load_into(*eval, path);
      results.push_back(evaluate());
    }
    return results;
  }
};

TrainingLoop::TrainingLoop(RunSetup setup, CallbackList callbacks)
    : state_(std::make_unique<State>(std::move(setup), std::move(callbacks))) {}
TrainingLoop::~TrainingLoop() = default;

void TrainingLoop::fit() {
  try {
    state_->fit();
  } catch (const std::exception& error) {
    state_->callbacks.exception(state_->run, error);
    throw;
  }
}

std::vector<EvalResult> TrainingLoop::validate(const std::vector<std::string>& checkpoints) {
  try {
    return state_->validate(checkpoints);
  } catch (const std::exception& error) {
    state_->callbacks.exception(state_->run, error);
    throw;
  }
}

}  // namespace csrun::runner
