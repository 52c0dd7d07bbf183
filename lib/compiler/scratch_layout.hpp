#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace csrun::compiler {

struct Plan;

// What a step keeps in host memory beside its arena, laid out by the compiler after lower-host and
// stored in the plan (Plan::scratch), which the runtime binds as it is. Kernels run one at a time,
// so the values
// that live inside one kernel (no arena buffer, and stored: values_without_place) share one region,
// as large as the largest kernel needs; after them in that region, copies of persistent values
// taken before the variables change (an update not computed in place, an output that names a
// variable). A product of 16-bit values widens its operands and its 16-bit result into f32 work
// space unless the CPU multiplies 16-bit values in hardware: `widening_bytes` is the largest such
// space, an upper bound of what a kernel set takes; `hardware_bf16_widening_bytes` the same for a
// set that multiplies bfloat16 in hardware (amx, avx512bf16), where two bfloat16 operands are
// read as they are and a bfloat16 or f32 result written directly (products that form or sum onto
// windows are not counted there). A product that forms a convolution's windows a tile at a time
// (HostStep::windows), or sums a tile of its columns at a time onto them (HostStep::windows_sum),
// takes, per core of the team, a tile and the f32 blocks a 16-bit product widens and rounds beside
// it, in the same work space; many products whose 16-bit left operands are too large to widen
// whole (widened_product_rows) take a block of rows per core, with the rest of their widening:
// `per_core_work_bytes` is the largest such part of a core. Not counted: a few rows per core for
// softmax cross-entropy and the chains' per-core slots.
struct ScratchLayout {
  struct Place {
    graph::NodeId node = -1;
    std::int64_t offset = 0;   // from the region's start
    std::int32_t kernel = -1;  // in Plan::kernels, the kernel the value lives in; -1: a snapshot

    friend bool operator==(const Place&, const Place&) = default;
  };
  std::vector<Place> kernel_values;
  std::int64_t kernel_value_bytes = 0;
  std::vector<Place> snapshots;  // after the kernel values
  std::int64_t snapshot_bytes = 0;
  std::int64_t widening_bytes = 0;
  std::int64_t hardware_bf16_widening_bytes = 0;
  std::int64_t per_core_work_bytes = 0;

  std::int64_t region_bytes() const { return kernel_value_bytes + snapshot_bytes; }
  std::int64_t widening(bool hardware_bf16) const {
    return hardware_bf16 ? hardware_bf16_widening_bytes : widening_bytes;
  }
  // The work space products take on a team of `cores`.
  std::int64_t work(bool hardware_bf16, int cores) const {
    return std::max(widening(hardware_bf16), per_core_work_bytes * cores);
  }
  std::int64_t bytes(bool hardware_bf16, int cores) const {
    return region_bytes() + work(hardware_bf16, cores);
  }

  friend bool operator==(const ScratchLayout&, const ScratchLayout&) = default;
};

// Many products (attention's heads) whose 16-bit left operands are each more than this many
// floats widened are widened a block of rows at a time by the core that multiplies them: the
// product of Llama's grouped probabilities with the upstream gradient at MSL 8k is
// [8192 x 32768] a head, 1 GiB a core widened whole.
inline constexpr std::int64_t kMaxWidenedProductFloats = std::int64_t{1} << 22;

// The rows of op(a) [m x k] each of many products widens at a time: all of them, or as many as
// kMaxWidenedProductFloats holds, from the shape alone so that the bits do not depend on the
// machine.
inline std::int64_t widened_product_rows(std::int64_t m, std::int64_t k) {
  if (m * k <= kMaxWidenedProductFloats) return m;
  return std::clamp<std::int64_t>(kMaxWidenedProductFloats / std::max<std::int64_t>(k, 1), 1, m);
}

// Per node: whether the step computes it without storing it whole: kept one chunk at a time by
// its chain, a transpose a GEMM reads transposed, or a product a GEMM writes with its bias added.
std::vector<bool> values_without_place(const Plan& plan);

// The layout of a plan whose memory plan and host steps are decided (what build_plan stores).
ScratchLayout layout_scratch(const Plan& plan);

// The host memory a step of the plan takes: its arena and its scratch, on a kernel set that
// multiplies bfloat16 in hardware or not and a team of `cores`.
std::int64_t step_host_bytes(const Plan& plan, bool hardware_bf16, int cores);

// Per kernel of the plan: the bytes of the scratch region its values take.
std::vector<std::int64_t> kernel_scratch_bytes(const Plan& plan);

// The plan's scratch, one line per value it places (`--dump_ir layout-scratch`).
std::string scratch_layout_text(const Plan& plan);

}  // namespace csrun::compiler
