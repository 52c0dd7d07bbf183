#include <iostream>

#include "modes.hpp"
#include "run_check.hpp"

namespace csrun::modes {

int train(const RunOptions& options) {
  std::optional<CheckedRun> checked = validation_stage(options, "train");
  if (!checked) return 1;
  std::optional<std::vector<PlannedTrainer>> planned = plan_stage(*checked, options, "train");
  if (!planned) return 1;
  for (const PlannedTrainer& plan : *planned) {
    std::cerr << "csrun train: plan " << plan.directory.string()
              << (plan.from_cache ? " (from the compile cache)" : " (compiled now)") << "\n";
  }
  return stage_not_built("train", "the wafer simulator and the training loop");
}

}  // namespace csrun::modes
