#pragma once

// The 16-bit float formats as the wafer stores them: float16 (1/5/10, bias 15), bfloat16
// (1/8/7, bias 127) and cbfloat16 (1/6/9, bias 31: an assumption, docs/numerics.md).
//
// Narrowing rounds to nearest, ties to even, with gradual underflow; a value beyond the largest
// finite one becomes infinite. NaN becomes PyTorch's quiet NaN: 0x7FC0 for bfloat16 (sign
// dropped, as c10::BFloat16 does), sign | 0x7E00 for float16, sign | 0x7F00 for cbfloat16.
// Widening is exact: every 16-bit value of these formats is a float32 value.
//
// Inline so that every kernel set compiles the conversions for its instruction set; integer
// arithmetic and float additions, which IEEE rounds alike everywhere, so every set gives the same
// bits.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "graph/types.hpp"

namespace csrun::runtime {

namespace half_format {

// Sign, exponent and mantissa of one format, known at compile time so that each conversion
// compiles to straight-line integer code.
template <int kMantissaBits, int kBias, int kExponentBits, std::uint16_t kQuietNan, bool kSignedNan>
struct Format {
  static constexpr int mantissa_bits = kMantissaBits;
  static constexpr int bias = kBias;
  static constexpr std::uint32_t exponent_mask = ((1u << kExponentBits) - 1) << kMantissaBits;
  static constexpr std::uint16_t quiet_nan = kQuietNan;  // without the sign
  static constexpr bool signed_nan = kSignedNan;
};

using Float16 = Format<10, 15, 5, 0x7E00, true>;
using BFloat16 = Format<7, 127, 8, 0x7FC0, false>;
using CBFloat16 = Format<9, 31, 6, 0x7F00, true>;

// Branch-free conversions, so that loops of them vectorize (conversions were half of a CSX step).
// Narrowing rounds the exponent and mantissa fields together to nearest even, re-biased: exact
// from the format's smallest normal value up (a carry past the largest finite value, and
// anything beyond, gives infinity). Below that range float addition does the rounding: adding
// kSubnormalMagic, a power of two where float32's spacing is the format's smallest subnormal,
// rounds to a multiple of it, ties to even, and the sum's bits less the magic's count those
// multiples, the subnormal's encoding (a carry gives the smallest normal's). bfloat16 has
// float32's exponent range, so the first way is exact for every value. The tests compare every
// float32 and every 16-bit value with general value-by-value code.
template <class F>
inline constexpr float kSubnormalMagic =
    std::bit_cast<float>(static_cast<std::uint32_t>(151 - F::bias - F::mantissa_bits) << 23);

template <class F>
std::uint16_t narrow(float value) {
  constexpr int shift = 23 - F::mantissa_bits;
  constexpr std::uint32_t rebias = static_cast<std::uint32_t>(127 - F::bias) << 23;
  constexpr std::uint32_t smallest_normal = static_cast<std::uint32_t>(128 - F::bias) << 23;
  auto bits = std::bit_cast<std::uint32_t>(value);
  std::uint32_t sign = (bits >> 16) & 0x8000u;
  std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  std::uint32_t rounded =
      (magnitude - rebias + (1u << (shift - 1)) - 1u + ((magnitude >> shift) & 1u)) >> shift;
  std::uint32_t encoded = std::min(rounded, F::exponent_mask);
  if constexpr (F::bias != 127) {
    constexpr auto magic = std::bit_cast<std::uint32_t>(kSubnormalMagic<F>);
    std::uint32_t subnormal =
        std::bit_cast<std::uint32_t>(std::bit_cast<float>(magnitude) + kSubnormalMagic<F>) - magic;
    encoded = magnitude < smallest_normal ? subnormal : encoded;
  }
  std::uint16_t nan =
      F::signed_nan ? static_cast<std::uint16_t>(sign | F::quiet_nan) : F::quiet_nan;
  return magnitude > 0x7F800000u ? nan : static_cast<std::uint16_t>(sign | encoded);
}

// `condition ? a : b` as bitwise arithmetic, for widening's float subtraction: without AVX-512's
// masks GCC kept the ternary as a branch around it, and a loop with a branch is not vectorized;
// with -fno-trapping-math (the kernel sets') it vectorizes the ternary as blends, but these
// measured faster (0.28 against 0.43 ns a value with AVX2).
inline std::uint32_t chosen(bool condition, std::uint32_t a, std::uint32_t b) {
  std::uint32_t mask = 0u - static_cast<std::uint32_t>(condition);
  return (a & mask) | (b & ~mask);
}

// Widening picks the normal, special (infinity, NaN) or subnormal encoding's float32 bits; a
// subnormal's, its count of the smallest subnormal, is the magic with that count added to its
// bits, less the magic (exact).
template <class F>
float widen(std::uint16_t bits) {
  constexpr int float_shift = 23 - F::mantissa_bits;
  if constexpr (F::bias == 127) {
    return std::bit_cast<float>(std::uint32_t{bits} << float_shift);
  } else {
    constexpr auto magic = std::bit_cast<std::uint32_t>(kSubnormalMagic<F>);
    std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    std::uint32_t magnitude = bits & 0x7FFFu;
    std::uint32_t normal =
        (magnitude << float_shift) + (static_cast<std::uint32_t>(127 - F::bias) << 23);
    std::uint32_t special = (magnitude << float_shift) | 0x7F800000u;
    auto subnormal =
        std::bit_cast<std::uint32_t>(std::bit_cast<float>(magic + magnitude) - kSubnormalMagic<F>);
    std::uint32_t finite = chosen(magnitude < (1u << F::mantissa_bits), subnormal, normal);
    return std::bit_cast<float>(sign | chosen(magnitude >= F::exponent_mask, special, finite));
  }
}

[[noreturn]] inline void not_half(graph::DType dtype) {
  throw std::invalid_argument(std::string("not a 16-bit float type: ") + graph::dtype_name(dtype));
}

// Calls body(Format{}) with the format of `dtype`.
template <class Body>
decltype(auto) with_format(graph::DType dtype, Body&& body) {
  switch (dtype) {
    case graph::DType::bf16:
      return body(BFloat16{});
    case graph::DType::f16:
      return body(Float16{});
    case graph::DType::cb16:
      return body(CBFloat16{});
    default:
      not_half(dtype);
  }
}

}  // namespace half_format

using graph::is_half;

inline std::uint16_t narrow_to_half(float value, graph::DType dtype) {
  return half_format::with_format(
      dtype, [value](auto format) { return half_format::narrow<decltype(format)>(value); });
}

inline float widen_from_half(std::uint16_t bits, graph::DType dtype) {
  return half_format::with_format(
      dtype, [bits](auto format) { return half_format::widen<decltype(format)>(bits); });
}

// The same over `count` values, the format chosen once.
inline void narrow_to_half(const float* values, std::uint16_t* out, std::int64_t count,
                           graph::DType dtype) {
  half_format::with_format(dtype, [&](auto format) {
    for (std::int64_t i = 0; i < count; ++i)
      out[i] = half_format::narrow<decltype(format)>(values[i]);
  });
}

inline void widen_from_half(const std::uint16_t* bits, float* out, std::int64_t count,
                            graph::DType dtype) {
  half_format::with_format(dtype, [&](auto format) {
    for (std::int64_t i = 0; i < count; ++i)
      out[i] = half_format::widen<decltype(format)>(bits[i]);
  });
}

}  // namespace csrun::runtime
