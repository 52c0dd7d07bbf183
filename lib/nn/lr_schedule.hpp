#pragma once

#include <optional>
#include <vector>

#include "config/run_spec.hpp"
#include "graph/tensor.hpp"

namespace csrun::nn {

using graph::Tensor;

// The learning rate at `step` (a float32 scalar: the global step before this update) as a
// closed form of the step, from the checked schedulers. Several schedulers listed side by side
// chain like a ChainedScheduler. Without schedulers the optimizer's own learning rate holds.
// Throws std::invalid_argument when no learning rate is given.
Tensor learning_rate(graph::Graph& graph, const std::vector<config::ClassSpec>& schedulers,
                     const Tensor& step, std::optional<double> optimizer_lr);

// The same for one scheduler (and its members).
Tensor schedule_value(graph::Graph& graph, const config::ClassSpec& scheduler, const Tensor& step);

}  // namespace csrun::nn
