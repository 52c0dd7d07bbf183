#pragma once

#include "diagnostics.hpp"
#include "node.hpp"

namespace csrun::config {

// Release 1.6's TensorFlow params files describe the same runs as the PyTorch legacy layout in
// other spellings and with other defaults. Rewrites such a file in the PyTorch legacy layout
// (train_input, eval_input, model, optimizer, runconfig as Release 1.9 writes them), with a
// warning or note for every key it translates; the legacy converter takes it from there.
// Internal to lib/config.
Node pytorch_layout_of_tensorflow(const Node& params, Diagnostics& diagnostics);

// The share of overflowing steps since the loss scale last changed above which TensorFlow's
// CSDynamicLossScale halves it: the optimizer's overflow_tolerance of a file in the TensorFlow
// layout (`written`, as written), 0.05 where it names none. The trainer format has no such key.
double tensorflow_overflow_tolerance(const Node& written, Diagnostics& diagnostics);

}  // namespace csrun::config
