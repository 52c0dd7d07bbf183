#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "compiler/plan.hpp"
#include "config/run_spec.hpp"
#include "wafer_profile.hpp"

namespace csrun::wafer {

struct WaferOptions {
  std::string wafer = "wse2";
  config::ExecutionMode mode = config::ExecutionMode::automatic;  // what the params ask for
  std::int64_t num_csx = 1;
  // Samples one system processes per optimizer step; the plan's batch divides it (more than one
  // micro-batch when it is larger). 0: the plan's batch.
  std::int64_t system_batch = 0;
  // The plan's batch is a micro-batch the params chose; otherwise weight streaming may pick a
  // smaller one when the activations do not fit ("auto", as the Model Zoo's default).
  bool micro_batch_fixed = false;
  // The Model Zoo releases the params are written for. `auto` runs layer pipelined where
  // everything fits one wafer only for 1.x files, as the CS-2 of those releases ran small models;
  // from 2.0 on the Model Zoo runs weight streaming on a CS-2 cluster.
  config::ReleaseRange releases;
};

// A run the wafer cannot do as asked: pipelined execution that does not fit (by how much),
// pipelined on several systems, a micro-batch whose activations exceed the SRAM.
class MappingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ModeChoice {
  compiler::ExecutionMode mode = compiler::ExecutionMode::weight_streaming;
  std::string reason;
};

// The mode for a run that would need `pipelined_bytes` of SRAM with everything resident: as
// requested, or (auto) pipelined when that fits, there is one system and the params are of a
// 1.x release, weight streaming otherwise. Throws MappingError for a pipelined request that cannot
// be met, saying by how much.
ModeChoice choose_mode(std::int64_t pipelined_bytes, const WaferProfile& profile,
                       const WaferOptions& options);

// Chooses the execution mode, places (pipelined) or schedules (weight streaming) the plan's
// kernels, and estimates the step time and throughput on one system and on num_csx.
compiler::WaferMapping map_to_wafer(const compiler::Plan& plan, const WaferOptions& options);

}  // namespace csrun::wafer
