#pragma once

// Runs consecutive elementwise nodes of one kernel chunk by chunk rather than node by node, so a
// fused kernel reads and writes each value once and its intermediates stay in cache, as the
// fused kernel on the wafer would.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "chain_program.hpp"
#include "compiled_chain.hpp"
#include "kernel_set.hpp"
#include "storage/page_aligned.hpp"
#include "tensor_ref.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

// Which nodes form a chain is the plan's decision (compiler::lower_host): elementwise nodes over
// one element count whose operands have that count or one element. So is which of their values
// live one chunk at a time (the plan's chunk-local nodes): those have no memory of their own
// (their tasks' results have no data) and take a slot of a per-thread chunk buffer instead,
// which a later node's result reuses once the value's last reader has run. A chain the plan runs
// `in_registers` is a ChainProgram instead: blocks of kChainLanes elements through every node, each
// value in a register of a per-thread buffer; or, where the kernel set runs AVX-512 or AVX2 code,
// that program compiled to one loop with its values in vector registers (compiled_chain.hpp).
class ElementwiseChain {
 public:
  // `tasks` run `nodes`, in order; `sums` are full reduce_sum nodes of f32 values the chain
  // computes, which it takes chunk by chunk (full_sum.hpp's order). Runs each chunk with
  // `kernels`; large chains split their chunks across `team` (which must outlive the chain).
  // Throws std::invalid_argument when a task reads a value that is neither stored nor computed
  // earlier in the chain, when a chain in registers has a node a ChainProgram cannot compute, or
  // for a sum that is not of one of its f32 values or one too many (compiler::kMaxChainSums).
  ElementwiseChain(std::vector<NodeTask> tasks, std::span<const graph::NodeId> nodes,
                   std::span<const graph::NodeId> chunk_local, std::vector<NodeTask> sums,
                   bool in_registers, const KernelSet& kernels, ThreadTeam& team);
  void run();
  // The per-thread chunk buffers of the chunk-local values, or the registers.
  std::int64_t buffer_bytes() const;
  // Whether it runs in registers, and whether as machine code.
  bool in_registers() const { return program_.has_value(); }
  bool compiled() const { return compiled_.has_value(); }

 private:
  // A stored operand the task broadcasts: copied a chunk at a time into a slot of its own.
  struct BroadcastRead {
    std::size_t input = 0;
    std::int32_t slot = 0;
    graph::FlatBroadcast how;
  };

  // Where a task's result and operands are: their stored value (-1), or a slot of the chunk
  // buffer; and the operands it broadcasts.
  struct Places {
    std::int32_t out = -1;
    std::vector<std::int32_t> in;
    std::vector<BroadcastRead> broadcasts;
  };

  std::vector<std::int32_t> locate_operands(std::span<const graph::NodeId> nodes,
                                            std::span<const graph::NodeId> local);
  void assign_slots(std::span<const std::int32_t> last_read);
  void assign_broadcast_slots();
  void check_sums(std::span<const graph::NodeId> nodes);
  void run_chunks(std::int64_t first, std::int64_t last, std::vector<NodeTask>& chunk,
                  std::byte* buffer);
  void finish_sums();

  std::vector<NodeTask> tasks_;
  std::vector<Places> places_;
  std::vector<NodeTask> sums_;
  std::vector<std::size_t> summed_;  // per sum: the task whose result it adds up
  std::vector<double> chunk_sums_;   // per chunk, each sum's total of it
  std::int32_t slots_ = 0;
  std::optional<ChainProgram> program_;  // a chain in registers
  // Its machine code, where the kernel set runs it and the code generator takes the program.
  std::optional<CompiledChain> compiled_;
  // Per thread of the team: the tasks over one chunk, re-pointed for every chunk, and the chunk
  // buffer.
  std::vector<std::vector<NodeTask>> chunks_;
  std::vector<std::vector<std::byte, storage::PageAlignedAllocator<std::byte>>> buffers_;
  std::int64_t count_ = 0;
  const KernelSet* kernels_;
  ThreadTeam* team_;
};

// The program of a row chain (compiler::HostStep::row_chain): `tasks` run `nodes` in order, their
// values in registers, a task's result stored where it has memory. `row_value` (or -1) is a value
// the chain reads from its kernel's row buffer (a softmax_grad's rows), in the program's row
// register; `row_result` (or -1) a node whose values it writes there (a softmax's input). Throws
// std::invalid_argument for a node registers do not compute, or one that reads a value neither
// stored, the row value, nor computed before it in the chain.
ChainProgram row_chain_program(std::span<const NodeTask> tasks,
                               std::span<const graph::NodeId> nodes, graph::NodeId row_value,
                               graph::NodeId row_result);

}  // namespace csrun::runtime
