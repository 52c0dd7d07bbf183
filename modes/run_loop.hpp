#pragma once

#include "modes.hpp"

namespace csrun::modes {

enum class LoopKind { train, eval };

// csrun train and csrun eval after the plan stage: each trainer's steps compiled (the training
// step from the plan cache, the eval step alongside), then the Model Zoo's loop on the wafer
// simulator. Returns the exit status; errors are reported on stderr.
int run_loop(const RunOptions& options, LoopKind kind);

}  // namespace csrun::modes
