#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "types.hpp"

namespace csrun::graph {

// A binary floating-point format with IEEE-754 rules (gradual underflow, infinities, NaN).
struct FloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
};

// float16: 1/5/10, bias 15. bfloat16: 1/8/7, bias 127. cbfloat16: 1/6/9 with bias 31, an
// assumption: Cerebras does not publish its bias (docs/numerics.md).
FloatFormat format_of(DType dtype);

// `value` rounded to the nearest value of `format`, ties to even; beyond the largest finite
// value it becomes infinite, NaN stays NaN. `value` is first rounded to float32, as a float32
// tensor would be.
double round_to_format(double value, FloatFormat format);

// `value` as an i32: truncated toward zero and saturated to the i32 range; NaN is 0. How every
// integer result is stored (a cast, an integer op that overflows).
inline std::int32_t to_i32(double value) {
  if (std::isnan(value)) return 0;
  double limit = static_cast<double>(std::numeric_limits<std::int32_t>::max());
  return static_cast<std::int32_t>(std::trunc(std::fmin(std::fmax(value, -limit - 1.0), limit)));
}

}  // namespace csrun::graph
