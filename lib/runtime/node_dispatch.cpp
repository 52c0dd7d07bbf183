#include <stdexcept>
#include <string>

#include "kernel_families.hpp"

namespace csrun::runtime {

void prepare_node(NodeTask& task) {
  switch (task.node->op) {
    case graph::OpKind::matmul:
      return prepare_matmul(task);
    case graph::OpKind::softmax_cross_entropy:
    case graph::OpKind::softmax_cross_entropy_grad:
      return prepare_cross_entropy(task);
    case graph::OpKind::reduce_sum:
    case graph::OpKind::reduce_mean:
      return prepare_reduction(task);
    case graph::OpKind::softmax:
    case graph::OpKind::softmax_grad:
      return prepare_normalization(task);
    default:
      return;
  }
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
    case graph::OpKind::softmax_grad:
    case graph::OpKind::layer_norm:
      return run_normalization(task);
    case graph::OpKind::softmax_cross_entropy:
    case graph::OpKind::softmax_cross_entropy_grad:
      return run_cross_entropy(task);
    case graph::OpKind::windows_sum:
      return run_windows_sum(task);
    default:
      return run_table(task);
  }
}

}  // namespace csrun::runtime

extern "C" const csrun::runtime::KernelSet csrun_kernel_set = {
    csrun::runtime::prepare_node,
    csrun::runtime::run_node,
    csrun::runtime::run_elementwise,
    csrun::runtime::run_chain_program,
    [](const float* values, std::uint16_t* out, std::int64_t count, csrun::graph::DType dtype) {
      csrun::runtime::narrow_to_half(values, out, count, dtype);
    },
    [](const std::uint16_t* bits, float* out, std::int64_t count, csrun::graph::DType dtype) {
      csrun::runtime::widen_from_half(bits, out, count, dtype);
    },
    csrun::runtime::multiplies_bf16_in_hardware,
#if defined(__AVX512F__) && defined(__BMI2__)
    csrun::runtime::ChainIsa::avx512,
#elif defined(__AVX2__)
    csrun::runtime::ChainIsa::avx2,
#else
    csrun::runtime::ChainIsa::none,
#endif
};
