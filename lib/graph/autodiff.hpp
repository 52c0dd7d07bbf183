#pragma once

#include <optional>
#include <span>
#include <vector>

#include "tensor.hpp"

namespace csrun::graph {

// Appends to the graph the gradient of the scalar `loss` with respect to each of `wrt`, in
// reverse mode, built from the same ops as the forward pass. `loss_gradient` seeds the
// backward pass (1 by default; a loss scale for scaled losses). A tensor the loss does not
// depend on gets zeros.
std::vector<Tensor> gradients(const Tensor& loss, std::span<const Tensor> wrt,
                              std::optional<Tensor> loss_gradient = std::nullopt);

// The gradients of a node's operands from the gradient of its result (one per operand; empty
// where an operand takes none). `needed` says which operands want one.
std::vector<std::optional<Tensor>> vector_jacobian_product(const Tensor& result,
                                                           const Tensor& result_gradient,
                                                           const std::vector<bool>& needed);

// Sums `gradient` down to `shape`, undoing NumPy broadcasting.
Tensor unbroadcast(const Tensor& gradient, const Shape& shape);

}  // namespace csrun::graph
