#include "f32_gemm_library.hpp"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace csrun::runtime {

namespace {

// Longer sums than this ran slower through oneDNN than through sgemm's AVX-512 kernels (the
// logits' gradient: 50257 terms, 20-30 % slower).
constexpr std::int64_t kMaxF32Depth = 4096;
// A right-hand operand read as it is stored (not transposed) of more elements than this ran at
// 40-90 % of sgemm's rate for some shapes (768 x 2560, 768 x 3072, 1536 x 1536), at 105-125 % for
// others: erratic beyond 4 MB, faster below it in every shape measured.
constexpr std::int64_t kMaxF32Operand = std::int64_t{1} << 20;

bool same_letters(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

const std::string& sgemm_core() {
  static const std::string core = openblas_get_corename();
  return core;
}

bool avx512_sgemm_core(std::string_view core) {
  constexpr std::array<std::string_view, 3> kAvx512Cores = {"SkylakeX", "Cooperlake",
                                                            "SapphireRapids"};
  return std::any_of(kAvx512Cores.begin(), kAvx512Cores.end(),
                     [&](std::string_view name) { return same_letters(core, name); });
}

bool sgemm_runs_avx512() {
  static const bool avx512 = avx512_sgemm_core(sgemm_core());
  return avx512;
}

std::string suggested_sgemm_core(std::string_view core, bool core_forced,
                                 const std::vector<std::string_view>& features) {
  if (core_forced || !same_letters(core, "Prescott")) return {};
  auto has = [&](std::string_view feature) {
    return std::find(features.begin(), features.end(), feature) != features.end();
  };
  if (has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl")) return "SkylakeX";
  if (has("avx2") && has("fma")) return "Haswell";
  return {};
}

bool f32_through_onednn(bool sgemm_avx512, bool a_transposed, bool b_transposed, std::int64_t k,
                        std::int64_t n) {
  if (!sgemm_avx512) return true;
  if (a_transposed || k > kMaxF32Depth) return false;
  return b_transposed || k * n <= kMaxF32Operand;
}

}  // namespace csrun::runtime
