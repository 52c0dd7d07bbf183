#pragma once

#include <cstdint>

#include "compiler/kernel_library.hpp"
#include "compiler/plan.hpp"
#include "wafer_profile.hpp"

namespace csrun::wafer {

// What one kernel of a plan does, in the cost model's units. Each quantity is split into the
// part that grows with the batch and the part that does not (weights), so the model can price
// other micro-batch sizes than the one traced.
struct KernelWork {
  compiler::CostModel model = compiler::CostModel::streaming;
  double fixed_cycles = 0.0;
  bool half = false;  // the arithmetic's operands are 16-bit
  double flops = 0.0;
  double bytes_read = 0.0;  // from activations
  double weight_bytes_read = 0.0;
  double bytes_written = 0.0;
  // A matrix product's operands [..., M, K] and [..., K, N] (all problems of the batch) and how
  // many independent problems the batch dimensions make: the fabric brings each PE its share.
  double left_bytes = 0.0;
  double right_bytes = 0.0;
  double problems = 1.0;
  bool right_is_weight = false;

  // The same kernel over `factor` times as many samples.
  KernelWork scaled(double factor) const;
};

KernelWork kernel_work(const compiler::Plan& plan, const compiler::Kernel& kernel);

struct KernelTime {
  double cycles = 0.0;
  double latency_cycles = 0.0;    // of those, start-up and crossing the region
  const char* bound = "latency";  // compute, memory, fabric or latency

  double seconds(const WaferProfile& profile) const { return cycles / profile.clock_hz; }
};

// The kernel's time on a width x height rectangle of PEs.
KernelTime kernel_time(const WaferProfile& profile, const KernelWork& work, std::int32_t width,
                       std::int32_t height);

}  // namespace csrun::wafer
