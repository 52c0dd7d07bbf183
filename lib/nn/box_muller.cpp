#include "box_muller.hpp"

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace csrun::nn {

namespace {

// ln 2 split so that k * kLn2High is exact for |k| < 2^11.
constexpr double kLn2High = 0x1.62e42fefa3800p-1;
constexpr double kLn2Low = 0x1.ef35793c76730p-45;
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;
constexpr double kTwoPi = 0x1.921fb54442d18p+2;

// ln x for a positive normal x: x = 2^k m with m in [sqrt(1/2), sqrt(2)), and
// ln m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with s = (m - 1) / (m + 1), |s| < 0.172:
// eleven terms leave an error below 1e-18 relative. No conversion between integers and doubles
// (SSE and AVX2 have no packed one for 64-bit integers), so loops of it vectorize.
inline double log_positive(double x) {
  auto bits = std::bit_cast<std::uint64_t>(x);
  // 2^52 + the biased exponent, as a double; less 2^52 + 1023, exactly k.
  double k = std::bit_cast<double>(0x4330000000000000ull | (bits >> 52)) - (0x1p52 + 1023.0);
  double m = std::bit_cast<double>((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
  bool halve = m > kSqrt2;
  m = halve ? 0.5 * m : m;
  k = halve ? k + 1.0 : k;
  double f = m - 1.0;  // exact: m is within a factor of two of 1
  double s = f / (2.0 + f);
  double z = s * s;
  double series = 1.0 / 21.0;
  series = 1.0 / 19.0 + z * series;
  series = 1.0 / 17.0 + z * series;
  series = 1.0 / 15.0 + z * series;
  series = 1.0 / 13.0 + z * series;
  series = 1.0 / 11.0 + z * series;
  series = 1.0 / 9.0 + z * series;
  series = 1.0 / 7.0 + z * series;
  series = 1.0 / 5.0 + z * series;
  series = 1.0 / 3.0 + z * series;
  double log_m = 2.0 * s + 2.0 * s * (z * series);
  return k * kLn2High + (k * kLn2Low + log_m);
}

// Taylor series of sin t and cos t for |t| <= pi/4, to t^17 and t^18 (truncation below 1e-19),
// by Horner's rule in t^2 with the coefficients +-1/n!.
inline double sin_quarter(double t) {
  double z = t * t;
  double series = 1.0 / 355687428096000.0;
  series = -1.0 / 1307674368000.0 + z * series;
  series = 1.0 / 6227020800.0 + z * series;
  series = -1.0 / 39916800.0 + z * series;
  series = 1.0 / 362880.0 + z * series;
  series = -1.0 / 5040.0 + z * series;
  series = 1.0 / 120.0 + z * series;
  series = -1.0 / 6.0 + z * series;
  return t + t * (z * series);
}

inline double cos_quarter(double t) {
  double z = t * t;
  double series = -1.0 / 6402373705728000.0;
  series = 1.0 / 20922789888000.0 + z * series;
  series = -1.0 / 87178291200.0 + z * series;
  series = 1.0 / 479001600.0 + z * series;
  series = -1.0 / 3628800.0 + z * series;
  series = 1.0 / 40320.0 + z * series;
  series = -1.0 / 720.0 + z * series;
  series = 1.0 / 24.0 + z * series;
  series = -0.5 + z * series;
  return 1.0 + z * series;
}

// The transform of one pair, inlined into the loop below so that it vectorizes.
[[gnu::always_inline]] inline std::array<double, 2> normal_pair(double u1, double u2) {
  double radius = std::sqrt(-2.0 * log_positive(u1));
  // 2 pi u2 = q pi/2 + 2 pi r, with the quarter turn q the nearest to 4 u2 and r = u2 - q/4 in
  // [-1/8, 1/8], both exact: the angle is reduced without error.
  double quarters = std::floor(4.0 * u2 + 0.5);
  double t = (u2 - 0.25 * quarters) * kTwoPi;
  double sine = sin_quarter(t);
  double cosine = cos_quarter(t);
  // cos(t + q pi/2) and sin(t + q pi/2) for q = 0, 1, 2, 3 (4 is 0), chosen by comparisons of
  // doubles so that the loop vectorizes.
  bool odd = (quarters == 1.0) | (quarters == 3.0);
  double cos_turned = odd ? sine : cosine;
  double sin_turned = odd ? cosine : sine;
  bool cos_negative = (quarters == 1.0) | (quarters == 2.0);
  bool sin_negative = (quarters == 2.0) | (quarters == 3.0);
  cos_turned = cos_negative ? -cos_turned : cos_turned;
  sin_turned = sin_negative ? -sin_turned : sin_turned;
  return {radius * cos_turned, radius * sin_turned};
}

}  // namespace

std::array<double, 2> box_muller(double u1, double u2) {
  return normal_pair(u1, u2);
}

[[gnu::target_clones("avx2", "default")]] void box_muller(std::span<const double> u1,
                                                          std::span<const double> u2,
                                                          std::span<double> normals) {
  for (std::size_t i = 0; i < u1.size(); ++i) {
    std::array<double, 2> pair = normal_pair(u1[i], u2[i]);
    normals[2 * i] = pair[0];
    normals[2 * i + 1] = pair[1];
  }
}

}  // namespace csrun::nn
