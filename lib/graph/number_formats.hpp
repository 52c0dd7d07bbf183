#pragma once

#include <cstdint>

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

}  // namespace csrun::graph
