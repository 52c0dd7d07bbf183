#pragma once

// Which library multiplies an f32 matrix product in the AVX-512 kernel sets: oneDNN's AVX-512
// matmul or OpenBLAS's sgemm. Decided by the product's shape and by the kernels OpenBLAS runs in
// this process, never by the cores. Internal to lib/runtime.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace csrun::runtime {

// The name of the kernels OpenBLAS runs in this process (openblas_get_corename, e.g. "Haswell",
// "SkylakeX"): it picks them for the CPU when it loads, and OPENBLAS_CORETYPE forces others.
const std::string& sgemm_core();

// Whether OpenBLAS's kernels named `core` are AVX-512 ones. Where they are not on a CPU with
// AVX-512 (a CPU newer than the OpenBLAS build knows, or OPENBLAS_CORETYPE naming older kernels:
// Haswell's on AMD Zen 4), sgemm runs at about half the rate of oneDNN's AVX-512 matmul
// (docs/benchmarks.md).
bool avx512_sgemm_core(std::string_view core);

// Whether the kernels OpenBLAS runs in this process are AVX-512 ones, decided once.
bool sgemm_runs_avx512();

// The kernels to name in OPENBLAS_CORETYPE where OpenBLAS runs `core` on a CPU with `features`
// (cpu_features.hpp) by itself (`core_forced` false): "SkylakeX" on an AVX-512 CPU, "Haswell" on
// an AVX2 one, where `core` is Prescott, the SSE3 kernels OpenBLAS falls back to on a CPU newer
// than its build knows (Debian 12's 0.3.21 on Intel's Emerald Rapids: sgemm at 35-43 GFLOP/s
// there, 157-227 with SkylakeX). Empty otherwise.
std::string suggested_sgemm_core(std::string_view core, bool core_forced,
                                 const std::vector<std::string_view>& features);

// Whether oneDNN multiplies out = op(a) op(b) (op(b) k x n): every such product where sgemm
// runs no AVX-512 kernels (`sgemm_avx512` false); else, as measured single-threaded on
// Sapphire Rapids (docs/benchmarks.md), those oneDNN multiplies 8-35 % faster: op(a) stored as
// it is read (oneDNN copies a transpose), sums of at most 4096 terms, and op(b) transposed or of
// at most 2^20 elements.
bool f32_through_onednn(bool sgemm_avx512, bool a_transposed, bool b_transposed, std::int64_t k,
                        std::int64_t n);

}  // namespace csrun::runtime
