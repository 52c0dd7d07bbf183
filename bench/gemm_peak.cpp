// The best rates of large matrix products through the libraries csrun's GEMMs call: OpenBLAS's
// sgemm (fp32) and, where the library has it, sbgemm (bfloat16 inputs, fp32 accumulation; fast
// only on CPUs with avx512_bf16), and oneDNN's f32 matmul and bfloat16 matmul (f32
// accumulation; AMX tiles where the CPU has them), which csrun's AVX-512 kernel sets call (f32)
// and its amx and avx512bf16 sets (bfloat16), on square matrices of 1024 to 4096, best of 3 each.
// These are the ceilings a GEMM-bound training step is measured against in docs/benchmarks.md.
// Debian's OpenBLAS 0.3.21 declares cblas_sbgemm but is built without it, so it is looked up at run
// time.
//
// Usage: gemm_peak   (threads: OpenBLAS's own, OPENBLAS_NUM_THREADS or all cores; oneDNN's
//                     OpenMP threads, OMP_NUM_THREADS or all cores)

#include <cblas.h>
#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

template <class Product>
double best_gflops(int n, Product product) {
  double best = 0.0;
  for (int round = 0; round < 3; ++round) {
    auto start = std::chrono::steady_clock::now();
    product();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) / seconds / 1e9);
  }
  return best;
}

std::uint16_t to_bfloat16(float value) {
  std::uint32_t bits = 0;
  static_assert(sizeof bits == sizeof value);
  __builtin_memcpy(&bits, &value, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}

using Sbgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint,
                        float, const bfloat16*, blasint, const bfloat16*, blasint, float, float*,
                        blasint);

// One n x n product of `operands` into f32 through oneDNN's matmul, and the kernel oneDNN chose.
struct OnednnProduct {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::memory::desc in, f32;
  dnnl::matmul::primitive_desc description;
  dnnl::matmul matmul;

  OnednnProduct(int n, dnnl::memory::data_type operands)
      : in({n, n}, operands, dnnl::memory::format_tag::ab),
        f32({n, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab),
        description(dnnl::matmul::desc(in, in, f32), engine),
        matmul(description) {}

  void run(void* a, void* b, float* c) {
    matmul.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(in, engine, a)},
                            {DNNL_ARG_WEIGHTS, dnnl::memory(in, engine, b)},
                            {DNNL_ARG_DST, dnnl::memory(f32, engine, c)}});
    stream.wait();
  }
};

// ", NAME matmul (oneDNN KERNEL) RATE GFLOP/s" for operands a and b. oneDNN has no bfloat16
// matmul for CPUs without AVX512_BF16 or AVX512 (this build of it): it says so by an exception
// when the primitive is made.
template <class Element>
void print_onednn_rate(const char* name, dnnl::memory::data_type operands, int n,
                       std::vector<Element>& a, std::vector<Element>& b, std::vector<float>& c) {
  try {
    OnednnProduct product(n, operands);
    double matmul = best_gflops(n, [&] { product.run(a.data(), b.data(), c.data()); });
    std::printf(", %s matmul (oneDNN %s) %.1f GFLOP/s", name, product.description.impl_info_str(),
                matmul);
  } catch (const dnnl::error& error) {
    std::printf(", %s matmul: none in oneDNN for this CPU (%s)", name, error.what());
  }
}

}  // namespace

int main() {
  auto sbgemm_entry = reinterpret_cast<Sbgemm>(::dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  for (int n : {1024, 2048, 4096}) {
    auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    std::vector<float> a(count, 0.5f), b(count, 0.25f), c(count, 0.0f);
    double sgemm = best_gflops(n, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                  n, 0.0f, c.data(), n);
    });
    std::printf("n=%d: sgemm %.1f GFLOP/s", n, sgemm);
    if (sbgemm_entry) {
      std::vector<bfloat16> a16(count, to_bfloat16(0.5f)), b16(count, to_bfloat16(0.25f));
      double sbgemm = best_gflops(n, [&] {
        sbgemm_entry(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a16.data(), n,
                     b16.data(), n, 0.0f, c.data(), n);
      });
      std::printf(", sbgemm %.1f GFLOP/s", sbgemm);
    } else {
      std::printf(", sbgemm: not in this OpenBLAS");
    }
    std::printf(" (%s)", openblas_get_config());
    print_onednn_rate("f32", dnnl::memory::data_type::f32, n, a, b, c);
    std::vector<std::uint16_t> a16(count, to_bfloat16(0.5f)), b16(count, to_bfloat16(0.25f));
    print_onednn_rate("bf16", dnnl::memory::data_type::bf16, n, a16, b16, c);
    std::printf("\n");
  }
}
