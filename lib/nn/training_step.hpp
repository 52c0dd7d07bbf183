#pragma once

#include <map>
#include <string>
#include <string_view>
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

// Dynamic loss scaling's bounds where the params give none, as cerebras.pytorch's GradScaler
// sets them: the scale starts at its maximum, 2^31 for cbfloat16 and 2^15 for float16, and stays
// at or above 2^-14.
double default_max_loss_scale(config::HalfType half);
inline constexpr double kDefaultMinLossScale = 1.0 / 16384.0;

// The schedulers' step: the learning rate is a closed form of it. It counts the updates taken,
// the global step every step.
inline constexpr std::string_view kScheduleStep = "lr_scheduler.last_epoch";

// Completes a traced forward pass into the training step, one graph: the learning rate (a closed
// form of the schedulers' step, kScheduleStep), loss scaling (static, or dynamic: scale, unscale,
// skip the update on non-finite gradients, grow every steps_per_increase), backward (autodiff),
// gradient clipping (by norm or by value), the optimizer update, the running moments' update,
// global_step + 1 and the schedulers' step + 1 where the update is taken. Outputs: loss, lr/0, and
// loss_scale and grad_norm when they apply. Throws std::invalid_argument for what csrun does
// not support yet.
void append_training_update(StepContext& context, const Tensor& loss,
                            const TrainingOptions& options,
                            const LearningRateScales& learning_rate_scales = {});

// The two halves of a training step whose global batch runs as several micro-steps, whose
// gradients the runner adds up before one update:
// - the micro-step: backward from `loss` (seeded with the loss scale: the constant factor, or the
//   input grad_scaler.scale under dynamic scaling), adds each gradient to the variable
//   gradient/<parameter> and the running moments' batch sums to batch_sum/<statistic> (role
//   gradient_sum, updated in the update phase), outputs loss;
// - the update: inputs gradient/<parameter> (the summed, still scaled gradients) for the
//   context's parameters, then what append_training_update does after the backward pass; the
//   context's running moments read the summed batch sums (inputs batch_sum/<statistic>).
void append_scaled_gradients(StepContext& context, const Tensor& loss,
                             const TrainingOptions& options);
void append_update_of_gradients(StepContext& context, const TrainingOptions& options,
                                const LearningRateScales& learning_rate_scales = {});
// The name of a parameter's gradient in those two halves, and of a statistic's batch sum.
std::string gradient_name(std::string_view parameter);
std::string batch_sum_name(std::string_view statistic);

}  // namespace csrun::nn
