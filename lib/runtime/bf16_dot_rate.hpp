#pragma once

// How fast this core's AVX512_BF16 dot products multiply-add, against its f32 FMAs. Internal to
// lib/runtime: it decides whether the avx512bf16 kernel set, whose bfloat16 GEMMs are built on
// those dot products, pays on this CPU (host_kernels.cpp).

namespace csrun::runtime {

// Multiply-adds a second of VDPBF16PS (32 a 512-bit instruction) over those of VFMADD (16),
// measured on the calling thread in about 3 ms: the best of several short rounds of each, with
// enough independent sums to fill every pipe. About 2 on AMD Zen 4, whose oneDNN bfloat16 GEMMs
// run at twice its f32 ones; about 0.5 on Intel Sapphire and Emerald Rapids, which leave
// bfloat16 to AMX and run these at half the rate of their FMAs (docs/install.md). Call only where
// cpu_features() names avx512_bf16.
double bf16_dot_rate();

}  // namespace csrun::runtime
