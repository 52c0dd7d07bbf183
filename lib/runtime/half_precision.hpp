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
// arithmetic only, so every set gives the same bits.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

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

// `value` >> `shift`, rounded to nearest with ties to even.
inline std::uint32_t shift_right_even(std::uint32_t value, int shift) {
  if (shift == 0) return value;
  if (shift > 31) return 0;
  std::uint32_t kept = value >> shift;
  std::uint32_t dropped = value & ((1u << shift) - 1);
  std::uint32_t half = 1u << (shift - 1);
  if (dropped > half || (dropped == half && (kept & 1u))) ++kept;
  return kept;
}

// Any format, value by value.
template <class F>
std::uint16_t narrow_general(float value) {
  auto bits = std::bit_cast<std::uint32_t>(value);
  auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return F::signed_nan ? sign | F::quiet_nan : F::quiet_nan;
  if (magnitude == 0x7F800000u) return sign | static_cast<std::uint16_t>(F::exponent_mask);
  // value = significand * 2^(exponent - 23), the significand with its leading one when normal.
  int exponent = static_cast<int>(magnitude >> 23) - 127;
  std::uint32_t significand = magnitude & 0x7FFFFFu;
  if (exponent == -127) {
    exponent = -126;
  } else {
    significand |= 0x800000u;
  }
  // Below the target's smallest normal exponent, bits go as in its subnormals.
  int target_exponent = std::max(exponent, 1 - F::bias);
  int shift = (23 - F::mantissa_bits) + (target_exponent - exponent);
  std::uint32_t rounded = shift_right_even(significand, shift);
  // The leading one (or a carry out of the mantissa) lands in the exponent field.
  std::uint32_t encoded =
      (static_cast<std::uint32_t>(target_exponent + F::bias - 1) << F::mantissa_bits) + rounded;
  if (encoded >= F::exponent_mask) encoded = F::exponent_mask;
  return sign | static_cast<std::uint16_t>(encoded);
}

template <class F>
float widen_general(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t magnitude = bits & 0x7FFFu;
  std::uint32_t mantissa = magnitude & ((1u << F::mantissa_bits) - 1);
  std::uint32_t exponent = magnitude >> F::mantissa_bits;
  constexpr int float_shift = 23 - F::mantissa_bits;
  if (magnitude >= F::exponent_mask) {
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << float_shift));
  }
  if (exponent == 0) {
    float subnormal = std::ldexp(static_cast<float>(mantissa), 1 - F::bias - F::mantissa_bits);
    return sign ? -subnormal : subnormal;
  }
  std::uint32_t float_exponent = exponent - static_cast<std::uint32_t>(F::bias) + 127u;
  return std::bit_cast<float>(sign | (float_exponent << 23) | (mantissa << float_shift));
}

// Branch-free conversions, so that loops of them vectorize (conversions were half of a CSX step).
// Narrowing rounds the exponent and mantissa fields together to nearest even, re-biased: exact
// from the format's smallest normal value up (a carry past the largest finite value, and
// anything beyond, gives infinity). For bfloat16, which has float32's exponent range, that is
// every value; the narrower formats' subnormals go to narrow_general (narrow() and the array
// conversion below see to it). The tests compare every float32 and every 16-bit value with the
// general code.
template <class F>
bool below_normal_range(float value) {
  if constexpr (F::bias == 127) return false;
  std::uint32_t magnitude = std::bit_cast<std::uint32_t>(value) & 0x7FFFFFFFu;
  return magnitude != 0 && magnitude < (static_cast<std::uint32_t>(128 - F::bias) << 23);
}

// `value`'s 16-bit encoding when !below_normal_range<F>(value).
template <class F>
std::uint16_t narrow_normal_range(float value) {
  constexpr int shift = 23 - F::mantissa_bits;
  constexpr std::uint32_t rebias = static_cast<std::uint32_t>(127 - F::bias) << 23;
  auto bits = std::bit_cast<std::uint32_t>(value);
  std::uint32_t sign = (bits >> 16) & 0x8000u;
  std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  std::uint32_t rounded =
      (magnitude - rebias + (1u << (shift - 1)) - 1u + ((magnitude >> shift) & 1u)) >> shift;
  std::uint32_t encoded = magnitude == 0 ? 0u : std::min(rounded, F::exponent_mask);
  std::uint16_t nan =
      F::signed_nan ? static_cast<std::uint16_t>(sign | F::quiet_nan) : F::quiet_nan;
  return magnitude > 0x7F800000u ? nan : static_cast<std::uint16_t>(sign | encoded);
}

template <class F>
std::uint16_t narrow(float value) {
  return below_normal_range<F>(value) ? narrow_general<F>(value) : narrow_normal_range<F>(value);
}

// Widening picks the normal, special (infinity, NaN) or subnormal encoding's float32 bits.
template <class F>
float widen(std::uint16_t bits) {
  constexpr int float_shift = 23 - F::mantissa_bits;
  if constexpr (F::bias == 127) {
    return std::bit_cast<float>(std::uint32_t{bits} << float_shift);
  } else {
    std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    std::uint32_t magnitude = bits & 0x7FFFu;
    std::uint32_t mantissa = magnitude & ((1u << F::mantissa_bits) - 1);
    std::uint32_t normal =
        (magnitude << float_shift) + (static_cast<std::uint32_t>(127 - F::bias) << 23);
    std::uint32_t special = 0x7F800000u | (mantissa << float_shift);
    // A subnormal is mantissa x 2^(1 - bias - mantissa_bits), exactly a float32.
    constexpr float kSubnormalUnit =
        std::bit_cast<float>(static_cast<std::uint32_t>(128 - F::bias - F::mantissa_bits) << 23);
    auto subnormal = std::bit_cast<std::uint32_t>(static_cast<float>(mantissa) * kSubnormalUnit);
    std::uint32_t chosen = magnitude >= F::exponent_mask          ? special
                           : magnitude < (1u << F::mantissa_bits) ? subnormal
                                                                  : normal;
    return std::bit_cast<float>(sign | chosen);
  }
}

// Redoes the elements of out[0, count) whose values lie below F's normal range, a block at a
// time: most blocks have none, and finding that vectorizes.
template <class F>
void narrow_below_normal_range(const float* values, std::uint16_t* out, std::int64_t count) {
  if constexpr (F::bias == 127) return;
  constexpr std::int64_t kBlock = 64;
  for (std::int64_t start = 0; start < count; start += kBlock) {
    std::int64_t end = std::min(count, start + kBlock);
    bool any = false;
    for (std::int64_t i = start; i < end; ++i)
      any |= below_normal_range<F>(values[i]);
    if (!any) continue;
    for (std::int64_t i = start; i < end; ++i)
      if (below_normal_range<F>(values[i])) out[i] = narrow_general<F>(values[i]);
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
    using F = decltype(format);
    for (std::int64_t i = 0; i < count; ++i)
      out[i] = half_format::narrow_normal_range<F>(values[i]);
    half_format::narrow_below_normal_range<F>(values, out, count);
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
