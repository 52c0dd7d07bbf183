// The machine's fp32 FMA throughput: every thread runs independent chains of fused
// multiply-adds, enough of them to keep every FMA pipe busy through the instruction's latency,
// 512 bits wide where the CPU has AVX-512 (else 256), chosen at run time. It is one of the
// ceilings docs/benchmarks.md measures against; gemm_peak gives the others (large sgemm and
// sbgemm), which is what GEMM-bound steps can reach.
//
// Usage: fma_peak [THREADS...]   prints one line per thread count (default: 1 and all cores).

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

// Two FMA pipes of latency 4-5 need 8-10 chains in flight; 12 leaves room.
constexpr int kChains = 12;
constexpr long kIterations = 100'000'000;

__attribute__((target("avx2,fma"))) float run_chains_256() {
  __m256 chains[kChains];
  for (int i = 0; i < kChains; ++i)
    chains[i] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m256 factor = _mm256_set1_ps(0.9999999f);
  const __m256 addend = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < kIterations; ++n) {
    for (__m256& chain : chains)
      chain = _mm256_fmadd_ps(chain, factor, addend);
  }
  __m256 total = chains[0];
  for (int i = 1; i < kChains; ++i)
    total = _mm256_add_ps(total, chains[i]);
  return _mm256_cvtss_f32(total);
}

__attribute__((target("avx512f"))) float run_chains_512() {
  __m512 chains[kChains];
  for (int i = 0; i < kChains; ++i)
    chains[i] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m512 factor = _mm512_set1_ps(0.9999999f);
  const __m512 addend = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < kIterations; ++n) {
    for (__m512& chain : chains)
      chain = _mm512_fmadd_ps(chain, factor, addend);
  }
  __m512 total = chains[0];
  for (int i = 1; i < kChains; ++i)
    total = _mm512_add_ps(total, chains[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, total);
  return lanes[0];
}

volatile float sink;  // keeps the chains' results, so the work cannot be optimized away

double gflops(unsigned threads, int width) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([width] { sink = width == 512 ? run_chains_512() : run_chains_256(); });
  for (std::thread& worker : workers)
    worker.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double flops_per_iteration = kChains * (width / 32) * 2.0;
  return threads * kIterations * flops_per_iteration / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "fma_peak: this CPU has no AVX2 and FMA\n");
    return 1;
  }
  int width = __builtin_cpu_supports("avx512f") ? 512 : 256;
  std::vector<unsigned> counts;
  for (int i = 1; i < argc; ++i)
    counts.push_back(static_cast<unsigned>(std::stoul(argv[i])));
  if (counts.empty()) counts = {1, std::max(1u, std::thread::hardware_concurrency())};
  for (unsigned threads : counts) {
    std::printf("fp32 FMA peak (%d-bit), %u thread(s): %.1f GFLOP/s\n", width, threads,
                gflops(threads, width));
  }
}
