#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "accumulated_step.hpp"
#include "callbacks.hpp"
#include "compiler/plan.hpp"
#include "config/run_spec.hpp"
#include "data/batch_source.hpp"
#include "data/dataloader.hpp"
#include "data/dataset.hpp"
#include "nn/metric.hpp"

namespace csrun::runner {

// A compiled step and the batch it reads.
struct StepProgram {
  compiler::Plan plan;
  std::vector<data::SampleField> fields;
  // How an eval step's metrics average over an evaluation, as the model declares them; an output
  // not listed (the loss) is a mean.
  std::map<std::string, nn::MetricAverage> metric_averages;
};

// An eval batch runs as `runs` runs of the eval plan's batch_size samples each (its metrics
// then average over those runs): each system's share in turn, and each share in host batches
// where it is too large for this machine's memory, which `why` says.
struct HostBatches {
  std::int64_t runs = 1;
  std::string why;
};

// A training step whose global batch runs as micro-steps (AccumulatedStep): the micro-step
// program, how the batch splits, and the batch fields its loss averages over. The RunSetup's
// `train` program is then the update alone; its plan's batch_size is the global batch.
struct MicroSteps {
  StepProgram program;
  BatchSplit split;
  std::vector<std::string> normalizer_fields;
  // The wafer's estimate of one whole step (the plan stage's), for the simulated time.
  double simulated_step_seconds = 0.0;
  std::string why;  // why the micro-batch is smaller than configured (host memory); or empty
};

// The trainer's settings the runner reads, and nothing else of the params: where the run's files
// go, its seed, its loop, checkpoint and logging sections, the checkpoints fit and validate name,
// and the trainer as read (written to trainer_params.yaml).
struct LoopSettings {
  std::string model_dir;
  std::uint64_t seed = 0;
  config::LoopSpec loop;
  config::CheckpointSpec checkpoint;
  config::LoggingSpec logging;
  std::optional<config::CheckpointChoice> fit_checkpoint;
  std::optional<config::CheckpointChoice> validate_checkpoint;
  config::Node params;

  static LoopSettings of(const config::TrainerSpec& trainer);
};

// What a run needs, prepared by the subcommand: the trainer's settings, its compiled train and
// eval steps and their dataloaders.
struct RunSetup {
  LoopSettings settings;
  std::string device;  // as log lines name it: CSX, CPU
  std::string model_name;
  std::string params_path;
  std::optional<StepProgram> train;
  std::optional<MicroSteps> train_micro_steps;
  std::optional<StepProgram> eval;
  HostBatches eval_host_batches;
  std::optional<data::DataloaderSpec> train_loader;
  std::optional<data::DataloaderSpec> eval_loader;
  std::string checkpoint_path;    // --checkpoint_path; empty: what the params say
  bool async_checkpoint = false;  // --async_checkpoint: checkpoints written in the background
  // --profile: each program times its host steps after its first run; fit and validate write
  // model_dir/host_profile.tsv and a summary to the log (host_profile.hpp).
  bool profile = false;
  // The ranks of an MPI job this process is one of (null: this process alone). Every rank runs
  // the loop; only the first writes the run's files (log, events, checkpoints) and evaluates.
  const replicas::ReplicaGroup* group = nullptr;
  // Set (from a signal handler) when the run must end early: fit checkpoints after the step in
  // progress and throws StopRequested. Null: the run cannot be stopped this way.
  const std::atomic<bool>* stop_requested = nullptr;
  // Opens the batches of one of loader_jobs(): streamed from data workers, for example; what
  // happens to the stream while they are open (a worker that died) goes to `warn`, the run's
  // log. Empty: the loop reads its datasets in this process.
  std::function<std::unique_ptr<data::BatchSource>(
      const data::LoaderJob&, const std::function<void(const std::string&)>& warn)>
      open_batches;
};

// What this process's dataloaders produce (train first, then eval; those the setup has): a
// process that opens them produces exactly the batches the loop would read itself. When the
// global batch is shared among num_csx replicas, there is one training job per replica this
// process runs, each producing only its replica's share; the eval job comes only where the run
// evaluates (in one process, or on an MPI job's first rank).
std::vector<data::LoaderJob> loader_jobs(const RunSetup& setup);

// fit ended early because stop_requested was set; the checkpoint of the last step is written.
class StopRequested : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EvalResult {
  std::int64_t global_step = 0;
  double loss = 0.0;
  std::map<std::string, double> metrics;
  std::string checkpoint;  // the file evaluated; empty: the weights of the run at global_step
};

// Where fit ended: its step, the last step's loss, and the evaluations it ran, in order.
struct FitResult {
  std::int64_t global_step = 0;
  double loss = 0.0;
  std::vector<EvalResult> evaluations;
};

// What runs a trainer's loops on a device (runner_registry.hpp makes one per device).
class Runner {
 public:
  virtual ~Runner() = default;
  // Trains: the fit loop with evaluation, checkpoints, logs and events.
  virtual FitResult fit() = 0;
  // Evaluates each checkpoint (empty: the one the params and model_dir name).
  virtual std::vector<EvalResult> validate(const std::vector<std::string>& checkpoints) = 0;
};

// The Model Zoo's loops on the wafer simulator: fit (train, with evaluation interleaved at
// eval_frequency, checkpoints at checkpoint steps and the last step) and validate (one
// checkpoint or each of several). Writes model_dir's logs, events, checkpoints and
// performance.json. Throws std::runtime_error (CheckpointError, a NaN loss, unreadable data)
// with a message for the user.
class TrainingLoop : public Runner {
 public:
  TrainingLoop(RunSetup setup, CallbackList callbacks);
  ~TrainingLoop() override;
  TrainingLoop(const TrainingLoop&) = delete;
  TrainingLoop& operator=(const TrainingLoop&) = delete;

  FitResult fit() override;
  std::vector<EvalResult> validate(const std::vector<std::string>& checkpoints) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace csrun::runner
