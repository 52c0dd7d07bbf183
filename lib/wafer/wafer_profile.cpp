#include "wafer_profile.hpp"

#include <stdexcept>

namespace csrun::wafer {

namespace {

// Calibration: docs/wafer.md shows the fit against the two measured CS-2 runs.
constexpr double kFmacEfficiency = 0.187;
constexpr double kStepOverheadSeconds = 1e-3;

const std::vector<WaferProfile>& profiles() {
  static const std::vector<WaferProfile> all = {
      WaferProfile{"wse2",
                   "WSE-2",
                   "CS-2",
                   757,
                   996,
                   750,
                   994,
                   48 * 1024,
                   44 * 1024,
                   1.1e9,
                   4,
                   1,
                   16.0,
                   8.0,
                   4.0,
                   150e9,
                   5e-6,
                   4,
                   192,
                   kFmacEfficiency,
                   kStepOverheadSeconds},
      WaferProfile{"wse3",
                   "WSE-3",
                   "CS-3",
                   762,
                   1172,
                   755,
                   1170,
                   48 * 1024,
                   44 * 1024,
                   1.1e9,
                   8,
                   2,
                   16.0,
                   8.0,
                   4.0,
                   150e9,
                   5e-6,
                   4,
                   2048,
                   kFmacEfficiency,
                   kStepOverheadSeconds},
  };
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
