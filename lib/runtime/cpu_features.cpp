#include "cpu_features.hpp"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace csrun::runtime {

namespace {

struct Registers {
  std::uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Leaf `leaf`, sub-leaf `sub_leaf` of cpuid; zeros when the CPU does not have that leaf.
Registers cpuid(std::uint32_t leaf, std::uint32_t sub_leaf = 0) {
  Registers r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return r;
  __cpuid_count(leaf, sub_leaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

// The register state the operating system saves (XCR0); read only when it says it has one.
std::uint64_t saved_state(const Registers& leaf1) {
  constexpr std::uint32_t kOsXsave = 1u << 27;
  if ((leaf1.ecx & kOsXsave) == 0) return 0;
  std::uint32_t low = 0, high = 0;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (static_cast<std::uint64_t>(high) << 32) | low;
}

// Linux saves the AMX tile data only for a process that asks to use it (arch_prctl
// ARCH_REQ_XCOMP_PERM, Linux 5.16 on); asking twice is harmless.
bool tile_data_granted() {
  constexpr unsigned long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr unsigned long kTileData = 18;               // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
}

struct Feature {
  std::string_view name;
  std::uint32_t Registers::*reg;
  int bit;
};

bool has_bit(const Registers& r, const Feature& feature) {
  return ((r.*feature.reg >> feature.bit) & 1u) != 0;
}

}  // namespace

std::vector<std::string_view> cpu_features() {
  Registers leaf1 = cpuid(1);
  Registers leaf7 = cpuid(7);
  Registers extended = cpuid(0x80000001u);
  std::uint64_t state = saved_state(leaf1);
  bool avx_state = (state & 0x6) == 0x6;                    // XMM and YMM
  bool avx512_state = avx_state && (state & 0xE0) == 0xE0;  // opmask, ZMM 0-15 upper, ZMM 16-31
  Registers leaf7_1 = cpuid(7, 1);
  const Feature amx_tile{"amx_tile", &Registers::edx, 24};
  const std::array<Feature, 2> leaf7_amx{{{"amx_bf16", &Registers::edx, 22}, amx_tile}};
  bool amx_state = avx512_state && (state & 0x60000) == 0x60000 &&  // tile configuration, data
                   has_bit(leaf7, amx_tile) && tile_data_granted();
  const std::array<Feature, 8> leaf1_features{{{"sse3", &Registers::ecx, 0},
                                               {"ssse3", &Registers::ecx, 9},
                                               {"cx16", &Registers::ecx, 13},
                                               {"sse4_1", &Registers::ecx, 19},
                                               {"sse4_2", &Registers::ecx, 20},
                                               {"movbe", &Registers::ecx, 22},
                                               {"popcnt", &Registers::ecx, 23},
                                               {"f16c", &Registers::ecx, 29}}};
  const std::array<Feature, 2> leaf1_avx{
      {{"avx", &Registers::ecx, 28}, {"fma", &Registers::ecx, 12}}};
  const std::array<Feature, 2> extended_features{
      {{"lahf_lm", &Registers::ecx, 0}, {"abm", &Registers::ecx, 5}}};
  const std::array<Feature, 2> leaf7_features{
      {{"bmi1", &Registers::ebx, 3}, {"bmi2", &Registers::ebx, 8}}};
  const std::array<Feature, 1> leaf7_avx{{{"avx2", &Registers::ebx, 5}}};
  const std::array<Feature, 5> leaf7_avx512{{{"avx512f", &Registers::ebx, 16},
                                             {"avx512dq", &Registers::ebx, 17},
                                             {"avx512cd", &Registers::ebx, 28},
                                             {"avx512bw", &Registers::ebx, 30},
                                             {"avx512vl", &Registers::ebx, 31}}};
  std::vector<std::string_view> present;
  auto add = [&](const Registers& r, const auto& features, bool enabled) {
    for (const Feature& feature : features) {
      if (enabled && has_bit(r, feature)) present.push_back(feature.name);
    }
  };
  add(leaf1, leaf1_features, true);
  add(leaf1, leaf1_avx, avx_state);
  add(extended, extended_features, true);
  add(leaf7, leaf7_features, true);
  add(leaf7, leaf7_avx, avx_state);
  add(leaf7, leaf7_avx512, avx512_state);
  add(leaf7_1, std::array<Feature, 1>{{{"avx512_bf16", &Registers::eax, 5}}}, avx512_state);
  add(leaf7, leaf7_amx, amx_state);
  return present;
}

std::string cpu_name() {
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000004u) return {};
  std::array<char, 49> text{};
  for (std::uint32_t leaf = 0; leaf < 3; ++leaf) {
    Registers r;
    __cpuid(0x80000002u + leaf, r.eax, r.ebx, r.ecx, r.edx);
    std::array<std::uint32_t, 4> words{r.eax, r.ebx, r.ecx, r.edx};
    std::memcpy(text.data() + 16 * leaf, words.data(), 16);
  }
  std::string name(text.data());
  auto first = name.find_first_not_of(' ');
  auto last = name.find_last_not_of(' ');
  return first == std::string::npos ? std::string() : name.substr(first, last - first + 1);
}

}  // namespace csrun::runtime
