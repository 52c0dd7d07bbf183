#pragma once

// What this x86-64 CPU offers the kernel sets. Internal to lib/runtime.

#include <string>
#include <string_view>
#include <vector>

namespace csrun::runtime {

// The instruction-set features the kernel sets need that this CPU has and the operating system
// enables (AVX and AVX-512 registers saved on context switches), named as /proc/cpuinfo names
// them: "sse4_2", "avx2", "avx512bw", ...
std::vector<std::string_view> cpu_features();

// The CPU's brand string, e.g. "AMD EPYC 9R14 96-Core Processor"; empty when it has none.
std::string cpu_name();

}  // namespace csrun::runtime
