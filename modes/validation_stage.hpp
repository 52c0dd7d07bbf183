#pragma once

#include <optional>
#include <vector>

#include "compile_driver.hpp"
#include "config/run_spec.hpp"
#include "data/dataloader.hpp"
#include "models/registry.hpp"
#include "models/step_trace.hpp"
#include "modes.hpp"
#include "trace_summary.hpp"

namespace csrun::modes {

struct CheckedTrainer {
  std::size_t index = 0;
  std::optional<models::CheckedModel> model;
  std::optional<TraceSummary> trace;
  std::optional<graph::Graph> traced_step;  // kept for retrace_every_iteration only
  std::optional<CompiledTrainer> compiled;  // the compiler's front half, or a cached plan
  // Why the step is not traced (a network or a key csrun's builders do not implement yet):
  // validation warns, and compile and train refuse with this reason.
  std::string untraced_reason;
  std::optional<data::DataloaderSpec> train_loader;
  std::vector<data::DataloaderSpec> eval_loaders;
};

// How a trainer's step is traced: its seed and, for training, its optimizer, schedulers and
// precision.
models::TraceOptions trace_options(const config::TrainerSpec& trainer, models::StepKind kind);

// The model as it reads `loader`: a sequence model takes the loader's sequence length
// (max_sequence_length, else the length its files hold).
models::CheckedModel model_reading(models::CheckedModel model, const data::DataloaderSpec& loader);

// The result of the validation stage that every subcommand starts with.
struct CheckedRun {
  config::RunSpec run;
  std::vector<CheckedTrainer> trainers;
  config::Diagnostics diagnostics;
};

// Validation: the params (both formats, overrides), each trainer's model against the registry,
// its dataloaders against their processors and files, model_dir and checkpoint paths, and then
// (when all that holds) the model traced into its static step graph and compiled up to kernel
// matching (or its plan found in the compile cache). Every finding lands in `diagnostics`;
// nothing is written anywhere.
CheckedRun check_run(const RunOptions& options);

// Runs the validation stage for `command` and reports its findings (stderr, and stdout as JSON
// with --json when it fails). Returns the checked run when there was no error.
std::optional<CheckedRun> validation_stage(const RunOptions& options, const char* command);

}  // namespace csrun::modes
