#include "scope.hpp"

namespace csrun::nn {

StepContext::StepContext(graph::Graph& graph, bool training, std::uint64_t seed)
    : graph_(&graph),
      training_(training),
      seed_(seed),
      global_step_(graph, graph.add_variable("global_step", {{}, graph::DType::i32},
                                             graph::VariableRole::step_counter, {})) {}

Scope Scope::child(std::string_view name) const {
  return Scope(*context_, prefix_.empty() ? std::string(name) : prefix_ + "." + std::string(name));
}

graph::Tensor Scope::parameter(std::string_view name, graph::Shape shape, graph::Initializer init,
                               graph::Location location) const {
  std::string full = prefix_ + "." + std::string(name);
  graph::Tensor value(
      graph(), graph().add_variable(full, {std::move(shape), graph::DType::f32},
                                    graph::VariableRole::parameter, std::move(init), location));
  context_->add_parameter(value);
  return value;
}

}  // namespace csrun::nn
