#include "modes.hpp"
#include "run_check.hpp"

namespace csrun::modes {

int train(const RunOptions& options) {
  return plan_then_stop(options, "train", "the wafer simulator and the training loop");
}

}  // namespace csrun::modes
