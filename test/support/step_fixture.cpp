#include "step_fixture.hpp"

#include <catch2/catch.hpp>

#include "golden.hpp"
#include "graph/number_formats.hpp"
#include "params_fixture.hpp"

namespace csrun::test {

models::TraceOptions CheckedTrainerModel::training_options() const {
  return {models::StepKind::train, 1, {*trainer.optimizer, trainer.schedulers, trainer.precision}};
}

CheckedTrainerModel checked_model(const std::string& model_yaml, const std::string& init_extra) {
  auto loaded = load_params_text(
      "trainer:\n  init:\n    device: CSX\n    model: " + model_yaml +
      "\n    optimizer: {AdamW: {lr: 0.001}}\n    loop: {max_steps: 1}\n" + init_extra);
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  config::Diagnostics diagnostics;
  auto model = models::check_model(loaded.trainer(), diagnostics);
  REQUIRE(model);
  return {*model, loaded.trainer()};
}

models::TracedStep traced_step(const std::string& model_yaml, std::int64_t batch_size,
                               bool training, const std::string& init_extra) {
  CheckedTrainerModel checked = checked_model(model_yaml, init_extra);
  models::TraceOptions options =
      training ? checked.training_options() : models::TraceOptions{models::StepKind::eval, 1, {}};
  return models::trace_step(checked.model, batch_size, options);
}

graph::Feeds sample_feeds(const graph::Graph& graph) {
  graph::Feeds feeds;
  auto fill = [&](const std::string& name, graph::NodeId id, double constant, bool use_constant) {
    const graph::TensorType& type = graph.node(id).type;
    auto count = static_cast<std::size_t>(graph::element_count(type.shape));
    std::vector<double> values(count, use_constant ? constant : 1.0);
    if (graph::is_floating(type.dtype) && !use_constant) {
      for (std::size_t i = 0; i < count; ++i)
        values[i] = static_cast<float>(golden_value(name, i) - 0.5);
    }
    feeds[name] = graph::HostTensor{type.shape, type.dtype, std::move(values)};
  };
  for (const graph::NamedNode& input : graph.inputs())
    fill(input.name, input.node, 0.0, false);
  for (const graph::Variable& variable : graph.variables()) {
    if (variable.role == graph::VariableRole::half_copy) continue;
    bool constant = variable.role != graph::VariableRole::parameter;
    fill(variable.name, variable.node, variable.init.name == "constant" ? variable.init.value : 0.0,
         constant);
  }
  // A 16-bit copy holds its parameter rounded, as the runtime keeps it.
  for (const graph::Variable& variable : graph.variables()) {
    if (variable.role != graph::VariableRole::half_copy) continue;
    graph::HostTensor copy = feeds.at(variable.copy_of);
    copy.dtype = graph.node(variable.node).type.dtype;
    for (double& value : copy.values)
      value = graph::round_to_format(value, graph::format_of(copy.dtype));
    feeds[variable.name] = std::move(copy);
  }
  return feeds;
}

}  // namespace csrun::test
