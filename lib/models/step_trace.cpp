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

TracedStep trace_step(const CheckedModel& model, std::int64_t batch_size,
                      const TraceOptions& options) {
  TracedStep traced;
  traced.batch = batch_layout(model, batch_size);
  bool training = options.kind == StepKind::train;
  nn::StepContext context(traced.graph, training, options.seed);
  ModelBuild build{model.params, context, {}};
  for (const BatchField& field : traced.batch) {
    if (field.name == "input_ids" && field.type.rank() == 2)
      traced.tokens_per_sample = field.type.shape[1];
    build.batch.emplace(
        field.name, graph::Tensor(traced.graph, traced.graph.add_input(field.name, field.type)));
  }
  ModelOutputs outputs = model.definition->build(build);
  if (training) {
    std::vector<std::string> names;
    for (const graph::Tensor& parameter : context.parameters())
      names.push_back(traced.graph.leaf_name(parameter.id()));
    nn::LearningRateScales scales =
        learning_rate_scales(outputs.learning_rate_groups,
                             options.training.optimizer.params.find("adjust_learning_rate"), names);
    nn::append_training_update(context, outputs.loss, options.training, scales);
  } else {
    traced.graph.add_output("loss", outputs.loss.id());
    for (const nn::Metric& metric : outputs.metrics) {
      traced.graph.add_output(metric.name, metric.value.id());
      traced.metric_averages[metric.name] = metric.average;
    }
  }
  traced.parameter_count = graph::count_elements(traced.graph, graph::VariableRole::parameter);
  traced.flops = graph::count_flops(traced.graph);
  return traced;
}

}  // namespace csrun::models
