// The gradient of every differentiable op, written with the tracer's own ops.

#include <cmath>
#include <numbers>
#include <numeric>

#include "autodiff.hpp"

namespace csrun::graph {

namespace {

using Grads = std::vector<std::optional<Tensor>>;

Tensor operand(const Tensor& result, std::size_t i) {
  return Tensor(result.graph(), result.node().inputs.at(i));
}

// The reduced axes kept as size 1, so a reduction's gradient broadcasts back.
Tensor expand_reduced(const Tensor& gradient, const Node& node, const Shape& input_shape) {
  Shape kept = input_shape;
  for (std::int64_t axis : node.attrs.axes)
    kept[static_cast<std::size_t>(axis)] = 1;
  return reshape(gradient, kept);
}

Tensor slice_box(const Tensor& x, std::vector<std::int64_t> begins,
                 std::vector<std::int64_t> ends) {
  Attributes attrs;
  attrs.begins = std::move(begins);
  attrs.ends = std::move(ends);
  return apply(OpKind::slice, {x}, std::move(attrs), x.node().location);
}

Tensor gelu_derivative(const Tensor& x, bool approximate) {
  if (!approximate) {
    Tensor cdf = 0.5 * (1.0 + erf(x * (1.0 / std::numbers::sqrt2)));
    Tensor pdf = exp(-0.5 * x * x) * (1.0 / std::sqrt(2.0 * std::numbers::pi));
    return cdf + x * pdf;
  }
  double c = std::sqrt(2.0 / std::numbers::pi);
  Tensor t = tanh(c * (x + 0.044715 * x * x * x));
  Tensor slope = 1.0 + 3.0 * 0.044715 * x * x;
  Tensor sech2 = 1.0 - t * t;
  Tensor from_tanh = 0.5 * x * sech2 * c * slope;
  return 0.5 * (1.0 + t) + from_tanh;
}

Grads binary(const Tensor& y, const Tensor& g) {
  Tensor a = operand(y, 0);
  Tensor b = operand(y, 1);
  Tensor da;
  Tensor db;
  switch (y.node().op) {
    case OpKind::add:
      da = g;
      db = g;
      break;
    case OpKind::sub:
      da = g;
      db = -g;
      break;
    case OpKind::mul:
      da = g * b;
      db = g * a;
      break;
    case OpKind::div:
      da = g / b;
      db = -(g * y) / b;
      break;
    case OpKind::pow: {
      Tensor power = pow(a, b - 1.0);
      da = g * b * power;
      Tensor log_a = log(a);
      db = g * y * log_a;
      break;
    }
    case OpKind::maximum:
      da = where(a >= b, g, 0.0);
      db = where(a < b, g, 0.0);
      break;
    case OpKind::minimum:
      da = where(a <= b, g, 0.0);
      db = where(a > b, g, 0.0);
      break;
    default:
      return {std::nullopt, std::nullopt};
  }
  return {unbroadcast(da, a.shape()), unbroadcast(db, b.shape())};
}

std::optional<Tensor> unary(const Tensor& y, const Tensor& g) {
  Tensor x = operand(y, 0);
  const Node& node = y.node();
  switch (node.op) {
    case OpKind::neg:
      return -g;
    case OpKind::abs: {
      Tensor negated = -g;
      Tensor below = where(x < 0.0, negated, 0.0);
      return where(x > 0.0, g, below);
    }
    case OpKind::exp:
      return g * y;
    case OpKind::log:
      return g / x;
    case OpKind::sqrt:
      return g * 0.5 / y;
    case OpKind::rsqrt:
      return g * -0.5 * y * y * y;
    case OpKind::sin:
      return g * cos(x);
    case OpKind::cos:
      return -(g * sin(x));
    case OpKind::tanh:
      return g * (1.0 - y * y);
    case OpKind::sigmoid: {
      Tensor complement = 1.0 - y;
      return g * y * complement;
    }
    case OpKind::relu:
      return where(x > 0.0, g, 0.0);
    case OpKind::erf: {
      Tensor bell = exp(-(x * x));
      return g * (2.0 / std::sqrt(std::numbers::pi)) * bell;
    }
    case OpKind::gelu:
      return g * gelu_derivative(x, node.attrs.approximate);
    case OpKind::cast:
      return cast(g, x.dtype());
    default:
      return std::nullopt;
  }
}

std::optional<Tensor> reduction(const Tensor& y, const Tensor& g) {
  Tensor x = operand(y, 0);
  const Node& node = y.node();
  Tensor spread = broadcast_to(expand_reduced(g, node, x.shape()), x.shape());
  switch (node.op) {
    case OpKind::reduce_sum:
      return spread;
    case OpKind::reduce_mean:
      return spread * (static_cast<double>(element_count(y.shape())) /
                       static_cast<double>(element_count(x.shape())));
    case OpKind::reduce_max: {
      // Ties share the gradient equally, as torch.amax does.
      Tensor top = broadcast_to(expand_reduced(y, node, x.shape()), x.shape());
      Tensor hits = cast(equal(x, top), x.dtype());
      Tensor count = broadcast_to(sum(hits, node.attrs.axes, true), x.shape());
      return spread * hits / count;
    }
    default:
      return std::nullopt;
  }
}

std::optional<Tensor> layout(const Tensor& y, const Tensor& g) {
  Tensor x = operand(y, 0);
  const Node& node = y.node();
  switch (node.op) {
    case OpKind::reshape:
      return reshape(g, x.shape());
    case OpKind::transpose: {
      std::vector<std::int64_t> inverse(node.attrs.perm.size());
      for (std::size_t i = 0; i < inverse.size(); ++i)
        inverse[static_cast<std::size_t>(node.attrs.perm[i])] = static_cast<std::int64_t>(i);
      return transpose(g, inverse);
    }
    case OpKind::slice: {
      std::vector<std::int64_t> after;
      for (std::size_t i = 0; i < x.shape().size(); ++i)
        after.push_back(x.shape()[i] - node.attrs.ends[i]);
      return pad(g, node.attrs.begins, after);
    }
    case OpKind::pad: {
      std::vector<std::int64_t> ends;
      for (std::size_t i = 0; i < x.shape().size(); ++i)
        ends.push_back(node.attrs.begins[i] + x.shape()[i]);
      return slice_box(g, node.attrs.begins, ends);
    }
    case OpKind::broadcast_to:
      return unbroadcast(g, x.shape());
    case OpKind::windows:
      return windows_sum(g, node.attrs.shape);
    default:
      return std::nullopt;
  }
}

Grads concat_parts(const Tensor& y, const Tensor& g) {
  Grads grads;
  std::int64_t offset = 0;
  std::int64_t axis = y.node().attrs.axis;
  for (std::size_t i = 0; i < y.node().inputs.size(); ++i) {
    std::int64_t length = operand(y, i).dim(axis);
    grads.push_back(slice(g, axis, offset, offset + length));
    offset += length;
  }
  return grads;
}

Grads compute(const Tensor& y, const Tensor& g) {
  const Node& node = y.node();
  switch (node.op) {
    case OpKind::where: {
      Tensor c = operand(y, 0);
      return {std::nullopt, unbroadcast(where(c, g, 0.0), operand(y, 1).shape()),
              unbroadcast(where(c, 0.0, g), operand(y, 2).shape())};
    }
    case OpKind::matmul: {
      Tensor a = operand(y, 0);
      Tensor b = operand(y, 1);
      return {unbroadcast(matmul(g, swap_last_axes(b)), a.shape()),
              unbroadcast(matmul(swap_last_axes(a), g), b.shape())};
    }
    case OpKind::softmax:
      return {softmax_grad(y, g, node.attrs.axis)};
    case OpKind::log_softmax: {
      Tensor total = sum(g, {node.attrs.axis}, true);
      return {g - exp(y) * total};
    }
    case OpKind::softmax_cross_entropy:
      return {softmax_cross_entropy_grad(operand(y, 0), operand(y, 1), g), std::nullopt};
    case OpKind::layer_norm: {
      Tensor x = operand(y, 0);
      Tensor centred = x - mean(x, {-1}, true);
      Tensor inverse_std = rsqrt(mean(centred * centred, {-1}, true) + node.attrs.eps);
      Tensor along_y = y * mean(g * y, {-1}, true);
      return {inverse_std * (g - mean(g, {-1}, true) - along_y)};
    }
    case OpKind::gather: {
      Tensor table = operand(y, 0);
      return {scatter_add(operand(y, 1), g, table.dim(0)), std::nullopt};
    }
    case OpKind::scatter_add:
      return {std::nullopt, gather(g, operand(y, 0))};
    case OpKind::windows_sum: {
      Tensor taken = windows(g, node.attrs.shape);
      DType summed = operand(y, 0).dtype();
      return {taken.dtype() == summed ? taken : cast(taken, summed)};
    }
    case OpKind::dropout: {
      const Attributes& a = node.attrs;
      return {dropout(g, operand(y, 1), a.rate, a.seed, a.salt), std::nullopt};
    }
    case OpKind::concat:
      return concat_parts(y, g);
    default:
      return {};
  }
}

}  // namespace

std::vector<std::optional<Tensor>> vector_jacobian_product(const Tensor& result,
                                                           const Tensor& result_gradient,
                                                           const std::vector<bool>& needed) {
  const Node& node = result.node();
  Grads grads;
  if (is_binary_elementwise(node.op)) {
    grads = binary(result, result_gradient);
  } else if (is_unary_elementwise(node.op)) {
    grads = {unary(result, result_gradient)};
  } else if (op_class(node.op) == OpClass::reduction) {
    grads = {reduction(result, result_gradient)};
  } else if (op_class(node.op) == OpClass::layout && node.op != OpKind::concat) {
    grads = {layout(result, result_gradient)};
  } else {
    grads = compute(result, result_gradient);
  }
  grads.resize(node.inputs.size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!needed[i]) grads[i].reset();
  }
  return grads;
}

}  // namespace csrun::graph
