#include "live_progress.hpp"

namespace csrun::runner {

void LiveProgress::show(const char* stage, const RunState& state, RateMeter& rate) {
  rate.add(state.batch_size);
  if (!log_.progress().live()) return;
  log_.progress().show(progress_text(stage, state.done, state.total, state.loss, rate.global(),
                                     rate.elapsed_seconds()));
}

}  // namespace csrun::runner
