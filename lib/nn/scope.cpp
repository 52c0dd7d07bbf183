#include "scope.hpp"

#include <algorithm>

#include "initializers.hpp"

namespace csrun::nn {

StepContext::StepContext(graph::Graph& graph, bool training, std::uint64_t seed)
    : graph_(&graph),
      training_(training),
      seed_(seed),
      global_step_(graph, graph.add_variable("global_step", {{}, graph::DType::i32},
                                             graph::VariableRole::step_counter, {})),
      dropout_counter_(global_step_) {}

bool StepContext::takes_weight_decay(std::string_view parameter) const {
  if (parameter.find("bias") != std::string_view::npos) return false;
  return std::none_of(
      normalization_modules_.begin(), normalization_modules_.end(),
      [&](const std::string& module) { return parameter.find(module) != std::string_view::npos; });
}

std::string loss_normalizer_name(std::string_view field) {
  return "loss_normalizer/" + std::string(field);
}

void StepContext::compute_share_of(std::int64_t global_batch, std::int64_t shares) {
  global_batch_ = global_batch;
  graph::Tensor share(*graph_,
                      graph_->add_input(std::string(kShareIndexInput), {{}, graph::DType::i32}));
  dropout_counter_ = global_step_ * static_cast<double>(shares) + share;
}

graph::Tensor StepContext::average_over_samples(const graph::Tensor& total,
                                                std::int64_t samples) const {
  return total / static_cast<double>(global_samples(samples));
}

graph::Tensor StepContext::average_over_field(const graph::Tensor& total,
                                              const graph::Tensor& weights,
                                              const std::string& field) {
  if (!global_batch_) return total / graph::maximum(graph::sum(weights), 1.0);
  std::string name = loss_normalizer_name(field);
  std::optional<graph::NodeId> input = graph_->find_input(name);
  if (!input) {
    input = graph_->add_input(name, {{}, graph::DType::f32});
    normalizer_fields_.push_back(field);
  }
  return total / graph::maximum(graph::Tensor(*graph_, *input), 1.0);
}

Scope Scope::child(std::string_view name) const {
  return Scope(*context_, prefix_.empty() ? std::string(name) : prefix_ + "." + std::string(name));
}

graph::Tensor Scope::parameter(std::string_view name, graph::Shape shape, graph::Initializer init,
                               graph::Location location) const {
  std::string full = prefix_ + "." + std::string(name);
  check_initializer_shape(init, shape, full);
  graph::Tensor value(
      graph(), graph().add_variable(full, {std::move(shape), graph::DType::f32},
                                    graph::VariableRole::parameter, std::move(init), location));
  context_->add_parameter(value);
  return value;
}

graph::Tensor Scope::statistic(std::string_view name, graph::Shape shape, graph::Initializer init,
                               graph::Location location) const {
  std::string full = prefix_ + "." + std::string(name);
  return graph::Tensor(
      graph(), graph().add_variable(full, {std::move(shape), graph::DType::f32},
                                    graph::VariableRole::statistic, std::move(init), location));
}

}  // namespace csrun::nn
