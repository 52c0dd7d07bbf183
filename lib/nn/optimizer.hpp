#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_spec.hpp"
#include "graph/tensor.hpp"

namespace csrun::nn {

using graph::Tensor;

// What a parameter's update reads besides its gradient: its learning rate (its group's scale
// times the schedule's rate) and whether weight decay applies to it (the Model Zoo leaves biases
// and normalization weights out: StepContext::takes_weight_decay).
struct UpdateGroup {
  Tensor lr;
  bool weight_decay = true;
};

// An optimizer as traced graph code. Its state (momentum, moment estimates, step counts) is
// created before the update is traced (Cerebras' preinitialize), named as PyTorch's
// optimizer.state_dict() names it: optimizer.state.<parameter index>.<key>.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // Creates the state of every parameter.
  virtual void preinitialize(graph::Graph& graph, const std::vector<Tensor>& parameters) = 0;
  // Traces one update and records the new value of every parameter and state variable in the
  // graph. Where `apply` (a boolean scalar) is false, everything keeps its value: the step is
  // skipped (non-finite gradients under dynamic loss scaling).
  // groups holds each parameter's learning rate and weight decay; decoupled weight decay follows
  // the learning rate, as in cerebras.pytorch's optimizers.
  virtual void update(graph::Graph& graph, const std::vector<Tensor>& parameters,
                      const std::vector<Tensor>& gradients, const std::vector<UpdateGroup>& groups,
                      const Tensor& global_step, const std::optional<Tensor>& apply) = 0;
};

// The optimizer of a checked {ClassName: params} entry. Throws std::invalid_argument for a
// Model Zoo optimizer csrun does not implement (ASGD, Rprop),
// or options of one that the Model Zoo refuses.
std::unique_ptr<Optimizer> make_optimizer(const config::ClassSpec& spec);

// Whether make_optimizer builds the Model Zoo optimizer of this class name.
bool simulates_optimizer(std::string_view type);

// The learning rate the optimizer itself names, if it does.
std::optional<double> optimizer_learning_rate(const config::ClassSpec& spec);

}  // namespace csrun::nn
