#include "training_step.hpp"

#include <algorithm>
#include <memory>
#include <optional>

#include "graph/autodiff.hpp"
#include "lr_schedule.hpp"
#include "optimizer.hpp"

namespace csrun::nn {

namespace {

using graph::DType;
using graph::Graph;

// The loss scale of this step and how it changes after it.
struct LossScale {
  Tensor scale;
  std::optional<Tensor> finite;  // dynamic scaling: whether every gradient is finite
};

// With dynamic loss scaling the norm is 0 when a gradient is not finite (the update is skipped),
// as if taken over the zeroed gradients; taken over them as they are, it reads each gradient in
// the same pass as the finite check, which the zeroing would otherwise have to wait for.
Tensor global_norm(const std::vector<Tensor>& gradients, const std::optional<Tensor>& finite) {
  Tensor total = constant(gradients.front().graph(), 0.0);
  for (const Tensor& g : gradients)
    total = total + sum(g * g);
  if (finite) total = where(*finite, total, 0.0);
  return sqrt(total);
}

Tensor all_finite(const std::vector<Tensor>& gradients) {
  Tensor bad = constant(gradients.front().graph(), 0.0);
  for (const Tensor& g : gradients)
    bad = bad + sum(cast(logical_not(is_finite(g)), DType::f32));
  return equal(bad, 0.0);
}

double max_loss_scale(const config::PrecisionSpec& precision) {
  return precision.loss_scaling.max_loss_scale.value_or(
      default_max_loss_scale(precision.fp16_type));
}

// The loss scale within [min_loss_scale, max_loss_scale].
Tensor bounded_scale(const Tensor& scale, const config::PrecisionSpec& precision) {
  return maximum(minimum(scale, max_loss_scale(precision)),
                 precision.loss_scaling.min_loss_scale.value_or(kDefaultMinLossScale));
}

// cerebras.pytorch's GradScaler: a step with a non-finite gradient halves the scale; the step
// after steps_per_increase finite ones since the scale last changed doubles it; the scale stays
// within [min_loss_scale, max_loss_scale]. The tracker counts the steps since the last change.
void update_dynamic_scale(Graph& graph, const config::PrecisionSpec& precision, const Tensor& scale,
                          const Tensor& finite) {
  const config::LossScaling& settings = precision.loss_scaling;
  Tensor tracker(graph, graph.find_variable("grad_scaler.growth_tracker")->node);
  Tensor steps = tracker + 1.0;
  Tensor grow = logical_and(finite, steps > static_cast<double>(settings.steps_per_increase));
  Tensor kept_or_grown = where(grow, scale * 2.0, scale);
  Tensor changed = where(finite, kept_or_grown, scale * 0.5);
  graph.set_update("grad_scaler.scale", bounded_scale(changed, precision).id());
  graph.set_update("grad_scaler.growth_tracker",
                   where(logical_and(finite, logical_not(grow)), steps, 0.0).id());
}

// TensorFlow's CSDynamicLossScale (the TensorFlow layout of Model Zoo 1.6): the scale halves
// only when more than overflow_tolerance of the steps since it last changed overflowed (an
// overflowing step is skipped all the same), and doubles at the steps_per_increase-th step
// since then, overflowing ones counted; either change restarts both counts. The tracker counts
// the steps, grad_scaler.overflows the overflowing ones.
void update_tensorflow_scale(Graph& graph, const config::PrecisionSpec& precision,
                             const Tensor& scale, const Tensor& finite) {
  const config::LossScaling& settings = precision.loss_scaling;
  Tensor tracker(graph, graph.find_variable("grad_scaler.growth_tracker")->node);
  Tensor overflow_count(graph, graph.find_variable("grad_scaler.overflows")->node);
  Tensor steps = tracker + 1.0;
  Tensor overflows = overflow_count + cast(logical_not(finite), DType::i32);
  Tensor share = cast(overflows, DType::f32);
  share = share / cast(steps, DType::f32);
  Tensor shrink = share > *settings.overflow_tolerance;
  Tensor steps_kept = where(shrink, 0.0, steps);
  Tensor overflows_kept = where(shrink, 0.0, overflows);
  Tensor shrunk = where(shrink, scale * 0.5, scale);
  Tensor grow = steps_kept >= static_cast<double>(settings.steps_per_increase);
  Tensor changed = where(grow, shrunk * 2.0, shrunk);
  graph.set_update("grad_scaler.scale", bounded_scale(changed, precision).id());
  graph.set_update("grad_scaler.growth_tracker", where(grow, 0.0, steps_kept).id());
  graph.set_update("grad_scaler.overflows", where(grow, 0.0, overflows_kept).id());
}

LossScale make_loss_scale(Graph& graph, const config::PrecisionSpec& precision) {
  const config::LossScaling& settings = precision.loss_scaling;
  if (!settings.dynamic)
    return {constant(graph, precision.enabled ? settings.factor : 1.0), std::nullopt};
  graph::Initializer start;
  start.name = "constant";
  double highest = max_loss_scale(precision);
  start.value = std::min(settings.initial_loss_scale.value_or(highest), highest);
  Tensor scale(graph, graph.add_variable("grad_scaler.scale", {{}, DType::f32},
                                         graph::VariableRole::loss_scaling, start));
  graph.add_variable("grad_scaler.growth_tracker", {{}, DType::i32},
                     graph::VariableRole::loss_scaling, {});
  if (settings.overflow_tolerance) {
    graph.add_variable("grad_scaler.overflows", {{}, DType::i32}, graph::VariableRole::loss_scaling,
                       {});
  }
  return {scale, std::nullopt};
}

// The unscaled gradients, zeroed when `finite` says one is not finite, then clipped.
std::vector<Tensor> clipped(std::vector<Tensor> gradients, const config::PrecisionSpec& precision,
                            const std::optional<Tensor>& finite, Graph& graph) {
  std::optional<Tensor> norm;
  if (precision.max_gradient_norm) norm = global_norm(gradients, finite);
  // Zero non-finite gradients so nothing downstream turns NaN; the update is skipped anyway.
  if (finite) {
    for (Tensor& g : gradients)
      g = where(*finite, g, 0.0);
  }
  if (norm) {
    graph.add_output("grad_norm", norm->id());
    // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
    Tensor factor = minimum(*precision.max_gradient_norm / (*norm + 1e-6), 1.0);
    for (Tensor& g : gradients)
      g = g * factor;
  } else if (precision.max_gradient_value) {
    double limit = *precision.max_gradient_value;
    for (Tensor& g : gradients)
      g = minimum(maximum(g, -limit), limit);
  }
  return gradients;
}

// Each parameter's learning rate, the schedule's times its scale where it has one (one node per
// distinct scale), and whether weight decay applies to it.
std::vector<UpdateGroup> update_groups(const StepContext& context, const Tensor& lr,
                                       const LearningRateScales& scales) {
  std::map<double, Tensor> scaled = {{1.0, lr}};
  std::vector<UpdateGroup> groups;
  for (const Tensor& parameter : context.parameters()) {
    const std::string& name = parameter.graph().leaf_name(parameter.id());
    auto found = scales.find(name);
    double scale = found == scales.end() ? 1.0 : found->second;
    auto [at, inserted] = scaled.try_emplace(scale, lr);
    if (inserted) at->second = lr * scale;
    groups.push_back({at->second, context.takes_weight_decay(name)});
  }
  return groups;
}

}  // namespace

namespace {

// The update from gradients of the loss times `loss_scale.scale`: unscaling, the finite check and
// clipping (they see every gradient), the optimizer with each parameter's learning rate, the
// loss scale's own update, global_step + 1 and the schedulers' step + 1, which a step skipped for
// non-finite gradients leaves (cerebras.pytorch's schedulers count only the steps taken). Outputs
// the loss when given, then lr/0 and the loss scale.
void append_update(StepContext& context, std::vector<Tensor> gradients, LossScale loss_scale,
                   Optimizer& optimizer, const Tensor& schedule_step, const Tensor& lr,
                   const TrainingOptions& options, const LearningRateScales& learning_rate_scales,
                   const std::optional<Tensor>& loss) {
  Graph& graph = context.graph();
  const std::vector<Tensor>& parameters = context.parameters();
  graph.set_phase(graph::Phase::update);
  for (Tensor& g : gradients)
    g = g / loss_scale.scale;
  if (options.precision.loss_scaling.dynamic) loss_scale.finite = all_finite(gradients);
  gradients = clipped(std::move(gradients), options.precision, loss_scale.finite, graph);
  optimizer.update(graph, parameters, gradients, update_groups(context, lr, learning_rate_scales),
                   context.global_step(), loss_scale.finite);
  if (loss_scale.finite && options.precision.loss_scaling.overflow_tolerance) {
    update_tensorflow_scale(graph, options.precision, loss_scale.scale, *loss_scale.finite);
  } else if (loss_scale.finite) {
    update_dynamic_scale(graph, options.precision, loss_scale.scale, *loss_scale.finite);
  }
  graph.set_update("global_step", (context.global_step() + 1.0).id());
  Tensor next_schedule_step = schedule_step + 1.0;
  if (loss_scale.finite)
    next_schedule_step = where(*loss_scale.finite, next_schedule_step, schedule_step);
  graph.set_update(std::string(kScheduleStep), next_schedule_step.id());
  if (loss) graph.add_output("loss", loss->id());
  graph.add_output("lr/0", lr.id());
  if (options.precision.loss_scaling.dynamic || options.precision.loss_scaling.factor != 1.0) {
    graph.add_output("loss_scale", loss_scale.scale.id());
  }
}

// The optimizer with its state created, the schedulers' step and the learning rate of the step.
struct OptimizerStart {
  std::unique_ptr<Optimizer> optimizer;
  Tensor schedule_step;
  Tensor lr;
};

OptimizerStart start_optimizer(StepContext& context, const TrainingOptions& options) {
  Graph& graph = context.graph();
  std::unique_ptr<Optimizer> optimizer = make_optimizer(options.optimizer);
  graph.set_phase(graph::Phase::update);
  optimizer->preinitialize(graph, context.parameters());
  Tensor schedule_step(graph, graph.add_variable(std::string(kScheduleStep), {{}, DType::i32},
                                                 graph::VariableRole::step_counter, {}));
  Tensor lr = learning_rate(graph, options.schedulers, cast(schedule_step, DType::f32),
                            optimizer_learning_rate(options.optimizer));
  return {std::move(optimizer), schedule_step, lr};
}

}  // namespace

double default_max_loss_scale(config::HalfType half) {
  return half == config::HalfType::cbfloat16 ? 2147483648.0 : 32768.0;
}

std::string gradient_name(std::string_view parameter) {
  return "gradient/" + std::string(parameter);
}

std::string batch_sum_name(std::string_view statistic) {
  return "batch_sum/" + std::string(statistic);
}

namespace {

// The running moments' updates from their batch sums.
void update_running_moments(const StepContext& context) {
  Graph& graph = context.graph();
  graph.set_phase(graph::Phase::update);
  for (const RunningMoments& moments : context.running_moments()) {
    Tensor mean = moments.sum / moments.count;
    Tensor squared_mean = mean * mean;
    Tensor variance = moments.sum_of_squares / moments.count - squared_mean;
    // PyTorch keeps the unbiased variance (it normalizes with the biased one).
    if (moments.count > 1.0) variance = variance * (moments.count / (moments.count - 1.0));
    double keep = 1.0 - moments.momentum;
    Tensor new_mean = mean * moments.momentum;
    graph.set_update(graph.leaf_name(moments.mean.id()), (moments.mean * keep + new_mean).id());
    Tensor new_variance = variance * moments.momentum;
    graph.set_update(graph.leaf_name(moments.variance.id()),
                     (moments.variance * keep + new_variance).id());
  }
}

// A variable of role gradient_sum named `name`, shaped as `like`, that a split batch's
// micro-steps add a value to (add_to_sums). It is traced before the backward pass, so that the
// addition can follow the value at once: compiler pass schedule-updates moves an update to where
// its operands are.
Tensor sum_variable(Graph& graph, const std::string& name, const Tensor& like) {
  return Tensor(graph, graph.add_variable(name, graph.node(like.id()).type,
                                          graph::VariableRole::gradient_sum, {}));
}

// Each value added to its sum as an update, so the micro-step frees each gradient once it is
// added instead of returning them all at its end. The runner starts a sum at -0.0, which
// `-0.0 + x` leaves exactly x: the first micro-step's gradient keeps its bits, a -0.0 among them.
void add_to_sums(Graph& graph, const std::vector<Tensor>& sums, const std::vector<Tensor>& values) {
  graph.set_phase(graph::Phase::update);
  for (std::size_t i = 0; i < sums.size(); ++i)
    graph.set_update(graph.leaf_name(sums[i].id()), (sums[i] + values[i]).id());
}

}  // namespace

void append_training_update(StepContext& context, const Tensor& loss,
                            const TrainingOptions& options,
                            const LearningRateScales& learning_rate_scales) {
  Graph& graph = context.graph();
  auto entered = graph.enter_scope("optimizer");
  OptimizerStart start = start_optimizer(context, options);
  // The backward pass; each gradient node takes the scope of the forward node it differentiates.
  graph.set_phase(graph::Phase::backward);
  LossScale loss_scale = make_loss_scale(graph, options.precision);
  // d(scale * loss) = scale * d(loss): seeding the backward pass with the scale scales the loss.
  std::vector<Tensor> gradients = graph::gradients(loss, context.parameters(), loss_scale.scale);
  append_update(context, std::move(gradients), loss_scale, *start.optimizer, start.schedule_step,
                start.lr, options, learning_rate_scales, loss);
  update_running_moments(context);
}

void append_scaled_gradients(StepContext& context, const Tensor& loss,
                             const TrainingOptions& options) {
  Graph& graph = context.graph();
  graph.set_phase(graph::Phase::backward);
  const config::LossScaling& settings = options.precision.loss_scaling;
  Tensor scale = settings.dynamic
                     ? Tensor(graph, graph.add_input("grad_scaler.scale", {{}, DType::f32}))
                     : constant(graph, options.precision.enabled ? settings.factor : 1.0);
  std::vector<Tensor> sums;
  for (const Tensor& parameter : context.parameters())
    sums.push_back(sum_variable(graph, gradient_name(graph.leaf_name(parameter.id())), parameter));
  std::vector<Tensor> values = graph::gradients(loss, context.parameters(), scale);
  for (const RunningMoments& moments : context.running_moments()) {
    sums.push_back(
        sum_variable(graph, batch_sum_name(graph.leaf_name(moments.mean.id())), moments.sum));
    sums.push_back(sum_variable(graph, batch_sum_name(graph.leaf_name(moments.variance.id())),
                                moments.sum_of_squares));
    values.push_back(moments.sum);
    values.push_back(moments.sum_of_squares);
  }
  add_to_sums(graph, sums, values);
  graph.add_output("loss", loss.id());
}

void append_update_of_gradients(StepContext& context, const TrainingOptions& options,
                                const LearningRateScales& learning_rate_scales) {
  Graph& graph = context.graph();
  auto entered = graph.enter_scope("optimizer");
  OptimizerStart start = start_optimizer(context, options);
  LossScale loss_scale = make_loss_scale(graph, options.precision);
  std::vector<Tensor> gradients;
  for (const Tensor& parameter : context.parameters()) {
    const std::string name = graph.leaf_name(parameter.id());
    gradients.emplace_back(graph,
                           graph.add_input(gradient_name(name), graph.node(parameter.id()).type));
  }
  append_update(context, std::move(gradients), loss_scale, *start.optimizer, start.schedule_step,
                start.lr, options, learning_rate_scales, std::nullopt);
  update_running_moments(context);
}

}  // namespace csrun::nn
