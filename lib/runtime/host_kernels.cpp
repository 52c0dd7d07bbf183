#include "host_kernels.hpp"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "bf16_dot_rate.hpp"
#include "compiled_chain.hpp"
#include "cpu_features.hpp"
#include "f32_gemm_library.hpp"
#include "kernel_set.hpp"
#include "thread_team.hpp"

#if CSRUN_NATIVE_KERNELS
extern "C" const csrun::runtime::KernelSet csrun_kernel_set_native;
#else
extern "C" const csrun::runtime::KernelSet csrun_kernel_set_amx;
extern "C" const csrun::runtime::KernelSet csrun_kernel_set_avx512bf16;
extern "C" const csrun::runtime::KernelSet csrun_kernel_set_avx512;
extern "C" const csrun::runtime::KernelSet csrun_kernel_set_avx2;
extern "C" const csrun::runtime::KernelSet csrun_kernel_set_baseline;
#endif

namespace csrun::runtime {

namespace {

#if !CSRUN_NATIVE_KERNELS
// Where the avx512bf16 set's bfloat16 GEMMs, built on AVX512_BF16's dot products, would run
// slower than the avx512 set's, which widen the operands for f32 GEMMs: where the dot products
// multiply-add more slowly than the FMAs (bf16_dot_rate.hpp). The reason, or empty where they do
// not.
std::string slow_bf16_dot_products() {
  double rate = bf16_dot_rate();
  if (rate >= 1.0) return {};
  std::array<char, 32> figure{};
  std::snprintf(figure.data(), figure.size(), "%.2f", rate);
  return std::string("its AVX512_BF16 dot products multiply-add at ") + figure.data() +
         "x the rate of its f32 FMAs, so the avx512bf16 set's bfloat16 GEMMs would be slower";
}
#endif

// A kernel set, the CPU features its instruction set (an x86-64 microarchitecture level) needs,
// as cpu_features() names them, whether its products go through oneDNN's GEMMs where they are
// faster than OpenBLAS's (lib/runtime/CMakeLists.txt), and, for a set that a CPU with those
// features may still run slower than the next one, why it does here (empty: it does not).
struct BuiltSet {
  std::string_view name;
  const KernelSet* kernels;
  std::vector<std::string_view> needs;
  bool onednn_gemms = false;
  std::string (*slower_than_next)() = nullptr;
};

const std::vector<BuiltSet>& built_sets() {
#if CSRUN_NATIVE_KERNELS
  // Built for the machine that compiled it: nothing to check.
  static const std::vector<BuiltSet> sets{{"native", &csrun_kernel_set_native, {}}};
#else
  static const std::vector<std::string_view> v2{"sse3",   "ssse3",  "cx16",   "sse4_1",
                                                "sse4_2", "popcnt", "lahf_lm"};
  static const std::vector<std::string_view> v3 = [] {
    std::vector<std::string_view> needs = v2;
    for (std::string_view feature : {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe"})
      needs.push_back(feature);
    return needs;
  }();
  static const std::vector<std::string_view> v4 = [] {
    std::vector<std::string_view> needs = v3;
    for (std::string_view feature : {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})
      needs.push_back(feature);
    return needs;
  }();
  static const std::vector<std::string_view> avx512bf16 = [] {
    std::vector<std::string_view> needs = v4;
    needs.push_back("avx512_bf16");
    return needs;
  }();
  // AMX needs the operating system's leave to use its tile registers, which cpu_features asks.
  static const std::vector<std::string_view> amx = [] {
    std::vector<std::string_view> needs = avx512bf16;
    for (std::string_view feature : {"amx_tile", "amx_bf16"})
      needs.push_back(feature);
    return needs;
  }();
  static const std::vector<BuiltSet> sets{
      {"amx", &csrun_kernel_set_amx, amx, true},
      {"avx512bf16", &csrun_kernel_set_avx512bf16, avx512bf16, true, slow_bf16_dot_products},
      {"avx512", &csrun_kernel_set_avx512, v4, true},
      {"avx2", &csrun_kernel_set_avx2, v3},
      {"baseline", &csrun_kernel_set_baseline, v2}};
#endif
  return sets;
}

std::vector<std::string_view> missing_features(const BuiltSet& set) {
  static const std::vector<std::string_view> present = cpu_features();
  std::vector<std::string_view> missing;
  for (std::string_view feature : set.needs) {
    if (std::find(present.begin(), present.end(), feature) == present.end())
      missing.push_back(feature);
  }
  return missing;
}

std::string joined(const std::vector<std::string_view>& names, std::string_view separator = ", ") {
  std::string text;
  for (std::string_view name : names)
    text += (text.empty() ? "" : std::string(separator)) + std::string(name);
  return text;
}

const BuiltSet& runnable_set(std::string_view name, std::string_view asked_by) {
  const std::vector<BuiltSet>& sets = built_sets();
  auto found =
      std::find_if(sets.begin(), sets.end(), [&](const BuiltSet& set) { return set.name == name; });
  if (found == sets.end()) {
    throw std::invalid_argument(std::string(asked_by) + ": this csrun has no kernel set '" +
                                std::string(name) + "'; it has " + joined(kernel_set_names()));
  }
  std::vector<std::string_view> missing = missing_features(*found);
  if (!missing.empty()) {
    throw std::invalid_argument(std::string(asked_by) + ": this CPU cannot run the " +
                                std::string(name) + " kernels: it lacks " + joined(missing) +
                                " (it runs " + joined(runnable_kernel_sets()) + ")");
  }
  return *found;
}

struct Selection {
  const BuiltSet* set = nullptr;
  bool forced = false;
  std::string passed_over;  // why a better set this CPU runs was not taken: empty when none was
};

Selection select() {
  const char* forced = std::getenv("CSRUN_CPU");
  if (forced != nullptr && *forced != '\0' && std::string_view(forced) != "auto") {
    return {&runnable_set(forced, "CSRUN_CPU=" + std::string(forced)), true, {}};
  }
  std::string passed_over;
  for (const BuiltSet& set : built_sets()) {
    if (!missing_features(set).empty()) continue;
    std::string reason = set.slower_than_next == nullptr ? "" : set.slower_than_next();
    if (reason.empty()) return {&set, false, passed_over};
    passed_over = reason;
  }
  throw std::invalid_argument("this CPU runs none of csrun's kernel sets (" +
                              joined(kernel_set_names()) + "): it lacks " +
                              joined(missing_features(built_sets().back())));
}

// Chosen once; a bad CSRUN_CPU is reported every time it is asked for.
const Selection& selection() {
  static const Selection chosen = select();
  return chosen;
}

}  // namespace

std::vector<std::string_view> kernel_set_names() {
  std::vector<std::string_view> names;
  for (const BuiltSet& set : built_sets())
    names.push_back(set.name);
  return names;
}

std::vector<std::string_view> runnable_kernel_sets() {
  std::vector<std::string_view> names;
  for (const BuiltSet& set : built_sets()) {
    if (missing_features(set).empty()) names.push_back(set.name);
  }
  return names;
}

std::string_view selected_kernel_set() {
  return selection().set->name;
}

bool selected_set_multiplies_bf16() {
  return selection().set->kernels->multiplies_bf16();
}

int host_cores() {
  return ThreadTeam::available_cores();
}

std::string kernel_set_summary() {
  const Selection& chosen = selection();
  std::string name(chosen.set->name);
  if (chosen.forced) return name + " (CSRUN_CPU)";
#if CSRUN_NATIVE_KERNELS
  return name + " (built with -march=native for the machine that compiled it)";
#else
  std::string best = chosen.passed_over.empty()
                         ? "the best this CPU runs"
                         : "the fastest set this CPU runs: " + chosen.passed_over;
  return name + " (" + best + "; CSRUN_CPU=" + joined(kernel_set_names(), "|") + " forces one)";
#endif
}

std::string chains_summary() {
  const BuiltSet& set = *selection().set;
  ChainIsa isa = set.kernels->compiled_chains;
  if (isa == ChainIsa::none)
    return "interpreted (the " + std::string(set.name) +
           " kernel set runs neither AVX2 nor AVX-512 code)";
  if (!chains_compiled_here()) return "interpreted (" + why_chains_interpreted_here() + ")";
  return "compiled to " + std::string(chain_isa_name(isa)) +
         " code as a step is loaded (CSRUN_INTERPRET_CHAINS=1 interprets them)";
}

namespace {

// What OPENBLAS_CORETYPE should name for OpenBLAS's fast kernels on this CPU, where it fell back
// to its slow ones by itself; empty otherwise.
std::string suggested_core_here() {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  return suggested_sgemm_core(sgemm_core(), forced != nullptr && *forced != '\0', cpu_features());
}

}  // namespace

std::string sgemm_summary() {
  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": its name and version, then how it was built.
  std::string config = openblas_get_config();
  std::string version = config.substr(0, config.find(' ', config.find(' ') + 1));
  std::string summary = version + ", its " + sgemm_core() + " kernels";
  std::string suggested = suggested_core_here();
  if (suggested.empty()) return summary + " (OPENBLAS_CORETYPE forces others)";
  return summary +
         ", slower than this CPU allows: it does not know the CPU (OPENBLAS_CORETYPE=" + suggested +
         " runs its fast ones)";
}

std::string sgemm_warning() {
  std::string suggested = suggested_core_here();
  const BuiltSet& set = *selection().set;
  if (suggested.empty() || set.onednn_gemms) return {};
  return "OpenBLAS runs its " + sgemm_core() +
         " kernels here (it does not know this CPU), and the " + std::string(set.name) +
         " kernel set multiplies every f32 product through OpenBLAS: export OPENBLAS_CORETYPE=" +
         suggested + " for its fast kernels (several times faster on large products)";
}

const KernelSet& kernel_set(std::string_view name) {
  if (name.empty()) return *selection().set->kernels;
  return *runnable_set(name, "kernel set").kernels;
}

}  // namespace csrun::runtime
