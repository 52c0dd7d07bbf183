#include "modes.hpp"
#include "run_check.hpp"

namespace csrun::modes {

int eval(const RunOptions& options) {
  if (!validation_stage(options, "eval")) return 1;
  return stage_not_built("eval", "the wafer simulator and the evaluation loop");
}

}  // namespace csrun::modes
