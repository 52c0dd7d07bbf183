#include "modes.hpp"
#include "run_check.hpp"

namespace csrun::modes {

int train(const RunOptions& options) {
  if (!validation_stage(options, "train")) return 1;
  return stage_not_built("train", "the wafer simulator and the training loop");
}

}  // namespace csrun::modes
