#pragma once

// The runtime's exp and erf of f32 values, and exact gelu and sigmoid, which are built on them.
// Each is a fixed sequence of IEEE operations: products, sums and fused multiply-adds (a product
// and a sum where the kernel set has no FMA: the baseline set), minimum, maximum, floor, integer
// arithmetic on the exponent, a division. The kernel sets' loops (transcendental.cpp, compiled
// without contraction) and the chains compiled to machine code (compiled_chain.cpp), which emit
// the same operations in the same order, give the same bits: the same in every kernel set with
// FMA, interpreted or compiled. Eigen's vectorized functions, which these replace, differed
// between the sets (other clamps) and in an array's scalar head and tail, and sigmoid was the
// standard exp an element at a time, so a chain with them could only be run op by op. Internal to
// lib/runtime.

#include <array>
#include <cstdint>
#include <numbers>

namespace csrun::runtime::transcendental {

// exp(x) = 2^m e^r with m = floor(x log2(e) + 1/2), r = x - m ln(2) in two parts (m times the
// high part is exact, so r keeps its bits) and e^r by Cephes' polynomial. 2^m is applied as two
// normal powers of two, 2^(m >> 1) then 2^(m - (m >> 1)): the first product is exact, so a
// subnormal result is rounded once and one beyond the largest float overflows to infinity. x is
// first held to [kExpLowest, kExpHighest], beyond which the result is 0 or infinity anyway; NaN
// stays NaN. m's bits as an integer: those of m + kExponentShifter less the shifter's.
inline constexpr float kExpLowest = -104.0f;  // e^-104 is below half the smallest subnormal
inline constexpr float kExpHighest = 89.0f;   // e^89 is above the largest float
inline constexpr float kLog2e = std::numbers::log2e_v<float>;
inline constexpr float kLn2High = 0.693359375f;  // 355 / 512
inline constexpr float kLn2Low = -2.12194440e-4f;
// e^r ~ ((((p0 r + p1) r + p2) r + p3) r + p4) r + p5) r^2 + r + 1.
inline constexpr std::array<float, 6> kExpPolynomial = {1.9875691500e-4f, 1.3981999507e-3f,
                                                        8.3334519073e-3f, 4.1665795894e-2f,
                                                        1.6666665459e-1f, 5.0000001201e-1f};
inline constexpr float kExponentShifter = 12582912.0f;  // 1.5 2^23: m is its last bits
inline constexpr std::uint32_t kExponentBias = 127;
inline constexpr int kMantissaBits = 23;

// erf(x) = p(x^2) / q(x^2) x for x held to [-kErfLimit, kErfLimit] (beyond it erf rounds to +-1;
// NaN stays NaN), the rational approximation Eigen 3.4 uses; coefficients in Horner's order,
// highest first. x multiplies last, so that a tiny x loses no bits to a subnormal product.
inline constexpr float kErfLimit = 4.0f;
inline constexpr std::array<float, 7> kErfNumerator = {
    -2.72614225801306e-10f, 2.77068142495902e-08f,  -2.10102402082508e-06f, -5.69250639462346e-05f,
    -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
inline constexpr std::array<float, 5> kErfDenominator = {
    -1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f,
    -1.42647390514189e-02f};

// gelu(x) = (x / 2) (1 + erf(x / sqrt(2))), the division by sqrt(2) as a product.
inline constexpr float kInverseSqrt2 = 1.0f / std::numbers::sqrt2_v<float>;

// sigmoid(x) = (x >= 0 ? 1 : e) / (1 + e) with e = exp(-|x|): never an overflow, and the
// subnormal results of a very negative x kept.

// out[i] = f(x[i]) for i < count; out may be x.
void exp_values(const float* x, float* out, std::int64_t count);
void erf_values(const float* x, float* out, std::int64_t count);
void gelu_values(const float* x, float* out, std::int64_t count);
void sigmoid_values(const float* x, float* out, std::int64_t count);

}  // namespace csrun::runtime::transcendental
