#include "modes.hpp"
#include "run_check.hpp"

namespace csrun::modes {

int compile(const RunOptions& options) {
  if (!validation_stage(options, "compile")) return 1;
  return stage_not_built(
      "compile",
      "tracing the model, kernel matching, placement on the wafer and the performance estimate");
}

}  // namespace csrun::modes
