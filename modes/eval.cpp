#include "modes.hpp"
#include "run_loop.hpp"

namespace csrun::modes {

int eval(const RunOptions& options) {
  return run_loop(options, LoopKind::eval);
}

}  // namespace csrun::modes
