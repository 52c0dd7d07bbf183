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
// space unless the CPU multiplies 16-bit values in hardware: its right-hand operand whole, which
// the cores of the team share (and its left operand, where the product is one row block), and,
// per core, the rows of its left operand that a tile reads (of many products: a product's, or a
// block of its rows, widened_product_rows) and the tile's 16-bit result computed in f32 before it
// is rounded (of many products: a product's). A product that forms a convolution's windows a tile
// at a time (HostStep::windows), or sums a tile of its columns at a time onto them
// (HostStep::windows_sum), takes, per core, a tile and the f32 blocks a 16-bit product widens and
// rounds beside it. The products run one at a time, so the work space is the largest one's on the
// team's cores (`works`). `hardware_bf16_works` are those of a set that multiplies bfloat16 in
// hardware (amx, avx512bf16), where two bfloat16 operands are read as they are and a bfloat16 or
// f32 result written directly (products that form or sum onto windows count as in other sets). Not
// counted: a few rows per core for softmax cross-entropy and the chains' per-core slots.
struct ScratchLayout {
  struct Place {
    graph::NodeId node = -1;
    std::int64_t offset = 0;   // from the region's start
    std::int32_t kernel = -1;  // in Plan::kernels, the kernel the value lives in; -1: a snapshot

    friend bool operator==(const Place&, const Place&) = default;
  };
  // One product's work space: a part that the cores of the team share and a part per core.
  struct Work {
    std::int64_t shared = 0;
    std::int64_t per_core = 0;

    std::int64_t on(int cores) const { return shared + per_core * cores; }

    friend bool operator==(const Work&, const Work&) = default;
  };

  std::vector<Place> kernel_values;
  std::int64_t kernel_value_bytes = 0;
  std::vector<Place> snapshots;  // after the kernel values
  std::int64_t snapshot_bytes = 0;
  // The products' work spaces that no other product's exceeds in both parts: on a team of any
  // size the largest is one of these. `hardware_bf16_works`: the same on a set that multiplies
  // bfloat16 in hardware.
  std::vector<Work> works;
  std::vector<Work> hardware_bf16_works;

  std::int64_t region_bytes() const { return kernel_value_bytes + snapshot_bytes; }
  const std::vector<Work>& works_of(bool hardware_bf16) const {
    return hardware_bf16 ? hardware_bf16_works : works;
  }
  // The largest part any product's cores share, and the largest part of a core.
  std::int64_t widening(bool hardware_bf16) const {
    std::int64_t largest = 0;
    for (const Work& work : works_of(hardware_bf16))
      largest = std::max(largest, work.shared);
    return largest;
  }
  std::int64_t per_core_work(bool hardware_bf16) const {
    std::int64_t largest = 0;
    for (const Work& work : works_of(hardware_bf16))
      largest = std::max(largest, work.per_core);
    return largest;
  }
  // The work space products take on a team of `cores`.
  std::int64_t work(bool hardware_bf16, int cores) const {
    std::int64_t largest = 0;
    for (const Work& work : works_of(hardware_bf16))
      largest = std::max(largest, work.on(cores));
    return largest;
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

// How one matrix product op(a) [m x k] times op(b) [k x n] is cut into tiles that the cores of a
// team share: row blocks, each whole or in two column halves (lib/runtime's matrix product). From
// the shape alone, and from whether the GEMM library multiplies column halves of this product
// faster (`columns_first`), never from the cores: a library may round a block differently for
// another block height, so tiles that depended on the cores would make a run's bits depend on
// the machine.
struct ProductTiling {
  std::int64_t row_blocks = 1;
  std::int64_t column_blocks = 1;

  std::int64_t count() const { return row_blocks * column_blocks; }
  // The most rows and columns a tile of an [m x n] result takes (the blocks share them out as
  // evenly as they can).
  std::int64_t largest_rows(std::int64_t m) const { return (m + row_blocks - 1) / row_blocks; }
  std::int64_t largest_columns(std::int64_t n) const {
    return (n + column_blocks - 1) / column_blocks;
  }
};

// Below this many multiply-adds a product is one tile, and many products run on one core: waking
// the team costs more.
inline constexpr std::int64_t kSplitProductMultiplyAdds = std::int64_t{1} << 20;

ProductTiling product_tiling(std::int64_t m, std::int64_t n, std::int64_t k, bool columns_first);

// The most rows of op(a) a tile of such a product takes, and the most values of the result,
// whichever way columns_first goes.
std::int64_t largest_tile_rows(std::int64_t m, std::int64_t n, std::int64_t k);
std::int64_t largest_tile_values(std::int64_t m, std::int64_t n, std::int64_t k);

// Per node: whether the step computes it without storing it whole: kept one chunk at a time by
// its chain, a transpose a GEMM reads transposed, or a product a GEMM writes with its bias added.
std::vector<bool> values_without_place(const Plan& plan);

// The layout of a plan whose memory plan and host steps are decided (what build_plan stores).
ScratchLayout layout_scratch(const Plan& plan);

// The host memory a step of the plan takes: its arena and its scratch, on a kernel set that
// multiplies bfloat16 in hardware or not and a team of `cores`.
std::int64_t step_host_bytes(const Plan& plan, bool hardware_bf16, int cores);
// Of that, what holds nothing from one step to the next (the arena's temporaries and the
// products' work space), which runtime::Executable::release_temporaries gives back.
std::int64_t temporary_host_bytes(const Plan& plan, bool hardware_bf16, int cores);

// Per kernel of the plan: the bytes of the scratch region its values take.
std::vector<std::int64_t> kernel_scratch_bytes(const Plan& plan);

// The plan's scratch, one line per value it places (`--dump_ir layout-scratch`).
std::string scratch_layout_text(const Plan& plan);

}  // namespace csrun::compiler
