#include "run_loop.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "compile_driver.hpp"
#include "data/sample_ledger.hpp"
#include "data_stream.hpp"
#include "graph/fingerprint.hpp"
#include "host_batch.hpp"
#include "host_steps.hpp"
#include "models/step_trace.hpp"
#include "plan_stage.hpp"
#include "replicas/replica_group.hpp"
#include "report.hpp"
#include "retrace_check.hpp"
#include "runner/callbacks.hpp"
#include "runner/checkpoint.hpp"
#include "runner/checkpoint_names.hpp"
#include "runner/model_dir.hpp"
#include "runner/runner_registry.hpp"
#include "runtime/host_kernels.hpp"
#include "stop_signal.hpp"
#include "validation_stage.hpp"

namespace csrun::modes {

namespace {

runner::StepProgram eval_program(const models::CheckedModel& model,
                                 const config::TrainerSpec& trainer, std::int64_t batch,
                                 const RunOptions& options) {
  models::TracedStep step =
      models::trace_step(model, batch, trace_options(trainer, models::StepKind::eval));
  std::vector<data::SampleField> fields = sample_fields(step.batch);
  return {plan_on_host(trainer, false, batch, std::move(step.graph), step.tokens_per_sample,
                       options, "the eval step"),
          std::move(fields), std::move(step.metric_averages)};
}

// The eval step of one system's share of the eval batch, in host batches when the whole share
// does not fit this machine's memory beside `beside_bytes` of training. The loop reads whole eval
// batches (eval_steps counts them, whatever num_csx is) and runs the systems' shares in turn.
void plan_eval(runner::RunSetup& setup, const CheckedTrainer& checked,
               const config::TrainerSpec& trainer, double beside_bytes, const RunOptions& options) {
  models::CheckedModel model = model_reading(*checked.model, *setup.eval_loader);
  std::int64_t systems = trainer.backend.cluster.num_csx;
  std::int64_t batch = setup.eval_loader->batch_size / systems;
  setup.eval = eval_program(model, trainer, batch, options);
  const compiler::Plan* training = setup.train ? &setup.train->plan : nullptr;
  HostBatch host = plan_host_eval_batch(setup.eval->plan, beside_bytes, training);
  if (training) check_eval_fits_host(host, beside_bytes, trainer);
  if (host.micro_steps > 1) setup.eval = eval_program(model, trainer, host.micro_batch, options);
  setup.eval_host_batches = {host.micro_steps * systems, host.reason};
}

// A global batch that runs as several micro-steps (num_csx replicas, micro_batch_size,
// grad_accum_steps): the micro-step and the update (`split`, planned for `host`) that `setup`
// runs instead of the fused step.
void use_micro_steps(runner::RunSetup& setup, const config::TrainerSpec& trainer,
                     const data::DataloaderSpec& loader, const HostBatch& host, SplitStep split) {
  std::int64_t micro_batch = host.micro_batch;
  std::int64_t replicas = trainer.backend.cluster.num_csx;
  runner::MicroSteps micro;
  micro.split = {replicas, micro_batch, loader.batch_size / replicas / micro_batch, 0, replicas};
  if (loader.accumulated_batches > 1)
    micro.split.accumulated_batch = loader.batch_size / loader.accumulated_batches;
  if (setup.group && setup.group->size() > 1) {
    micro.split.first_replica = setup.group->rank();
    micro.split.local_replicas = 1;
  }
  micro.normalizer_fields = std::move(split.normalizer_fields);
  // On several systems a step takes the cluster's time: the systems' steps and SwarmX's
  // broadcast of the weights and reduction of the gradients.
  const compiler::Estimate& estimate = setup.train->plan.mapping.estimate;
  micro.simulated_step_seconds =
      replicas > 1 ? estimate.cluster_step_seconds : estimate.step_seconds;
  micro.why = host.reason;
  micro.program = {std::move(split.micro_step), split.fields, {}};
  setup.train = runner::StepProgram{std::move(split.update), std::move(split.fields), {}};
  setup.train_micro_steps = std::move(micro);
}

runner::RunSetup setup_for(const CheckedRun& checked, const CheckedTrainer& trainer_check,
                           PlannedTrainer planned, const RunOptions& options, LoopKind kind,
                           const replicas::ReplicaGroup* group) {
  const config::TrainerSpec& trainer = checked.run.trainers.at(trainer_check.index);
  runner::RunSetup setup;
  setup.group = group;
  setup.settings = runner::LoopSettings::of(trainer);
  setup.device = config::device_name(trainer.backend.device);
  setup.model_name = trainer_check.model->definition->name;
  setup.params_path = checked.run.params_path;
  setup.async_checkpoint = options.async_checkpoint;
  setup.profile = options.profile;
  setup.checkpoint_path = options.checkpoint_path;
  bool plan_is_training = planned.plan.step == compiler::StepKind::train;
  double training_bytes = 0.0;
  // csrun eval runs the eval step alone: the training step's plan (its batch, its memory) and its
  // data are not loaded.
  if (plan_is_training && kind == LoopKind::train) {
    models::CheckedModel model = model_reading(*trainer_check.model, *trainer_check.train_loader);
    models::BatchLayout layout = models::batch_layout(model, planned.plan.batch_size);
    setup.train = runner::StepProgram{std::move(planned.plan), sample_fields(layout), {}};
    setup.train_loader = trainer_check.train_loader;
    TrainingOnHost training = training_on_host(trainer_check, trainer, setup.train->plan, options);
    check_fits_host(training.host, setup.train->plan, options.recompute_layers);
    if (training.split) {
      use_micro_steps(setup, trainer, *setup.train_loader, training.host,
                      std::move(*training.split));
    }
    // The training steps give their temporaries back while the run evaluates.
    training_bytes = training.host.bytes - training.host.temporary_bytes;
  }
  // fit evaluates with its own val_dataloader alone, as the Model Zoo's Trainer.fit does; a
  // validate section's loader serves csrun eval.
  bool fit_without_eval = kind == LoopKind::train && plan_is_training && trainer.fit &&
                          trainer.fit->val_dataloaders.empty();
  if (!trainer_check.eval_loaders.empty() && !fit_without_eval) {
    setup.eval_loader = trainer_check.eval_loaders.front();
    bool need_eval = kind == LoopKind::eval || trainer.loop.eval_frequency.has_value();
    if (!plan_is_training || need_eval)
      plan_eval(setup, trainer_check, trainer, training_bytes, options);
  }
  return setup;
}

// The params' callbacks csrun's registry knows, and the retrace check when it is asked for.
runner::CallbackList callbacks_for(const config::TrainerSpec& trainer,
                                   const CheckedTrainer& checked, std::int64_t batch_size) {
  runner::CallbackList callbacks;
  for (const config::ClassSpec& callback : trainer.callbacks) {
    if (!callback.disabled && runner::has_callback(callback.type))
      callbacks.add(runner::make_callback(callback.type, callback.params));
  }
  if (checked.traced_step && checked.train_loader) {
    callbacks.add(std::make_unique<RetraceCheck>(
        model_reading(*checked.model, *checked.train_loader), batch_size,
        trace_options(trainer, models::StepKind::train), *checked.traced_step));
  }
  return callbacks;
}

// eval --all: the checkpoints validate_all.ckpt_paths names (its patterns expanded), else every
// checkpoint of the run's checkpoint_name in its checkpoint directory, oldest first.
std::vector<std::string> checkpoints_to_evaluate(const config::TrainerSpec& trainer,
                                                 const RunOptions& options) {
  std::vector<std::string> paths;
  if (!options.all_checkpoints) return paths;
  if (trainer.validate_all && !trainer.validate_all->checkpoint_paths.empty()) {
    config::Diagnostics diagnostics;
    paths = runner::expand_checkpoint_patterns(trainer.validate_all->checkpoint_paths, diagnostics);
    if (diagnostics.has_errors()) throw std::runtime_error(diagnostics.all().front().to_string());
    return paths;
  }
  std::string directory = trainer.checkpoint.checkpoint_root.value_or(trainer.model_dir);
  runner::CheckpointNames names(trainer.checkpoint.checkpoint_name);
  for (const runner::CheckpointNames::Found& found : names.find(directory))
    paths.push_back(found.path);
  if (paths.empty()) {
    throw std::runtime_error("--all: no checkpoint named " + names.convention() + " in " +
                             directory + " (validate_all.ckpt_paths names others)");
  }
  return paths;
}

// What every trainer of a command shares.
struct LoopServices {
  const replicas::ReplicaGroup* group = nullptr;
  const std::atomic<bool>* stop_requested = nullptr;
  data::SampleLedger* ledger = nullptr;
  std::optional<stream::SrunTask> srun;
};

nlohmann::json evaluation_json(const runner::EvalResult& result) {
  nlohmann::json evaluation = {{"global_step", result.global_step}, {"loss", result.loss}};
  if (!result.checkpoint.empty()) evaluation["checkpoint"] = result.checkpoint;
  evaluation["metrics"] = nlohmann::json::object();
  for (const auto& [name, value] : result.metrics)
    evaluation["metrics"][name] = value;
  return evaluation;
}

nlohmann::json evaluations_json(const std::vector<runner::EvalResult>& results) {
  nlohmann::json evaluations = nlohmann::json::array();
  for (const runner::EvalResult& result : results)
    evaluations.push_back(evaluation_json(result));
  return evaluations;
}

// With --json, stdout holds one JSON document: what a run writes to stdout before it (its log
// lines, a library's prints, data workers' output) goes to stderr meanwhile.
class StdoutForJson {
 public:
  StdoutForJson() {
    std::cout.flush();
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  ~StdoutForJson() { restore(); }
  StdoutForJson(const StdoutForJson&) = delete;
  StdoutForJson& operator=(const StdoutForJson&) = delete;

  void write(const nlohmann::json& document) {
    restore();
    std::cout << document.dump(2) << "\n";
    std::cout.flush();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::cout.flush();
    std::fflush(stdout);
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
    saved_ = -1;
  }

  int saved_ = -1;
};

// Runs one trainer; what it trained to or evaluated goes to `result` (the --json document's).
int run_trainer(const CheckedRun& checked, const CheckedTrainer& trainer_check,
                PlannedTrainer planned, const RunOptions& options, LoopKind kind,
                const LoopServices& services, nlohmann::json& result) {
  const config::TrainerSpec& trainer = checked.run.trainers.at(trainer_check.index);
  if (kind == LoopKind::train && !trainer_check.train_loader) {
    std::cerr << "csrun train: trainer " << trainer_check.index + 1
              << " has no fit.train_dataloader (train_input): nothing to train\n";
    return 1;
  }
  if (kind == LoopKind::eval && trainer_check.eval_loaders.empty()) {
    std::cerr << "csrun eval: trainer " << trainer_check.index + 1
              << " has no validation dataloader (eval_input): nothing to evaluate\n";
    return 1;
  }
  const char* command = kind == LoopKind::train ? "csrun train" : "csrun eval";
  std::cerr << command << ": plan " << planned.directory.string()
            << (planned.from_cache ? " (from the compile cache)" : " (compiled now)")
            << (planned.recomputes_layers ? ", each layer's forward pass run again for its backward"
                                            " pass (--recompute_layers)"
                                          : "")
            << "\n";
  if (std::string slow_gemm = runtime::sgemm_warning(); !slow_gemm.empty())
    std::cerr << command << ": warning: " << slow_gemm << "\n";
  std::int64_t num_csx = trainer.backend.cluster.num_csx;
  bool ranks = services.group->size() > 1;
  // Evaluation has no replicas to combine: the first rank evaluates, the others have nothing to do.
  if (ranks && kind == LoopKind::eval && !services.group->primary()) return 0;
  if (ranks && num_csx != services.group->size()) {
    throw std::runtime_error("the MPI job has " + std::to_string(services.group->size()) +
                             " ranks and num_csx is " + std::to_string(num_csx) +
                             ": each rank runs one replica, so start as many ranks as num_csx "
                             "(mpirun -n " +
                             std::to_string(num_csx) + ")");
  }
  std::int64_t batch_size = planned.plan.batch_size;
  runner::RunSetup setup =
      setup_for(checked, trainer_check, std::move(planned), options, kind, services.group);
  setup.stop_requested = services.stop_requested;
  DataStream data_stream(
      trainer, setup,
      {trainer_check.index, trainer_check.index + 1 < checked.trainers.size(), services.ledger,
       services.srun, options.worker_binary, options.stream_listen});
  data_stream.connect(setup);
  std::unique_ptr<runner::Runner> runner =
      runner::make_runner(std::move(setup), callbacks_for(trainer, trainer_check, batch_size));
  result["model_dir"] = trainer.model_dir;
  if (kind == LoopKind::train) {
    runner::FitResult fitted = runner->fit();
    result["global_step"] = fitted.global_step;
    result["loss"] = fitted.loss;
    result["evaluations"] = evaluations_json(fitted.evaluations);
  } else {
    result["evaluations"] =
        evaluations_json(runner->validate(checkpoints_to_evaluate(trainer, options)));
  }
  return 0;
}

}  // namespace

int run_loop(const RunOptions& options, LoopKind kind) {
  const char* command = kind == LoopKind::train ? "train" : "eval";
  std::optional<CheckedRun> checked = validation_stage(options, command);
  if (!checked) return 1;
  if (!options.stream_listen.empty()) withdraw_earlier_rendezvous(checked->run.trainers);
  std::optional<replicas::ReplicaGroup> joined;
  try {
    joined.emplace(replicas::ReplicaGroup::join());
  } catch (const std::exception& error) {
    std::cerr << "csrun " << command << ": " << error.what() << "\n";
    return 1;
  }
  const replicas::ReplicaGroup& group = *joined;
  LoopServices services;
  services.group = &group;
  // Under an MPI launcher srun's tasks are ranks, not data workers.
  if (!replicas::started_by_mpi()) services.srun = stream::srun_task();
  if (services.srun && services.srun->rank > 0)
    return serve_srun_trainers(checked->run.trainers, *services.srun);
  std::optional<std::vector<PlannedTrainer>> planned = plan_stage(*checked, options, command);
  if (!planned) return 1;
  // Training stops between steps on SIGTERM or SIGINT, checkpointed; evaluation keeps the
  // signals' default action, as it has no state to save.
  std::optional<StopSignal> stop_signal;
  if (kind == LoopKind::train) stop_signal.emplace();
  if (stop_signal) services.stop_requested = &stop_signal->requested();
  std::optional<StdoutForJson> json_out;
  if (options.json) json_out.emplace();
  nlohmann::json document = {{"command", command},
                             {"params", options.params_path},
                             {"ok", false},
                             {"trainers", nlohmann::json::array()}};
  // Rank r > 0 of an MPI job neither evaluates nor writes the run's files: its document is
  // the first rank's to write.
  auto finish = [&](int status, const std::string& error = "") {
    document["ok"] = status == 0;
    if (!error.empty()) document["error"] = error;
    if (json_out && group.primary()) json_out->write(document);
    return status;
  };
  try {
    // Each rank of an MPI job reads only its replica's share, so each keeps its own ledger.
    std::optional<data::SampleLedger> ledger;
    if (!options.sample_ledger.empty()) {
      std::string path = options.sample_ledger;
      if (!group.primary()) path += ".rank" + std::to_string(group.rank());
      services.ledger = &ledger.emplace(path);
    }
    for (std::size_t i = 0; i < planned->size(); ++i) {
      nlohmann::json& result = document["trainers"].emplace_back(nlohmann::json::object());
      int status = run_trainer(*checked, checked->trainers[i], std::move((*planned)[i]), options,
                               kind, services, result);
      if (status != 0) return finish(status, "trainer " + std::to_string(i + 1) + " did not run");
    }
  } catch (const runner::StopRequested& stopped) {
    std::cerr << "csrun " << command << ": " << stopped.what() << "\n";
    return finish(kStoppedStatus, stopped.what());
  } catch (const std::exception& error) {
    std::cerr << "csrun " << command << ": " << error.what() << "\n";
    return finish(1, error.what());
  }
  return finish(0);
}

}  // namespace csrun::modes
