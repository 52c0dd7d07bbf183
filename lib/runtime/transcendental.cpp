#include "transcendental.hpp"

#include <bit>
#include <cmath>
#include <utility>

// Built with -ffp-contract=off (CMakeLists.txt): a product and a sum are fused only where
// multiply_add says so, as the compiled chains fuse them. The loops vectorize in every kernel set.

namespace csrun::runtime::transcendental {

namespace {

// a b + c, rounded once where the kernel set runs FMA instructions (those whose chains are
// compiled), twice in the baseline set.
float multiply_add(float a, float b, float c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// ((c0 x + c1) x + c2) x + ..., unrolled: a loop in the loop would keep it from vectorizing.
template <std::size_t N>
float horner(const std::array<float, N>& coefficients, float x) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    float y = coefficients[0];
    ((y = multiply_add(y, x, coefficients[I + 1])), ...);
    return y;
  }
  (std::make_index_sequence<N - 1>{});
}

// 2^e for e in [-126, 127]; the garbage exponent of a NaN gives some float, which NaN absorbs.
float power_of_two(std::uint32_t e) {
  return std::bit_cast<float>((e + kExponentBias) << kMantissaBits);
}

// x held to [low, high]; NaN stays NaN.
float held(float x, float low, float high) {
  float above = low > x ? low : x;
  return high < above ? high : above;
}

// y 2^m for an integral m in [-150, 128], rounded once.
float scaled(float y, float m) {
  std::uint32_t exponent = std::bit_cast<std::uint32_t>(m + kExponentShifter) -
                           std::bit_cast<std::uint32_t>(kExponentShifter);
  auto first = static_cast<std::uint32_t>(static_cast<std::int32_t>(exponent) >> 1);
  return y * power_of_two(first) * power_of_two(exponent - first);
}

float exp_value(float x) {
  float held_x = held(x, kExpLowest, kExpHighest);
  float m = std::floor(multiply_add(held_x, kLog2e, 0.5f));
  float r = multiply_add(m, -kLn2High, held_x);
  r = multiply_add(m, -kLn2Low, r);
  float y = multiply_add(horner(kExpPolynomial, r), r * r, r) + 1.0f;
  return scaled(y, m);
}

float erf_value(float x) {
  float held_x = held(x, -kErfLimit, kErfLimit);
  float square = held_x * held_x;
  return horner(kErfNumerator, square) / horner(kErfDenominator, square) * held_x;
}

float sigmoid_value(float x) {
  float e = exp_value(-std::fabs(x));
  return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

}  // namespace

// Flattened: a call left in a loop would keep it from vectorizing.
[[gnu::flatten]] void exp_values(const float* x, float* out, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    out[i] = exp_value(x[i]);
}

[[gnu::flatten]] void erf_values(const float* x, float* out, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    out[i] = erf_value(x[i]);
}

[[gnu::flatten]] void gelu_values(const float* x, float* out, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    out[i] = (0.5f * x[i]) * (1.0f + erf_value(x[i] * kInverseSqrt2));
}

[[gnu::flatten]] void sigmoid_values(const float* x, float* out, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    out[i] = sigmoid_value(x[i]);
}

}  // namespace csrun::runtime::transcendental
