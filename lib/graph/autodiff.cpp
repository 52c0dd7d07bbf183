#include "autodiff.hpp"

#include <map>

namespace csrun::graph {

namespace {

bool differentiable(const Node& node) {
  return is_floating(node.type.dtype);
}

}  // namespace

Tensor unbroadcast(const Tensor& gradient, const Shape& shape) {
  if (gradient.shape() == shape) return gradient;
  std::int64_t extra = gradient.rank() - static_cast<std::int64_t>(shape.size());
  std::vector<std::int64_t> axes;
  for (std::int64_t i = 0; i < gradient.rank(); ++i) {
    bool added = i < extra;
    bool stretched =
        !added && shape[static_cast<std::size_t>(i - extra)] == 1 && gradient.dim(i) != 1;
    if (added || stretched) axes.push_back(i);
  }
  Tensor reduced = axes.empty() ? gradient : sum(gradient, axes);
  return reshape(reduced, shape);
}

std::vector<Tensor> gradients(const Tensor& loss, std::span<const Tensor> wrt,
                              std::optional<Tensor> loss_gradient) {
  Graph& graph = loss.graph();
  std::size_t count = static_cast<std::size_t>(loss.id()) + 1;
  // Only nodes on a path from some wrt tensor to the loss take part.
  std::vector<bool> from_wrt(count, false);
  for (const Tensor& t : wrt) {
    if (static_cast<std::size_t>(t.id()) < count) from_wrt[static_cast<std::size_t>(t.id())] = true;
  }
  for (std::size_t i = 0; i < count; ++i) {
    for (NodeId input : graph.node(static_cast<NodeId>(i)).inputs) {
      if (from_wrt[static_cast<std::size_t>(input)]) from_wrt[i] = true;
    }
  }
  std::map<NodeId, Tensor> adjoint;
  adjoint.emplace(
      loss.id(), loss_gradient ? *loss_gradient : constant(graph, 1.0, loss.shape(), loss.dtype()));
  for (NodeId id = loss.id(); id >= 0; --id) {
    auto found = adjoint.find(id);
    const Node& node = graph.node(id);
    if (found == adjoint.end() || node.inputs.empty() || !from_wrt[static_cast<std::size_t>(id)])
      continue;
    std::vector<bool> needed;
    for (NodeId input : node.inputs) {
      needed.push_back(from_wrt[static_cast<std::size_t>(input)] &&
                       differentiable(graph.node(input)));
    }
    // The gradient of a node belongs to the node's module, so backward work is attributed to
    // the layer that caused it.
    auto entered = graph.enter_scope(node.scope);
    Tensor result(graph, id);
    std::vector<std::optional<Tensor>> parts =
        vector_jacobian_product(result, found->second, needed);
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (!parts[k] || !needed[k]) continue;
      NodeId input = node.inputs[k];
      auto existing = adjoint.find(input);
      if (existing == adjoint.end()) {
        adjoint.emplace(input, *parts[k]);
      } else {
        existing->second = existing->second + *parts[k];
      }
    }
  }
  std::vector<Tensor> result;
  for (const Tensor& t : wrt) {
    auto found = adjoint.find(t.id());
    result.push_back(found != adjoint.end() ? found->second
                                            : constant(graph, 0.0, t.shape(), t.dtype()));
  }
  return result;
}

}  // namespace csrun::graph
