#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/run_spec.hpp"
#include "graph/tensor.hpp"
#include "scope.hpp"

namespace csrun::nn {

using graph::Tensor;

struct TrainingOptions {
  config::ClassSpec optimizer;
  std::vector<config::ClassSpec> schedulers;
  config::PrecisionSpec precision;
};

// The factor each parameter's learning rate takes (muP's per-group rates, the Model Zoo's
// adjust_learning_rate), by parameter name; parameters not named keep the schedule's rate.
using LearningRateScales = std::map<std::string, double>;

// Initial loss scale of dynamic scaling when the params give none (the Model Zoo's legacy
// default, 2^15).
inline constexpr double kDefaultInitialLossScale = 32768.0;

// Completes a traced forward pass into the training step, one graph: the learning rate (a closed
// form of the global step), loss scaling (static, or dynamic: scale, unscale, skip the update on
// non-finite gradients, grow every steps_per_increase), backward (autodiff), gradient clipping
// (by norm or by value), the optimizer update and global_step + 1. Outputs: loss, lr/0, and
// loss_scale and grad_norm when they apply. Throws std::invalid_argument for what csrun does
// not support yet.
void append_training_update(StepContext& context, const Tensor& loss,
                            const TrainingOptions& options,
                            const LearningRateScales& learning_rate_scales = {});

}  // namespace csrun::nn
