#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace csrun::graph {

// Element types of traced tensors. The three 16-bit float formats exist for mixed precision:
// cb16 is Cerebras' cbfloat16 (1 sign, 6 exponent, 9 mantissa bits).
enum class DType : std::uint8_t { f32, f16, bf16, cb16, i32, boolean };

const char* dtype_name(DType dtype);
bool is_floating(DType dtype);
// The 16-bit float formats (f16, bf16, cb16).
constexpr bool is_half(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::cb16;
}
std::size_t dtype_size(DType dtype);

using Shape = std::vector<std::int64_t>;

std::int64_t element_count(const Shape& shape);
std::string shape_string(const Shape& shape);
// NumPy broadcasting of two shapes, or nothing when they are incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// How a value of shape `to`, read in flat order, reads an operand of shape `from` that broadcasts
// to it: its element i reads the operand's element (i / outer_repeat % outer_period) * period +
// i / repeat % period. That holds when the operand's axes that are not broadcast form at most two
// runs of consecutive axes of `to` (a row of biases [N] or a mask [S, S] under [B, H, S, S]:
// repeat 1; a row's sum [B, H, S, 1]: repeat S; a scalar: period 1; a padding mask [B, 1, 1, S]
// under [B, H, S, S]: period S, and the sample's run outer_period B, outer_repeat H * S * S);
// nothing otherwise, or when `from` does not broadcast to `to`.
struct FlatBroadcast {
  std::int64_t repeat = 1;
  std::int64_t period = 1;
  std::int64_t outer_repeat = 1;
  std::int64_t outer_period = 1;  // 1: no outer run

  // The operand's element that element `index` of the flat run reads.
  std::int64_t element(std::int64_t index) const {
    return index / outer_repeat % outer_period * period + index / repeat % period;
  }
  // How many elements from `index` on read consecutive elements of the operand (repeat 1) or
  // the same element (a row's statistic).
  std::int64_t run_at(std::int64_t index) const {
    return repeat == 1 ? period - index % period : repeat - index % repeat;
  }
  // Whether a flat run of `count` elements reads the operand as it is stored: a single value, or
  // the operand element for element.
  bool in_place(std::int64_t count) const {
    return outer_period == 1 && (period == 1 || (repeat == 1 && period == count));
  }
};
std::optional<FlatBroadcast> flat_broadcast(const Shape& from, const Shape& to);

struct TensorType {
  Shape shape;
  DType dtype = DType::f32;

  std::int64_t rank() const { return static_cast<std::int64_t>(shape.size()); }
  std::string to_string() const;   // "f32[4, 8]"
  std::int64_t byte_size() const;  // its elements' bytes
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

}  // namespace csrun::graph
