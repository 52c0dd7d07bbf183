#include "modes.hpp"
#include "run_check.hpp"

namespace csrun::modes {

int eval(const RunOptions& options) {
  return plan_then_stop(options, "eval", "the wafer simulator and the evaluation loop");
}

}  // namespace csrun::modes
