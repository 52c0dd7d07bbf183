#include "wafer_profile.hpp"

#include <stdexcept>

namespace csrun::wafer {

namespace {

// Calibration: docs/wafer.md shows the fit against the two measured CS-2 runs.
constexpr double kFmacEfficiency = 0.170;
constexpr double kStepOverheadSeconds = 1e-3;

WaferProfile wse2() {
  return {.key = "wse2",
          .name = "WSE-2",
          .system = "CS-2",
          .fabric_width = 757,
          .fabric_height = 996,
          .width = 750,
          .height = 994,
          .sram_per_pe = 48 * 1024,
          .usable_sram_per_pe = 44 * 1024,
          .clock_hz = 1.1e9,
          .half_lanes = 4,
          .single_lanes = 1,
          .sram_read_bytes_per_cycle = 16.0,
          .sram_write_bytes_per_cycle = 8.0,
          .link_bytes_per_cycle = 4.0,
          .io_bytes_per_second = 150e9,
          .swarmx_level_seconds = 5e-6,
          .swarmx_fan_out = 4,
          .max_systems = 192,
          .fmac_efficiency = kFmacEfficiency,
          .step_overhead_seconds = kStepOverheadSeconds};
}

// The WSE-3 differs in its grid, its SIMD width and the cluster size.
WaferProfile wse3() {
  WaferProfile profile = wse2();
  profile.key = "wse3";
  profile.name = "WSE-3";
  profile.system = "CS-3";
  profile.fabric_width = 762;
  profile.fabric_height = 1172;
  profile.width = 755;
  profile.height = 1170;
  profile.half_lanes = 8;
  profile.single_lanes = 2;
  profile.max_systems = 2048;
  return profile;
}

const std::vector<WaferProfile>& profiles() {
  static const std::vector<WaferProfile> all = {wse2(), wse3()};
  return all;
}

}  // namespace

const WaferProfile& wafer_profile(std::string_view key) {
  for (const WaferProfile& profile : profiles()) {
    if (profile.key == key) return profile;
  }
  std::string known;
  for (const std::string& name : wafer_keys())
    known += (known.empty() ? "" : ", ") + name;
  throw std::invalid_argument("unknown wafer '" + std::string(key) + "' (known: " + known + ")");
}

std::vector<std::string> wafer_keys() {
  std::vector<std::string> keys;
  for (const WaferProfile& profile : profiles())
    keys.emplace_back(profile.key);
  return keys;
}

}  // namespace csrun::wafer
