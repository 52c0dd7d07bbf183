#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.hpp"

namespace csrun::nn {

// What a traced step knows about itself: whether it trains (dropout is active), the global step
// tensor (dropout masks depend on it), the run's seed, and every parameter created so far, in
// creation order (the order of PyTorch's module.parameters(), which numbers optimizer state).
class StepContext {
 public:
  StepContext(graph::Graph& graph, bool training, std::uint64_t seed);

  graph::Graph& graph() const { return *graph_; }
  bool training() const { return training_; }
  std::uint64_t seed() const { return seed_; }
  const graph::Tensor& global_step() const { return global_step_; }
  const std::vector<graph::Tensor>& parameters() const { return parameters_; }

  void add_parameter(const graph::Tensor& parameter) { parameters_.push_back(parameter); }
  // A distinct, deterministic salt for each dropout site of the trace.
  std::uint64_t next_dropout_salt() { return ++dropout_sites_; }

 private:
  graph::Graph* graph_;
  bool training_;
  std::uint64_t seed_;
  graph::Tensor global_step_;
  std::vector<graph::Tensor> parameters_;
  std::uint64_t dropout_sites_ = 0;
};

// A dotted name prefix for parameters, like a PyTorch module path: model.fc_layers.0 makes
// model.fc_layers.0.weight.
class Scope {
 public:
  Scope(StepContext& context, std::string prefix)
      : context_(&context), prefix_(std::move(prefix)) {}

  Scope child(std::string_view name) const;
  Scope child(std::int64_t index) const { return child(std::to_string(index)); }
  const std::string& prefix() const { return prefix_; }
  StepContext& context() const { return *context_; }
  graph::Graph& graph() const { return context_->graph(); }
  // Records the nodes built until the guard ends as this module's (the graph's node scopes).
  [[nodiscard]] graph::Graph::ScopeGuard enter() const { return graph().enter_scope(prefix_); }

  // Creates a trainable parameter named prefix.name.
  graph::Tensor parameter(std::string_view name, graph::Shape shape, graph::Initializer init,
                          graph::Location location = graph::Location::current()) const;

 private:
  StepContext* context_;
  std::string prefix_;
};

}  // namespace csrun::nn
