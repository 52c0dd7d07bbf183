#include "step_trace.hpp"

#include "graph/flops.hpp"

namespace csrun::models {

bool can_trace(const CheckedModel& model) {
  return model.definition && model.definition->build;
}

BatchLayout batch_layout(const CheckedModel& model, std::int64_t batch_size) {
  if (!can_trace(model))
    throw std::invalid_argument("csrun cannot build the " + model.definition->name +
                                " network yet");
  BatchLayout layout = model.definition->batch_layout(model.params, batch_size, model.hints);
  for (BatchField& field : layout) {
    if (field.type.dtype == graph::DType::i32 && field.value_limit == 0)
      field.value_limit = model.id_limit();
  }
  return layout;
}

namespace {

// The step's batch inputs and the model's forward pass over them.
ModelOutputs trace_forward(const CheckedModel& model, TracedStep& traced,
                           nn::StepContext& context) {
  ModelBuild build{model.params, context, {}, model.hints};
  for (const BatchField& field : traced.batch) {
    if (field.name == "input_ids" && field.type.rank() == 2)
      traced.tokens_per_sample = field.type.shape[1];
    build.batch.emplace(
        field.name, graph::Tensor(traced.graph, traced.graph.add_input(field.name, field.type)));
  }
  return model.definition->build(build);
}

nn::LearningRateScales parameter_learning_rates(const ModelOutputs& outputs,
                                                const nn::StepContext& context,
                                                const TraceOptions& options) {
  std::vector<std::string> names;
  for (const graph::Tensor& parameter : context.parameters())
    names.push_back(context.graph().leaf_name(parameter.id()));
  return learning_rate_scales(outputs.learning_rate_groups,
                              options.training.optimizer.params.find("adjust_learning_rate"),
                              names);
}

void count(TracedStep& traced) {
  traced.parameter_count = graph::count_elements(traced.graph, graph::VariableRole::parameter);
  traced.flops = graph::count_flops(traced.graph);
}

}  // namespace

TracedStep trace_step(const CheckedModel& model, std::int64_t batch_size,
                      const TraceOptions& options) {
  TracedStep traced;
  traced.batch = batch_layout(model, batch_size);
  bool training = options.kind == StepKind::train;
  nn::StepContext context(traced.graph, training, options.seed);
  context.set_attention_query_block(options.attention_query_block);
  ModelOutputs outputs = trace_forward(model, traced, context);
  traced.attention_blocks = context.attention_blocks();
  if (training) {
    nn::append_training_update(context, outputs.loss, options.training,
                               parameter_learning_rates(outputs, context, options));
  } else {
    traced.graph.add_output("loss", outputs.loss.id());
    for (const nn::Metric& metric : outputs.metrics) {
      traced.graph.add_output(metric.name, metric.value.id());
      traced.metric_averages[metric.name] = metric.average;
    }
  }
  count(traced);
  return traced;
}

TracedSplitStep trace_split_step(const CheckedModel& model, std::int64_t micro_batch,
                                 std::int64_t global_batch, const TraceOptions& options) {
  if (micro_batch <= 0 || global_batch % micro_batch != 0)
    throw std::invalid_argument("a micro-batch of " + std::to_string(micro_batch) +
                                " samples does not divide the batch of " +
                                std::to_string(global_batch));
  TracedSplitStep split;
  TracedStep& micro = split.micro_step;
  micro.batch = batch_layout(model, micro_batch);
  nn::StepContext context(micro.graph, true, options.seed);
  context.set_attention_query_block(options.attention_query_block);
  context.compute_share_of(global_batch, global_batch / micro_batch);
  ModelOutputs outputs = trace_forward(model, micro, context);
  nn::append_scaled_gradients(context, outputs.loss, options.training);
  count(micro);
  split.normalizer_fields = context.normalizer_fields();

  split.update.adopt_scopes(micro.graph);
  nn::StepContext update(split.update, true, options.seed);
  for (const graph::Tensor& parameter : context.parameters()) {
    const graph::Variable& variable =
        *micro.graph.find_variable(micro.graph.leaf_name(parameter.id()));
    update.add_parameter(graph::Tensor(
        split.update, split.update.add_variable(variable, micro.graph.node(variable.node))));
  }
  for (const std::string& module : context.normalization_modules())
    update.add_normalization_module(module);
  // The running moments, kept by the update from the batch sums of all micro-steps.
  auto copy_variable = [&](const graph::Tensor& tensor) {
    const graph::Variable& variable =
        *micro.graph.find_variable(micro.graph.leaf_name(tensor.id()));
    return graph::Tensor(split.update,
                         split.update.add_variable(variable, micro.graph.node(variable.node)));
  };
  auto summed = [&](const graph::Tensor& statistic, const graph::Tensor& sum) {
    return graph::Tensor(
        split.update, split.update.add_input(
                          nn::batch_sum_name(micro.graph.leaf_name(statistic.id())), sum.type()));
  };
  for (const nn::RunningMoments& moments : context.running_moments()) {
    nn::RunningMoments kept = moments;
    kept.mean = copy_variable(moments.mean);
    kept.variance = copy_variable(moments.variance);
    kept.sum = summed(moments.mean, moments.sum);
    kept.sum_of_squares = summed(moments.variance, moments.sum_of_squares);
    update.add_running_moments(kept);
  }
  nn::append_update_of_gradients(update, options.training,
                                 parameter_learning_rates(outputs, context, options));
  return split;
}

}  // namespace csrun::models
