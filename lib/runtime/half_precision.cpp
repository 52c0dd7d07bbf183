#include "half_precision.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace csrun::runtime {

namespace {

// Sign, exponent and mantissa of one format, known at compile time so that each conversion
// compiles to straight-line integer code.
template <int kMantissaBits, int kBias, int kExponentBits, std::uint16_t kQuietNan>
struct HalfFormat {
  static constexpr int mantissa_bits = kMantissaBits;
  static constexpr int bias = kBias;
  static constexpr std::uint32_t exponent_mask = ((1u << kExponentBits) - 1) << kMantissaBits;
  static constexpr std::uint16_t quiet_nan = kQuietNan;  // without the sign
};

using Float16 = HalfFormat<10, 15, 5, 0x7E00>;
using BFloat16 = HalfFormat<7, 127, 8, 0x7FC0>;
using CBFloat16 = HalfFormat<9, 31, 6, 0x7F00>;

// `value` >> `shift`, rounded to nearest with ties to even.
std::uint32_t shift_right_even(std::uint32_t value, int shift) {
  if (shift == 0) return value;
  if (shift > 31) return 0;
  std::uint32_t kept = value >> shift;
  std::uint32_t dropped = value & ((1u << shift) - 1);
  std::uint32_t half = 1u << (shift - 1);
  if (dropped > half || (dropped == half && (kept & 1u))) ++kept;
  return kept;
}

template <class Format>
std::uint16_t narrow(float value, bool signed_nan) {
  auto bits = std::bit_cast<std::uint32_t>(value);
  auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return signed_nan ? sign | Format::quiet_nan : Format::quiet_nan;
  if (magnitude == 0x7F800000u) return sign | static_cast<std::uint16_t>(Format::exponent_mask);
  // value = significand * 2^(exponent - 23), the significand with its leading one when normal.
  int exponent = static_cast<int>(magnitude >> 23) - 127;
  std::uint32_t significand = magnitude & 0x7FFFFFu;
  if (exponent == -127) {
    exponent = -126;
  } else {
    significand |= 0x800000u;
  }
  // Below the target's smallest normal exponent, bits go as in its subnormals.
  int target_exponent = std::max(exponent, 1 - Format::bias);
  int shift = (23 - Format::mantissa_bits) + (target_exponent - exponent);
  std::uint32_t rounded = shift_right_even(significand, shift);
  // The leading one (or a carry out of the mantissa) lands in the exponent field.
  std::uint32_t encoded =
      (static_cast<std::uint32_t>(target_exponent + Format::bias - 1) << Format::mantissa_bits) +
      rounded;
  if (encoded >= Format::exponent_mask) encoded = Format::exponent_mask;
  return sign | static_cast<std::uint16_t>(encoded);
}

template <class Format>
float widen(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t magnitude = bits & 0x7FFFu;
  std::uint32_t mantissa = magnitude & ((1u << Format::mantissa_bits) - 1);
  std::uint32_t exponent = magnitude >> Format::mantissa_bits;
  constexpr int float_shift = 23 - Format::mantissa_bits;
  if (magnitude >= Format::exponent_mask) {
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << float_shift));
  }
  if (exponent == 0) {
    float subnormal =
        std::ldexp(static_cast<float>(mantissa), 1 - Format::bias - Format::mantissa_bits);
    return sign ? -subnormal : subnormal;
  }
  std::uint32_t float_exponent = exponent - static_cast<std::uint32_t>(Format::bias) + 127u;
  return std::bit_cast<float>(sign | (float_exponent << 23) | (mantissa << float_shift));
}

[[noreturn]] void not_half(graph::DType dtype) {
  throw std::invalid_argument(std::string("not a 16-bit float type: ") + graph::dtype_name(dtype));
}

}  // namespace

std::uint16_t narrow_to_half(float value, graph::DType dtype) {
  switch (dtype) {
    case graph::DType::bf16:
      return narrow<BFloat16>(value, false);
    case graph::DType::f16:
      return narrow<Float16>(value, true);
    case graph::DType::cb16:
      return narrow<CBFloat16>(value, true);
    default:
      not_half(dtype);
  }
}

float widen_from_half(std::uint16_t bits, graph::DType dtype) {
  switch (dtype) {
    case graph::DType::bf16:
      return widen<BFloat16>(bits);
    case graph::DType::f16:
      return widen<Float16>(bits);
    case graph::DType::cb16:
      return widen<CBFloat16>(bits);
    default:
      not_half(dtype);
  }
}

}  // namespace csrun::runtime
