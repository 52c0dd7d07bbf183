#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernel_matching.hpp"

namespace csrun::compiler {

enum class BufferKind : std::uint8_t {
  input,      // a batch tensor, written before the step
  variable,   // state kept across steps
  constant,   // a constant, iota or other static value, filled when the plan is loaded
  temporary,  // a kernel's result, live from its kernel to its last reader
};
const char* buffer_kind_name(BufferKind kind);

inline constexpr std::int64_t kBufferAlignment = 64;
// A variable of this size or more starts on a page of its own: checkpoints move it by direct I/O
// straight from and into its memory (storage::UncachedFile), with no staging copy.
inline constexpr std::int64_t kPageAlignedVariableBytes = std::int64_t{64} << 10;
inline constexpr std::int64_t kPageBytes = 4096;

struct Buffer {
  graph::NodeId value = -1;  // the node whose value it holds (views share their operand's)
  BufferKind kind = BufferKind::temporary;
  std::int64_t offset = 0;  // in the arena
  std::int64_t bytes = 0;
  // Kernels (by position) that write it first and read it last. Persistent buffers span the step
  // (-1 to the kernel count); results the step returns live to its end.
  std::int32_t first_use = 0;
  std::int32_t last_use = 0;

  friend bool operator==(const Buffer&, const Buffer&) = default;
};

// Where every value of a step lives: one arena, persistent buffers first (inputs, variables,
// constants), then temporaries, which reuse the space of temporaries no longer live.
struct MemoryPlan {
  std::vector<Buffer> buffers;
  std::vector<std::int32_t> buffer_of;  // per node: its buffer, or -1 (a value inside a kernel)
  std::int64_t persistent_bytes = 0;
  std::int64_t peak_bytes = 0;      // the arena's size
  std::int64_t unshared_bytes = 0;  // what every buffer would take without reuse

  friend bool operator==(const MemoryPlan&, const MemoryPlan&) = default;
};

// Where the step's temporaries take the most memory together: the kernel (by position) and the
// temporaries live while it runs, largest first (what to look at when a run needs too much).
struct LivePeak {
  std::int32_t kernel = -1;  // -1: the step keeps no temporaries
  std::int64_t bytes = 0;
  std::vector<std::int32_t> buffers;  // indices into MemoryPlan::buffers
};
LivePeak live_peak(const MemoryPlan& memory, std::size_t kernels);

// Liveness over the kernel order, then best-fit placement of each temporary in the arena when its
// kernel runs, freeing the space after its last reader.
MemoryPlan plan_memory(const graph::Graph& graph, std::span<const Kernel> kernels);

}  // namespace csrun::compiler
