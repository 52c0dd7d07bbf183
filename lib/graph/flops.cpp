#include "flops.hpp"

namespace csrun::graph {

double node_flops(const Graph& graph, const Node& node) {
  double outputs = static_cast<double>(element_count(node.type.shape));
  switch (op_class(node.op)) {
    case OpClass::leaf:
    case OpClass::layout:
      return 0.0;
    case OpClass::elementwise:
      return outputs;
    case OpClass::reduction:
      return static_cast<double>(element_count(graph.node(node.inputs[0]).type.shape));
    case OpClass::compute:
      break;
  }
  if (node.op == OpKind::matmul) {
    return 2.0 * outputs * static_cast<double>(graph.node(node.inputs[0]).type.shape.back());
  }
  if (node.op == OpKind::gather || node.op == OpKind::one_hot) return 0.0;
  // softmax, log_softmax, layer_norm: a handful per element they read (a cross entropy reads a
  // row of logits for each value it gives); scatter_add, dropout: one per element.
  bool normalizes = node.op == OpKind::softmax || node.op == OpKind::log_softmax ||
                    node.op == OpKind::softmax_grad || node.op == OpKind::layer_norm ||
                    node.op == OpKind::softmax_cross_entropy ||
                    node.op == OpKind::softmax_cross_entropy_grad;
  if (!normalizes) return outputs;
  return 5.0 * static_cast<double>(element_count(graph.node(node.inputs[0]).type.shape));
}

double count_flops(const Graph& graph) {
  double total = 0.0;
  for (const Node& node : graph.nodes())
    total += node_flops(graph, node);
  return total;
}

std::int64_t count_elements(const Graph& graph, VariableRole role) {
  std::int64_t total = 0;
  for (const Variable& variable : graph.variables()) {
    if (variable.role == role) total += element_count(graph.node(variable.node).type.shape);
  }
  return total;
}

}  // namespace csrun::graph
