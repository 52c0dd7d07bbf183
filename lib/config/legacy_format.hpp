#pragma once

#include "diagnostics.hpp"
#include "node.hpp"

namespace csrun::config {

// Converts legacy params (train_input, eval_input, model, optimizer, runconfig, sparsity,
// csconfig) into one trainer in the trainer format ({init, fit, validate, validate_all}) with
// the Model Zoo's legacy-to-trainer key mapping. Values keep their legacy key paths and
// positions, so later findings still point at what the user wrote.
// Release 1.6's TensorFlow layout: a legacy file whose runconfig has a TF Estimator key no
// PyTorch release took (save_checkpoints_steps, log_step_count_steps, tf_random_seed).
bool is_tensorflow_layout(const Node& params);

Node convert_legacy_params(const Node& params, Diagnostics& diagnostics);

// Converts runconfig keys alone (what CLI flags set) into a partial trainer, with the same
// mapping; checkpoint_path lands in fit, validate and validate_all.
Node convert_runconfig_keys(const Node& runconfig, Diagnostics& diagnostics);

}  // namespace csrun::config
