#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace csrun::wafer {

// A wafer-scale engine and its system, as the performance model sees it. Figures and their
// sources are in docs/wafer.md; those marked "assumption" there are not published by Cerebras.
struct WaferProfile {
  std::string_view key;           // what --wafer takes: "wse2", "wse3"
  std::string_view name;          // "WSE-2"
  std::string_view system;        // "CS-2"
  std::int32_t fabric_width = 0;  // every PE of the fabric
  std::int32_t fabric_height = 0;
  std::int32_t width = 0;  // the rectangle a program may use (the rest serves host I/O)
  std::int32_t height = 0;
  std::int64_t sram_per_pe = 0;         // bytes
  std::int64_t usable_sram_per_pe = 0;  // after code and task tables (assumption)
  double clock_hz = 0.0;
  int half_lanes = 0;                       // 16-bit multiply-accumulates per PE per cycle
  int single_lanes = 0;                     // f32 ones (assumption)
  double sram_read_bytes_per_cycle = 0.0;   // per PE
  double sram_write_bytes_per_cycle = 0.0;  // per PE
  double link_bytes_per_cycle = 0.0;        // one fabric link, one direction
  double io_bytes_per_second = 0.0;         // system I/O, each direction (assumption: duplex)
  double swarmx_level_seconds = 0.0;        // one level of the SwarmX tree (assumption)
  int swarmx_fan_out = 0;
  std::int64_t max_systems = 0;
  // Calibrated against measured CS-2 runs (docs/wafer.md): the fraction of the SIMD peak a
  // matrix product sustains, and the exposed time at each step's end (the weight update).
  double fmac_efficiency = 0.0;
  double step_overhead_seconds = 0.0;

  std::int64_t pes() const { return static_cast<std::int64_t>(width) * height; }
  std::int64_t usable_sram() const { return pes() * usable_sram_per_pe; }
  // 16-bit multiply-accumulate peak of the usable rectangle, FLOP/s.
  double peak_flops() const { return static_cast<double>(pes()) * half_lanes * 2.0 * clock_hz; }
};

// The profile `key` names; throws std::invalid_argument naming the valid keys.
const WaferProfile& wafer_profile(std::string_view key);
std::vector<std::string> wafer_keys();

}  // namespace csrun::wafer
