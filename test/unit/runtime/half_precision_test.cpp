// Every float32 bit pattern through each 16-bit format: bfloat16 and float16 bit for bit as
// PyTorch converts them (c10::BFloat16 and fp16_ieee_from_fp32_value, restated here), cbfloat16
// against rounding to nearest, ties to even, computed another way.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/half_precision.hpp"

using csrun::graph::DType;
using csrun::runtime::narrow_to_half;
using csrun::runtime::widen_from_half;

namespace {

// Runs `check` on every 32-bit pattern across the machine's cores; returns the first pattern it
// rejects, or nothing. Each block of patterns is checked whole, without an exit in the loop (which
// lets the compiler vectorize it), and searched for its first rejected pattern only when it has
// one.
template <class Check>
std::optional<std::uint32_t> first_failure(Check check) {
  constexpr std::uint64_t kBlock = 1 << 16;
  constexpr std::uint64_t kBlocks = (std::uint64_t{1} << 32) / kBlock;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> failure{UINT64_MAX};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::uint64_t block = t; block < kBlocks; block += threads) {
        auto first = static_cast<std::uint32_t>(block * kBlock);
        std::uint32_t rejected = 0;
        for (std::uint32_t i = 0; i < kBlock; ++i)
          rejected += !check(first + i);
        if (rejected == 0) continue;
        std::uint64_t bits = first;
        while (check(static_cast<std::uint32_t>(bits)))
          ++bits;
        std::uint64_t seen = failure.load();
        while (bits < seen && !failure.compare_exchange_weak(seen, bits)) {
        }
        return;
      }
    });
  }
  for (std::thread& worker : workers)
    worker.join();
  if (failure.load() == UINT64_MAX) return std::nullopt;
  return static_cast<std::uint32_t>(failure.load());
}

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

// Any format, value by value, the way the definitions read: the reference the branch-free
// conversions are checked against.
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

std::uint16_t pytorch_bfloat16(std::uint32_t bits) {
  if (std::isnan(std::bit_cast<float>(bits))) return 0x7FC0;
  std::uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding_bias) >> 16);
}

// PyTorch's float16 conversion (c10::detail::fp16_ieee_from_fp32_value, from the FP16 library):
// float arithmetic does the rounding. Scaling up and back down makes values beyond float16's
// range infinite; adding a power of two chosen from the exponent leaves exactly the bits float16
// keeps, rounded to nearest even by the float addition itself.
std::uint16_t pytorch_float16(std::uint32_t bits) {
  float magnitude = std::fabs(std::bit_cast<float>(bits));
  float base = (magnitude * 0x1.0p+112f) * 0x1.0p-110f;
  std::uint32_t doubled = bits + bits;
  std::uint32_t sign = bits & 0x80000000u;
  std::uint32_t bias = std::max(doubled & 0xFF000000u, 0x71000000u);
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  std::uint32_t rounded = std::bit_cast<std::uint32_t>(base);
  std::uint32_t nonsign = ((rounded >> 13) & 0x7C00u) + (rounded & 0x0FFFu);
  return static_cast<std::uint16_t>((sign >> 16) | (doubled > 0xFF000000u ? 0x7E00u : nonsign));
}

// cbfloat16 rounding computed another way: in its normal range, float32's bits rounded to 9
// mantissa bits (ties to even); below it, float addition rounds to multiples of the smallest
// subnormal, 2^-39 (the spacing of floats near 2^-16).
float cbfloat16_reference(float value) {
  constexpr float kSmallestNormal = 0x1.0p-30f;
  constexpr float kLargest = 0x1.ff8p+31f;  // (2 - 2^-9) * 2^31
  float magnitude = std::fabs(value);
  float rounded;
  if (magnitude < kSmallestNormal) {
    rounded = (magnitude + 0x1.0p-16f) - 0x1.0p-16f;
  } else {
    auto bits = std::bit_cast<std::uint32_t>(magnitude);
    bits = (bits + 0x1FFFu + ((bits >> 14) & 1u)) & ~0x3FFFu;
    rounded = std::bit_cast<float>(bits);
  }
  if (rounded > kLargest) rounded = INFINITY;
  return std::copysign(rounded, value);
}

}  // namespace

TEST_CASE("bfloat16 rounding is PyTorch's for every float32") {
  auto failure = first_failure([](std::uint32_t bits) {
    return narrow_to_half(std::bit_cast<float>(bits), DType::bf16) == pytorch_bfloat16(bits);
  });
  INFO("first differing pattern 0x" << std::hex << failure.value_or(0));
  CHECK_FALSE(failure);
}

TEMPLATE_TEST_CASE("the branch-free conversions give the general code's bits for every value", "",
                   csrun::runtime::half_format::BFloat16, csrun::runtime::half_format::Float16,
                   csrun::runtime::half_format::CBFloat16) {
  namespace format = csrun::runtime::half_format;
  auto failure = first_failure([](std::uint32_t bits) {
    float value = std::bit_cast<float>(bits);
    return format::narrow<TestType>(value) == narrow_general<TestType>(value);
  });
  INFO("first differing pattern 0x" << std::hex << failure.value_or(0));
  CHECK_FALSE(failure);
  int widened_otherwise = 0;
  for (std::uint32_t half = 0; half <= 0xFFFF; ++half) {
    auto bits = static_cast<std::uint16_t>(half);
    widened_otherwise += std::bit_cast<std::uint32_t>(format::widen<TestType>(bits)) !=
                         std::bit_cast<std::uint32_t>(widen_general<TestType>(bits));
  }
  CHECK(widened_otherwise == 0);
}

TEST_CASE("an array narrowed at once equals its values narrowed one by one") {
  std::vector<float> values;
  for (std::uint32_t bits = 0; bits < (1u << 20); ++bits)
    values.push_back(std::bit_cast<float>(bits * 4093u));  // every exponent, subnormals, NaNs
  for (DType dtype : {DType::bf16, DType::f16, DType::cb16}) {
    std::vector<std::uint16_t> at_once(values.size());
    narrow_to_half(values.data(), at_once.data(), static_cast<std::int64_t>(values.size()), dtype);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < values.size(); ++i)
      differing += at_once[i] != narrow_to_half(values[i], dtype);
    CHECK(differing == 0);
  }
}

TEST_CASE("float16 rounding is PyTorch's for every float32") {
  auto failure = first_failure([](std::uint32_t bits) {
    return narrow_to_half(std::bit_cast<float>(bits), DType::f16) == pytorch_float16(bits);
  });
  INFO("first differing pattern 0x" << std::hex << failure.value_or(0));
  CHECK_FALSE(failure);
}

TEST_CASE("cbfloat16 rounding is to the nearest value, ties to even, for every float32") {
  auto failure = first_failure([](std::uint32_t bits) {
    float value = std::bit_cast<float>(bits);
    std::uint16_t rounded = narrow_to_half(value, DType::cb16);
    if (std::isnan(value)) return (rounded & 0x7FFF) == 0x7F00;
    float expected = cbfloat16_reference(value);
    return std::bit_cast<std::uint32_t>(widen_from_half(rounded, DType::cb16)) ==
           std::bit_cast<std::uint32_t>(expected);
  });
  INFO("first differing pattern 0x" << std::hex << failure.value_or(0));
  CHECK_FALSE(failure);
}

TEST_CASE("every 16-bit value widens exactly and narrows back to itself") {
  for (DType dtype : {DType::bf16, DType::f16, DType::cb16}) {
    INFO(csrun::graph::dtype_name(dtype));
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
      float wide = widen_from_half(static_cast<std::uint16_t>(bits), dtype);
      if (std::isnan(wide)) continue;
      REQUIRE(narrow_to_half(wide, dtype) == bits);
    }
  }
  CHECK(widen_from_half(0x3F80, DType::bf16) == 1.0f);
  CHECK(widen_from_half(0x3C00, DType::f16) == 1.0f);
  CHECK(widen_from_half(31 << 9, DType::cb16) == 1.0f);
  CHECK(widen_from_half(0x0001, DType::cb16) == std::ldexp(1.0f, -39));
  CHECK(std::isinf(widen_from_half(0x3F << 9, DType::cb16)));
}

TEST_CASE("a non-16-bit type is refused") {
  CHECK_THROWS_WITH(narrow_to_half(1.0f, DType::i32), Catch::Contains("not a 16-bit float type"));
}
