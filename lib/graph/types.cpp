#include "types.hpp"

#include <algorithm>
#include <stdexcept>

namespace csrun::graph {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::cb16:
      return "cb16";
    case DType::i32:
      return "i32";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::cb16;
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::cb16:
      return 2;
    case DType::boolean:
      return 1;
  }
  return 4;
}

std::int64_t element_count(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) {
    if (__builtin_mul_overflow(count, dim, &count))
      throw std::overflow_error("a tensor of shape " + shape_string(shape) +
                                " has more elements than a 64-bit count holds");
  }
  return count;
}

std::string shape_string(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  std::size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    result[i] = da == 1 ? db : da;
  }
  return result;
}

std::optional<FlatBroadcast> flat_broadcast(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return std::nullopt;
  std::size_t pad = to.size() - from.size();
  auto dim = [&](std::size_t axis) { return axis < pad ? std::int64_t{1} : from[axis - pad]; };
  // From the last axis: broadcast axes, kept ones (the inner run), broadcast, kept (the outer
  // run), broadcast. An axis of 1 in both shapes belongs to either.
  std::size_t axis = to.size();
  auto take = [&](bool kept) {
    std::int64_t product = 1;
    for (; axis > 0; --axis) {
      std::int64_t length = to[axis - 1];
      bool matches = kept ? dim(axis - 1) == length : dim(axis - 1) == 1;
      if (!matches) break;
      product *= length;
    }
    return product;
  };
  FlatBroadcast broadcast;
  broadcast.repeat = take(false);
  broadcast.period = take(true);
  std::int64_t gap = take(false);
  broadcast.outer_period = take(true);
  take(false);
  if (axis > 0) return std::nullopt;
  if (broadcast.period == 1) broadcast.repeat = 1;
  broadcast.outer_repeat =
      broadcast.outer_period == 1 ? 1 : broadcast.repeat * broadcast.period * gap;
  return broadcast;
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + shape_string(shape);
}

std::int64_t TensorType::byte_size() const {
  return element_count(shape) * static_cast<std::int64_t>(dtype_size(dtype));
}

}  // namespace csrun::graph
