// Which library multiplies an f32 product in the AVX-512 kernel sets: oneDNN where it measured
// faster than OpenBLAS's AVX-512 sgemm, every product where OpenBLAS runs older kernels.

#include <catch2/catch.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/f32_gemm_library.hpp"

using csrun::runtime::avx512_sgemm_core;
using csrun::runtime::f32_through_onednn;

TEST_CASE("OpenBLAS's AVX-512 kernels are told from its older ones by name, in any case") {
  CHECK(avx512_sgemm_core("SkylakeX"));
  CHECK(avx512_sgemm_core("COOPERLAKE"));
  CHECK(avx512_sgemm_core("sapphirerapids"));
  CHECK_FALSE(avx512_sgemm_core("Haswell"));
  CHECK_FALSE(avx512_sgemm_core("Zen"));
  CHECK_FALSE(avx512_sgemm_core("SkylakeX2"));
  CHECK_FALSE(avx512_sgemm_core(""));
}

TEST_CASE("oneDNN multiplies the f32 products it measured faster than AVX-512 sgemm") {
  // GPT-2 small's: a linear layer forward, and the input gradients of its projections.
  CHECK(f32_through_onednn(avx512_sgemm_core("SkylakeX"), false, true, 3072, 768));
  CHECK(f32_through_onednn(avx512_sgemm_core("SkylakeX"), false, false, 768, 768));
  CHECK(f32_through_onednn(avx512_sgemm_core("SkylakeX"), false, false, 1024, 1024));
  // A weight's gradient (a transposed left operand), the logits' gradient (50257 terms), a
  // right-hand operand of more than 2^20 elements read as stored.
  CHECK_FALSE(f32_through_onednn(avx512_sgemm_core("SkylakeX"), true, false, 512, 768));
  CHECK_FALSE(f32_through_onednn(avx512_sgemm_core("SkylakeX"), false, true, 4097, 768));
  CHECK_FALSE(f32_through_onednn(avx512_sgemm_core("SkylakeX"), false, false, 1024, 1025));
}

TEST_CASE("oneDNN multiplies every f32 product where OpenBLAS runs no AVX-512 kernels") {
  for (bool a_transposed : {false, true}) {
    for (bool b_transposed : {false, true}) {
      CHECK(
          f32_through_onednn(avx512_sgemm_core("Haswell"), a_transposed, b_transposed, 50257, 768));
      CHECK(f32_through_onednn(avx512_sgemm_core("Zen"), a_transposed, b_transposed, 3072, 768));
    }
  }
}

TEST_CASE("OPENBLAS_CORETYPE is suggested where OpenBLAS fell back to SSE3 on a newer CPU") {
  using csrun::runtime::suggested_sgemm_core;
  const std::vector<std::string_view> avx2{"sse4_2", "avx", "avx2", "fma", "f16c"};
  std::vector<std::string_view> avx512 = avx2;
  for (std::string_view feature : {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})
    avx512.push_back(feature);
  CHECK(suggested_sgemm_core("Prescott", false, avx512) == "SkylakeX");
  CHECK(suggested_sgemm_core("PRESCOTT", false, avx2) == "Haswell");
  // The CPU's own kernels, kernels the user chose, and a CPU without AVX2 get none.
  CHECK(suggested_sgemm_core("Haswell", false, avx512).empty());
  CHECK(suggested_sgemm_core("SkylakeX", false, avx512).empty());
  CHECK(suggested_sgemm_core("Prescott", true, avx512).empty());
  CHECK(suggested_sgemm_core("Prescott", false, {"sse3", "sse4_2", "popcnt"}).empty());
}
