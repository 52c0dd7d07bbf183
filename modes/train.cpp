#include "modes.hpp"
#include "run_loop.hpp"

namespace csrun::modes {

int train(const RunOptions& options) {
  return run_loop(options, LoopKind::train);
}

}  // namespace csrun::modes
