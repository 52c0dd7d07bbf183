#include "op.hpp"

namespace csrun::graph {

const char* op_name(OpKind op) {
  switch (op) {
    case OpKind::input:
      return "input";
    case OpKind::variable:
      return "variable";
    case OpKind::constant:
      return "constant";
    case OpKind::iota:
      return "iota";
    case OpKind::add:
      return "add";
    case OpKind::sub:
      return "sub";
    case OpKind::mul:
      return "mul";
    case OpKind::div:
      return "div";
    case OpKind::pow:
      return "pow";
    case OpKind::maximum:
      return "maximum";
    case OpKind::minimum:
      return "minimum";
    case OpKind::less:
      return "less";
    case OpKind::less_equal:
      return "less_equal";
    case OpKind::greater:
      return "greater";
    case OpKind::greater_equal:
      return "greater_equal";
    case OpKind::equal:
      return "equal";
    case OpKind::not_equal:
      return "not_equal";
    case OpKind::logical_and:
      return "logical_and";
    case OpKind::logical_or:
      return "logical_or";
    case OpKind::logical_not:
      return "logical_not";
    case OpKind::where:
      return "where";
    case OpKind::neg:
      return "neg";
    case OpKind::abs:
      return "abs";
    case OpKind::exp:
      return "exp";
    case OpKind::log:
      return "log";
    case OpKind::sqrt:
      return "sqrt";
    case OpKind::rsqrt:
      return "rsqrt";
    case OpKind::sin:
      return "sin";
    case OpKind::cos:
      return "cos";
    case OpKind::tanh:
      return "tanh";
    case OpKind::sigmoid:
      return "sigmoid";
    case OpKind::relu:
      return "relu";
    case OpKind::erf:
      return "erf";
    case OpKind::gelu:
      return "gelu";
    case OpKind::is_finite:
      return "is_finite";
    case OpKind::cast:
      return "cast";
    case OpKind::reduce_sum:
      return "reduce_sum";
    case OpKind::reduce_mean:
      return "reduce_mean";
    case OpKind::reduce_max:
      return "reduce_max";
    case OpKind::argmax:
      return "argmax";
    case OpKind::reshape:
      return "reshape";
    case OpKind::transpose:
      return "transpose";
    case OpKind::slice:
      return "slice";
    case OpKind::pad:
      return "pad";
    case OpKind::concat:
      return "concat";
    case OpKind::broadcast_to:
      return "broadcast_to";
    case OpKind::matmul:
      return "matmul";
    case OpKind::softmax:
      return "softmax";
    case OpKind::log_softmax:
      return "log_softmax";
    case OpKind::softmax_cross_entropy:
      return "softmax_cross_entropy";
    case OpKind::softmax_cross_entropy_grad:
      return "softmax_cross_entropy_grad";
    case OpKind::layer_norm:
      return "layer_norm";
    case OpKind::gather:
      return "gather";
    case OpKind::scatter_add:
      return "scatter_add";
    case OpKind::one_hot:
      return "one_hot";
    case OpKind::dropout:
      return "dropout";
  }
  return "?";
}

bool is_binary_elementwise(OpKind op) {
  switch (op) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::pow:
    case OpKind::maximum:
    case OpKind::minimum:
    case OpKind::logical_and:
    case OpKind::logical_or:
      return true;
    default:
      return is_comparison(op);
  }
}

bool is_comparison(OpKind op) {
  switch (op) {
    case OpKind::less:
    case OpKind::less_equal:
    case OpKind::greater:
    case OpKind::greater_equal:
    case OpKind::equal:
    case OpKind::not_equal:
      return true;
    default:
      return false;
  }
}

bool is_unary_elementwise(OpKind op) {
  switch (op) {
    case OpKind::logical_not:
    case OpKind::neg:
    case OpKind::abs:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::sin:
    case OpKind::cos:
    case OpKind::tanh:
    case OpKind::sigmoid:
    case OpKind::relu:
    case OpKind::erf:
    case OpKind::gelu:
    case OpKind::is_finite:
    case OpKind::cast:
      return true;
    default:
      return false;
  }
}

OpClass op_class(OpKind op) {
  switch (op) {
    case OpKind::input:
    case OpKind::variable:
    case OpKind::constant:
    case OpKind::iota:
      return OpClass::leaf;
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_max:
    case OpKind::argmax:
      return OpClass::reduction;
    case OpKind::reshape:
    case OpKind::transpose:
    case OpKind::slice:
    case OpKind::pad:
    case OpKind::concat:
    case OpKind::broadcast_to:
      return OpClass::layout;
    case OpKind::matmul:
    case OpKind::softmax:
    case OpKind::log_softmax:
    case OpKind::softmax_cross_entropy:
    case OpKind::softmax_cross_entropy_grad:
    case OpKind::layer_norm:
    case OpKind::gather:
    case OpKind::scatter_add:
    case OpKind::one_hot:
    case OpKind::dropout:
      return OpClass::compute;
    default:
      return OpClass::elementwise;
  }
}

bool swaps_last_two_axes(std::span<const std::int64_t> perm) {
  std::size_t rank = perm.size();
  if (rank < 2) return false;
  for (std::size_t axis = 0; axis + 2 < rank; ++axis) {
    if (perm[axis] != static_cast<std::int64_t>(axis)) return false;
  }
  return perm[rank - 2] == static_cast<std::int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<std::int64_t>(rank - 2);
}

}  // namespace csrun::graph
