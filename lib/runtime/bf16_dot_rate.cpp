#include "bf16_dot_rate.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace csrun::runtime {

namespace {

constexpr int kIterations = 16384;
constexpr int kRounds = 7;
// Twelve independent sums a loop: more than latency times throughput of either instruction on
// the CPUs measured (4 x 2 for Intel's FMAs, 6 x 1 for Zen 4's dot products).
constexpr int kSums = 12;

using Clock = std::chrono::steady_clock;

// The seconds of kIterations times kSums dot products (kDot) or FMAs, one independent sum each.
// The operands come from a value the compiler cannot know and every sum is read at the end, so
// no iteration can be folded away. (Both are compiled for AVX512_BF16: only a CPU with it calls
// either.)
template <bool kDot>
__attribute__((target("avx512f,avx512bf16"))) double loop_seconds(float seed) {
  __m512 sums[kSums];
  for (int i = 0; i < kSums; ++i)
    sums[i] = _mm512_set1_ps(seed * static_cast<float>(i));
  // Dot products with zero, FMAs times one plus zero: the sums keep their values, and no operand
  // is a denormal.
  __m512bh left = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed), _mm512_set1_ps(seed));
  __m512bh right = _mm512_cvtne2ps_pbh(_mm512_setzero_ps(), _mm512_setzero_ps());
  __m512 one = _mm512_set1_ps(seed);
  __m512 zero = _mm512_setzero_ps();
  auto start = Clock::now();
  for (int iteration = 0; iteration < kIterations; ++iteration) {
#pragma GCC unroll 12
    for (int i = 0; i < kSums; ++i) {
      if constexpr (kDot)
        sums[i] = _mm512_dpbf16_ps(sums[i], left, right);
      else
        sums[i] = _mm512_fmadd_ps(sums[i], one, zero);
    }
  }
  std::chrono::duration<double> seconds = Clock::now() - start;
  float total = 0.0f;
  for (const __m512& sum : sums)
    total += sum[0];
  volatile float sink = total;
  (void)sink;
  return seconds.count();
}

}  // namespace

double bf16_dot_rate() {
  // One, but a value the compiler cannot know, so neither loop is computed at compile time.
  volatile float seed = 1.0f;
  double best_dot = std::numeric_limits<double>::max();
  double best_fma = std::numeric_limits<double>::max();
  // Alternating, best of each: a round that a context switch or the vector units' warm-up
  // slowed does not count.
  for (int round = 0; round < kRounds; ++round) {
    best_dot = std::min(best_dot, loop_seconds<true>(seed));
    best_fma = std::min(best_fma, loop_seconds<false>(seed));
  }
  constexpr double kDotMultiplyAdds = 32.0;  // a 512-bit VDPBF16PS: 16 sums of two products
  constexpr double kFmaMultiplyAdds = 16.0;
  return (kDotMultiplyAdds / best_dot) / (kFmaMultiplyAdds / best_fma);
}

}  // namespace csrun::runtime
