// The machine's fp32 FMA throughput: every thread runs independent chains of 8-wide fused
// multiply-adds (enough chains to hide the FMA latency), so the figure is the ceiling the
// runtime's GEMMs are measured against in docs/benchmarks.md.
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

constexpr int kChains = 12;
constexpr long kIterations = 100'000'000;
constexpr double kFlopsPerIteration = kChains * 8 * 2;

float run_chains() {
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

volatile float sink;  // keeps the chains' results, so the work cannot be optimized away

double gflops(unsigned threads) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([] { sink = run_chains(); });
  for (std::thread& worker : workers)
    worker.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return threads * kIterations * kFlopsPerIteration / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<unsigned> counts;
  for (int i = 1; i < argc; ++i)
    counts.push_back(static_cast<unsigned>(std::stoul(argv[i])));
  if (counts.empty()) counts = {1, std::max(1u, std::thread::hardware_concurrency())};
  for (unsigned threads : counts)
    std::printf("fp32 FMA peak, %u thread(s): %.1f GFLOP/s\n", threads, gflops(threads));
}
