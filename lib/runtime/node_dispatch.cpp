#include <stdexcept>
#include <string>

#include "kernel_families.hpp"

namespace csrun::runtime {

void prepare_node(NodeTask& task) {
  if (task.node->op == graph::OpKind::matmul) prepare_matmul(task);
}

void run_node(NodeTask& task) {
  graph::OpKind op = task.node->op;
  switch (graph::op_class(op)) {
    case graph::OpClass::elementwise:
      return run_elementwise(task);
    case graph::OpClass::reduction:
      return run_reduction(task);
    case graph::OpClass::layout:
      return run_layout(task);
    case graph::OpClass::leaf:
      return fill_static_leaf(task);
    case graph::OpClass::compute:
      break;
  }
  switch (op) {
    case graph::OpKind::matmul:
      return run_matmul(task);
    case graph::OpKind::softmax:
    case graph::OpKind::log_softmax:
    case graph::OpKind::layer_norm:
      return run_normalization(task);
    case graph::OpKind::softmax_cross_entropy:
    case graph::OpKind::softmax_cross_entropy_grad:
      return run_cross_entropy(task);
    default:
      return run_table(task);
  }
}

}  // namespace csrun::runtime
