#pragma once

// Which of its kernel sets this binary runs. The hot kernels (elementwise chains, reductions,
// softmax and cross-entropy, layer norm, 16-bit conversions, transcendentals) are built for
// several x86-64 instruction sets and one is chosen at start-up; GEMMs go through OpenBLAS,
// which chooses its own.

#include <string>
#include <string_view>
#include <vector>

namespace csrun::runtime {

// The sets this binary holds, best first: "amx" and "avx512bf16" (bfloat16 GEMMs in hardware),
// "avx512" (x86-64-v4), "avx2" (x86-64-v3) and "baseline" (x86-64-v2); "native" alone in a
// CSRUN_NATIVE_ARCH build.
std::vector<std::string_view> kernel_set_names();

// Those this CPU runs, best first.
std::vector<std::string_view> runnable_kernel_sets();

// The set steps run with: the one the CSRUN_CPU environment variable names, else the best this
// CPU runs, passing over avx512bf16 where its AVX512_BF16 dot products multiply-add more slowly
// than the f32 FMAs (measured once, bf16_dot_rate.hpp). Chosen once per process. Throws
// std::invalid_argument, naming what would be valid, when CSRUN_CPU names no set of this binary or
// one this CPU cannot run.
std::string_view selected_kernel_set();

// Whether the selected set multiplies bfloat16 products in hardware (amx, avx512bf16): the f32
// work space a plan keeps for widening 16-bit products (compiler::ScratchLayout) is then taken
// only by products of other 16-bit types.
bool selected_set_multiplies_bf16();

// The cores a step's kernels run on: its team's size (the process's CPU affinity). A product that
// forms convolution windows takes a tile of work space per core (compiler::ScratchLayout).
int host_cores();

// The choice in a line, e.g. "avx512 (the best this CPU runs; ...)", "avx512 (the fastest set
// this CPU runs: its AVX512_BF16 dot products ...)" or "baseline (CSRUN_CPU)".
std::string kernel_set_summary();

// How the selected set runs the elementwise chains a plan keeps in registers: "compiled to AVX-512
// code as a step is loaded (...)" (or AVX2), or "interpreted (...)" with the reason.
std::string chains_summary();

// OpenBLAS's version and the kernels it runs here, e.g. "OpenBLAS 0.3.21, its Haswell kernels
// (OPENBLAS_CORETYPE forces others)": they round the products it multiplies, so a run's bits
// depend on them as on the set. Where it fell back to its SSE3 kernels on a CPU newer than it
// knows, the line says so and what OPENBLAS_CORETYPE to set.
std::string sgemm_summary();

// Where the selected set multiplies every f32 product through OpenBLAS (avx2, baseline, native)
// and OpenBLAS fell back to its SSE3 kernels on this CPU by itself: what to set, for a run's
// log. Empty otherwise (the AVX-512 sets hand such products to oneDNN).
std::string sgemm_warning();

}  // namespace csrun::runtime
