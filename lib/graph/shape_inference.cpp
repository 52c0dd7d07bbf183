#include "shape_inference.hpp"

#include <algorithm>
#include <string>

namespace csrun::graph {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument(message);
}

void expect_arity(const std::vector<TensorType>& inputs, std::size_t count) {
  if (inputs.size() != count) {
    fail("takes " + std::to_string(count) + " operand(s), got " + std::to_string(inputs.size()));
  }
}

void expect_floating(const TensorType& type, const char* what = "operand") {
  if (!is_floating(type.dtype)) {
    fail(std::string("needs a floating-point ") + what + ", got " + type.to_string());
  }
}

void expect_numeric(const TensorType& type) {
  if (type.dtype == DType::boolean) fail("needs a numeric operand, got " + type.to_string());
}

void expect_axis(std::int64_t axis, std::int64_t rank) {
  if (axis < 0 || axis >= rank) {
    fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
}

Shape broadcast_or_fail(const Shape& a, const Shape& b) {
  auto shape = broadcast_shapes(a, b);
  if (!shape) fail("cannot broadcast " + shape_string(a) + " with " + shape_string(b));
  return *shape;
}

TensorType binary(OpKind op, const std::vector<TensorType>& in) {
  if (in[0].dtype != in[1].dtype) {
    fail("needs operands of one dtype, got " + in[0].to_string() + " and " + in[1].to_string() +
         " (cast one of them)");
  }
  bool logical = op == OpKind::logical_and || op == OpKind::logical_or;
  if (logical && in[0].dtype != DType::boolean)
    fail("needs boolean operands, got " + in[0].to_string());
  if (!logical) expect_numeric(in[0]);
  if (op == OpKind::pow) expect_floating(in[0]);
  Shape shape = broadcast_or_fail(in[0].shape, in[1].shape);
  return {shape, is_comparison(op) ? DType::boolean : in[0].dtype};
}

TensorType unary(OpKind op, const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& x = in[0];
  switch (op) {
    case OpKind::logical_not:
      if (x.dtype != DType::boolean) fail("needs a boolean operand, got " + x.to_string());
      return x;
    case OpKind::neg:
    case OpKind::abs:
      expect_numeric(x);
      return x;
    case OpKind::is_finite:
      expect_floating(x);
      return {x.shape, DType::boolean};
    case OpKind::cast:
      return {x.shape, attrs.dtype};
    default:
      expect_floating(x);
      return x;
  }
}

std::vector<std::int64_t> sorted_axes(const std::vector<std::int64_t>& axes, std::int64_t rank) {
  std::vector<std::int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t axis : sorted)
    expect_axis(axis, rank);
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail("an axis is listed twice");
  return sorted;
}

TensorType reduction(OpKind op, const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& x = in[0];
  expect_numeric(x);
  if (op == OpKind::reduce_mean) expect_floating(x);
  std::vector<std::int64_t> axes = sorted_axes(attrs.axes, x.rank());
  Shape shape;
  for (std::int64_t i = 0; i < x.rank(); ++i) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) {
      shape.push_back(x.shape[i]);
    } else if (attrs.keepdims) {
      shape.push_back(1);
    }
  }
  return {shape, x.dtype};
}

TensorType argmax(const std::vector<TensorType>& in, const Attributes& attrs) {
  expect_numeric(in[0]);
  expect_axis(attrs.axis, in[0].rank());
  Shape shape = in[0].shape;
  shape.erase(shape.begin() + attrs.axis);
  return {shape, DType::i32};
}

TensorType reshape(const std::vector<TensorType>& in, const Attributes& attrs) {
  if (std::any_of(attrs.shape.begin(), attrs.shape.end(), [](std::int64_t d) { return d < 0; }) ||
      element_count(attrs.shape) != element_count(in[0].shape)) {
    fail("cannot reshape " + in[0].to_string() + " to " + shape_string(attrs.shape));
  }
  return {attrs.shape, in[0].dtype};
}

TensorType transpose(const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& x = in[0];
  std::vector<std::int64_t> sorted = attrs.perm;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = static_cast<std::int64_t>(sorted.size()) == x.rank();
  for (std::size_t i = 0; permutation && i < sorted.size(); ++i) {
    permutation = sorted[i] == static_cast<std::int64_t>(i);
  }
  if (!permutation)
    fail("perm " + shape_string(attrs.perm) + " is not a permutation of " +
         std::to_string(x.rank()) + " axes");
  Shape shape;
  for (std::int64_t axis : attrs.perm)
    shape.push_back(x.shape[axis]);
  return {shape, x.dtype};
}

TensorType slice(const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& x = in[0];
  if (static_cast<std::int64_t>(attrs.begins.size()) != x.rank() ||
      static_cast<std::int64_t>(attrs.ends.size()) != x.rank()) {
    fail("needs a begin and an end per axis of " + x.to_string());
  }
  Shape shape;
  for (std::int64_t i = 0; i < x.rank(); ++i) {
    if (attrs.begins[i] < 0 || attrs.begins[i] > attrs.ends[i] || attrs.ends[i] > x.shape[i]) {
      fail("bounds [" + std::to_string(attrs.begins[i]) + ", " + std::to_string(attrs.ends[i]) +
           ") do not fit axis " + std::to_string(i) + " of " + x.to_string());
    }
    shape.push_back(attrs.ends[i] - attrs.begins[i]);
  }
  return {shape, x.dtype};
}

TensorType pad(const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& x = in[0];
  if (static_cast<std::int64_t>(attrs.begins.size()) != x.rank() ||
      static_cast<std::int64_t>(attrs.ends.size()) != x.rank()) {
    fail("needs padding before and after each axis of " + x.to_string());
  }
  Shape shape;
  for (std::int64_t i = 0; i < x.rank(); ++i) {
    if (attrs.begins[i] < 0 || attrs.ends[i] < 0) fail("padding must not be negative");
    shape.push_back(attrs.begins[i] + x.shape[i] + attrs.ends[i]);
  }
  return {shape, x.dtype};
}

TensorType concat(const std::vector<TensorType>& in, const Attributes& attrs) {
  TensorType result = in[0];
  expect_axis(attrs.axis, result.rank());
  for (std::size_t k = 1; k < in.size(); ++k) {
    bool fits = in[k].dtype == result.dtype && in[k].rank() == result.rank();
    for (std::int64_t i = 0; fits && i < result.rank(); ++i) {
      fits = i == attrs.axis || in[k].shape[i] == in[0].shape[i];
    }
    if (!fits)
      fail("cannot join " + in[0].to_string() + " and " + in[k].to_string() + " along axis " +
           std::to_string(attrs.axis));
    result.shape[attrs.axis] += in[k].shape[attrs.axis];
  }
  return result;
}

TensorType broadcast_to(const std::vector<TensorType>& in, const Attributes& attrs) {
  auto shape = broadcast_shapes(in[0].shape, attrs.shape);
  if (!shape || *shape != attrs.shape) {
    fail("cannot broadcast " + in[0].to_string() + " to " + shape_string(attrs.shape));
  }
  return {attrs.shape, in[0].dtype};
}

// A window of attrs.shape over the trailing axes of x, one extent of 1 or more per axis, each
// at most the axis.
std::int64_t window_axes(const TensorType& x, const Attributes& attrs, std::int64_t extra_axes) {
  auto axes = static_cast<std::int64_t>(attrs.shape.size());
  if (axes < 1 || x.rank() < axes + extra_axes) {
    fail("needs a window of one or more axes and an operand of at least " +
         std::to_string(axes + extra_axes) + " axes, got window " + shape_string(attrs.shape) +
         " and " + x.to_string());
  }
  if (std::any_of(attrs.shape.begin(), attrs.shape.end(), [](std::int64_t k) { return k < 1; }))
    fail("needs window extents of 1 or more, got " + shape_string(attrs.shape));
  return axes;
}

TensorType windows(const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& x = in[0];
  std::int64_t axes = window_axes(x, attrs, 0);
  std::int64_t lead = x.rank() - axes;
  Shape shape(x.shape.begin(), x.shape.begin() + lead);
  shape.push_back(element_count(attrs.shape));
  for (std::int64_t a = 0; a < axes; ++a) {
    std::int64_t size = x.shape[static_cast<std::size_t>(lead + a)];
    std::int64_t k = attrs.shape[static_cast<std::size_t>(a)];
    if (k > size)
      fail("has a window " + shape_string(attrs.shape) + " larger than " + x.to_string());
    shape.push_back(size - k + 1);
  }
  return {shape, x.dtype};
}

TensorType windows_sum(const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& g = in[0];
  expect_floating(g);
  std::int64_t axes = window_axes(g, attrs, 1);
  std::int64_t lead = g.rank() - axes - 1;
  if (g.shape[static_cast<std::size_t>(lead)] != element_count(attrs.shape)) {
    fail("needs " + std::to_string(element_count(attrs.shape)) + " windows of " +
         shape_string(attrs.shape) + " on axis " + std::to_string(lead) + " of " + g.to_string());
  }
  Shape shape(g.shape.begin(), g.shape.begin() + lead);
  for (std::int64_t a = 0; a < axes; ++a)
    shape.push_back(g.shape[static_cast<std::size_t>(lead + 1 + a)] +
                    attrs.shape[static_cast<std::size_t>(a)] - 1);
  if (!is_floating(attrs.dtype))
    fail(std::string("needs a floating-point result type, got ") + dtype_name(attrs.dtype));
  return {shape, attrs.dtype};
}

TensorType matmul(const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& a = in[0];
  const TensorType& b = in[1];
  expect_floating(a);
  if (a.dtype != b.dtype)
    fail("needs operands of one dtype, got " + a.to_string() + " and " + b.to_string());
  if (a.rank() < 2 || b.rank() < 2)
    fail("needs operands of rank 2 or more, got " + a.to_string() + " and " + b.to_string());
  std::int64_t k = a.shape.back();
  if (b.shape[b.shape.size() - 2] != k) {
    fail("inner dimensions differ: " + a.to_string() + " x " + b.to_string());
  }
  Shape a_batch(a.shape.begin(), a.shape.end() - 2);
  Shape b_batch(b.shape.begin(), b.shape.end() - 2);
  Shape shape = broadcast_or_fail(a_batch, b_batch);
  shape.push_back(a.shape[a.shape.size() - 2]);
  shape.push_back(b.shape.back());
  if (attrs.dtype != a.dtype && attrs.dtype != DType::f32) {
    fail(std::string("accumulates into f32 or the operands' dtype, not ") +
         dtype_name(attrs.dtype));
  }
  return {shape, attrs.dtype};
}

TensorType gather(const std::vector<TensorType>& in) {
  const TensorType& table = in[0];
  const TensorType& indices = in[1];
  if (table.rank() < 1) fail("needs a table of rank 1 or more, got " + table.to_string());
  if (indices.dtype != DType::i32) fail("needs i32 indices, got " + indices.to_string());
  Shape shape = indices.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  return {shape, table.dtype};
}

// (logits [..., C], labels [...]) -> per-row losses [...]; with g [...] -> the logits' gradient.
// The result is dtype: the logits' dtype or f32.
TensorType cross_entropy(OpKind op, const std::vector<TensorType>& in, const Attributes& attrs) {
  bool gradient = op == OpKind::softmax_cross_entropy_grad;
  const TensorType& logits = in[0];
  const TensorType& labels = in[1];
  expect_floating(logits);
  if (logits.rank() < 1) fail("needs logits of rank 1 or more, got " + logits.to_string());
  if (labels.dtype != DType::i32) fail("needs i32 labels, got " + labels.to_string());
  Shape rows(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != rows)
    fail("labels " + labels.to_string() + " do not match the rows of logits " + logits.to_string());
  if (attrs.dtype != logits.dtype && attrs.dtype != DType::f32) {
    fail(std::string("gives the logits' dtype or f32, not ") + dtype_name(attrs.dtype));
  }
  if (!gradient) return {rows, attrs.dtype};
  if (in[2].shape != rows || (in[2].dtype != logits.dtype && in[2].dtype != DType::f32))
    fail("the gradient " + in[2].to_string() + " does not match the rows of logits " +
         logits.to_string());
  return {logits.shape, attrs.dtype};
}

TensorType scatter_add(const std::vector<TensorType>& in, const Attributes& attrs) {
  const TensorType& indices = in[0];
  const TensorType& updates = in[1];
  if (indices.dtype != DType::i32) fail("needs i32 indices, got " + indices.to_string());
  if (attrs.depth <= 0) fail("needs a positive number of rows");
  bool prefix = updates.rank() >= indices.rank() &&
                std::equal(indices.shape.begin(), indices.shape.end(), updates.shape.begin());
  if (!prefix)
    fail("updates " + updates.to_string() + " do not start with the indices' shape " +
         shape_string(indices.shape));
  Shape shape = {attrs.depth};
  shape.insert(shape.end(), updates.shape.begin() + indices.rank(), updates.shape.end());
  return {shape, updates.dtype};
}

}  // namespace

TensorType infer_type(OpKind op, const std::vector<TensorType>& in, const Attributes& attrs) {
  int arity = op_arity(op);
  if (arity >= 0) expect_arity(in, static_cast<std::size_t>(arity));
  if (arity < 0 && in.empty()) fail("needs at least one operand");
  if (is_binary_elementwise(op)) return binary(op, in);
  if (is_unary_elementwise(op)) return unary(op, in, attrs);
  switch (op) {
    case OpKind::input:
    case OpKind::variable:
      fail("is a leaf: its type is given, not inferred");
    case OpKind::constant:
      if (attrs.values.size() != 1 &&
          static_cast<std::int64_t>(attrs.values.size()) != element_count(attrs.shape)) {
        fail("needs one value or one per element of " + shape_string(attrs.shape));
      }
      return {attrs.shape, attrs.dtype};
    case OpKind::iota:
      expect_axis(attrs.axis, static_cast<std::int64_t>(attrs.shape.size()));
      return {attrs.shape, attrs.dtype};
    case OpKind::where: {
      if (in[0].dtype != DType::boolean)
        fail("needs a boolean condition, got " + in[0].to_string());
      if (in[1].dtype != in[2].dtype)
        fail("needs values of one dtype, got " + in[1].to_string() + " and " + in[2].to_string());
      Shape shape = broadcast_or_fail(broadcast_or_fail(in[0].shape, in[1].shape), in[2].shape);
      return {shape, in[1].dtype};
    }
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_max:
      return reduction(op, in, attrs);
    case OpKind::argmax:
      return argmax(in, attrs);
    case OpKind::reshape:
      return reshape(in, attrs);
    case OpKind::transpose:
      return transpose(in, attrs);
    case OpKind::slice:
      return slice(in, attrs);
    case OpKind::pad:
      return pad(in, attrs);
    case OpKind::concat:
      return concat(in, attrs);
    case OpKind::broadcast_to:
      return broadcast_to(in, attrs);
    case OpKind::windows:
      return windows(in, attrs);
    case OpKind::windows_sum:
      return windows_sum(in, attrs);
    case OpKind::matmul:
      return matmul(in, attrs);
    case OpKind::softmax:
    case OpKind::log_softmax:
      expect_floating(in[0]);
      expect_axis(attrs.axis, in[0].rank());
      return in[0];
    case OpKind::softmax_grad:
      expect_floating(in[0]);
      expect_axis(attrs.axis, in[0].rank());
      if (in[1] != in[0])
        fail("needs a gradient of its result's type " + in[0].to_string() + ", got " +
             in[1].to_string());
      return in[0];
    case OpKind::softmax_cross_entropy:
    case OpKind::softmax_cross_entropy_grad:
      return cross_entropy(op, in, attrs);
    case OpKind::layer_norm:
      expect_floating(in[0]);
      if (in[0].rank() < 1) fail("needs an operand of rank 1 or more");
      return in[0];
    case OpKind::gather:
      return gather(in);
    case OpKind::scatter_add:
      return scatter_add(in, attrs);
    case OpKind::one_hot: {
      if (in[0].dtype != DType::i32) fail("needs i32 indices, got " + in[0].to_string());
      if (attrs.depth <= 0) fail("needs a positive depth");
      Shape shape = in[0].shape;
      shape.push_back(attrs.depth);
      return {shape, attrs.dtype};
    }
    case OpKind::dropout:
      expect_floating(in[0]);
      if (in[1].dtype != DType::i32 || in[1].rank() != 0)
        fail("needs the global step (an i32 scalar) as second operand");
      if (attrs.rate < 0.0 || attrs.rate >= 1.0) fail("needs a rate in [0, 1)");
      return in[0];
    default:
      break;
  }
  fail("has no type rule");
}

}  // namespace csrun::graph
