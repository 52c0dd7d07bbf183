#pragma once

#include <optional>
#include <vector>

#include "config/run_spec.hpp"
#include "data/dataloader.hpp"
#include "models/registry.hpp"
#include "models/step_trace.hpp"
#include "modes.hpp"

namespace csrun::modes {

// What tracing the model's step produced (validation keeps the numbers, not the graph).
struct TraceSummary {
  bool training = true;
  std::int64_t batch_size = 0;  // per system
  std::size_t ops = 0;
  std::int64_t parameters = 0;
  double flops = 0.0;  // of one step on one system
  std::string fingerprint;
};

struct CheckedTrainer {
  std::size_t index = 0;
  std::optional<models::CheckedModel> model;
  std::optional<TraceSummary> trace;
  std::optional<data::DataloaderSpec> train_loader;
  std::vector<data::DataloaderSpec> eval_loaders;
};

// The result of the validation stage that every subcommand starts with.
struct CheckedRun {
  config::RunSpec run;
  std::vector<CheckedTrainer> trainers;
  config::Diagnostics diagnostics;
};

// Validation: the params (both formats, overrides), each trainer's model against the registry,
// its dataloaders against their processors and files, model_dir and checkpoint paths, and then
// (when all that holds) the model traced into its static step graph. Every finding lands in
// `diagnostics`; nothing is written anywhere.
CheckedRun check_run(const RunOptions& options);

// Runs the validation stage for `command` and reports its findings (stderr, and stdout as JSON
// with --json when it fails). Returns the checked run when there was no error.
std::optional<CheckedRun> validation_stage(const RunOptions& options, const char* command);

// Reports that a subcommand's stages after validation are not part of this build; returns 1.
int stage_not_built(const char* command, const char* stages);

}  // namespace csrun::modes
