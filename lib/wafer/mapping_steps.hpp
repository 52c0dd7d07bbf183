#pragma once

#include <cstdint>
#include <vector>

#include "compiler/plan.hpp"
#include "kernel_cost.hpp"
#include "layers.hpp"
#include "wafer_profile.hpp"

namespace csrun::wafer {

// What the plan needs from the wafer's SRAM in each mode.
struct SramDemand {
  // Pipelined, everything resident: per kernel, its weights and optimizer state (f32) and its
  // results for the samples in flight. Index: plan kernel.
  std::vector<std::int64_t> kernel_bytes;
  std::int64_t pipelined = 0;
  // Weight streaming: the peak of live activations of the traced batch (gradients stream out),
  // and the largest layer's 16-bit weights (two are on the wafer: one computing, one arriving).
  std::int64_t activations = 0;
  std::int64_t largest_layer_weights = 0;
};

SramDemand sram_demand(const compiler::Plan& plan, const LayerMap& layers);

// The inputs every mode's mapping uses.
struct MappingInputs {
  const compiler::Plan& plan;
  const WaferProfile& profile;
  const LayerMap& layers;
  const std::vector<KernelWork>& work;  // per plan kernel
  const SramDemand& demand;
  std::int64_t num_csx = 1;
  std::int64_t system_batch = 0;
};

compiler::WaferMapping map_pipelined(const MappingInputs& in);

// How weight streaming holds a micro-batch's activations until the backward pass reads them.
struct ActivationPlan {
  std::int64_t micro_batch = 1;
  // Keep only what one layer needs and compute the forward pass again during the backward pass.
  bool recompute = false;
  std::int64_t need = 0;     // SRAM: the activations kept, and two layers' weights
  std::int64_t spilled = 0;  // what does not fit: out to activation servers and back
};

compiler::WaferMapping map_weight_streaming(const MappingInputs& in, const ActivationPlan& plan);

// The SwarmX tree's depth for n systems: ceil(log_fan_out(n)), 0 for one system.
int swarmx_levels(std::int64_t systems, int fan_out);

}  // namespace csrun::wafer
