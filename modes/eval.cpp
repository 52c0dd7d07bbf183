#include <iostream>

#include "modes.hpp"
#include "run_check.hpp"

namespace csrun::modes {

int eval(const RunOptions& options) {
  std::optional<CheckedRun> checked = validation_stage(options, "eval");
  if (!checked) return 1;
  std::optional<std::vector<PlannedTrainer>> planned = plan_stage(*checked, options, "eval");
  if (!planned) return 1;
  for (const PlannedTrainer& plan : *planned) {
    std::cerr << "csrun eval: plan " << plan.directory.string()
              << (plan.from_cache ? " (from the compile cache)" : " (compiled now)") << "\n";
  }
  return stage_not_built("eval", "the wafer simulator and the evaluation loop");
}

}  // namespace csrun::modes
