#pragma once

#include <cstdint>

#include "graph/types.hpp"

namespace csrun::runtime {

// The 16-bit float formats as the wafer stores them: float16 (1/5/10, bias 15), bfloat16
// (1/8/7, bias 127) and cbfloat16 (1/6/9, bias 31: an assumption, docs/numerics.md).
//
// Narrowing rounds to nearest, ties to even, with gradual underflow; a value beyond the largest
// finite one becomes infinite. NaN becomes PyTorch's quiet NaN: 0x7FC0 for bfloat16 (sign
// dropped, as c10::BFloat16 does), sign | 0x7E00 for float16, sign | 0x7F00 for cbfloat16.
std::uint16_t narrow_to_half(float value, graph::DType dtype);

// Exact: every 16-bit value of these formats is a float32 value.
float widen_from_half(std::uint16_t bits, graph::DType dtype);

}  // namespace csrun::runtime
