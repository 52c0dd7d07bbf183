#pragma once

// Runs consecutive elementwise nodes of one kernel chunk by chunk rather than node by node, so a
// fused kernel reads and writes each value once and its intermediates stay in cache, as the
// fused kernel on the wafer would.

#include <vector>

#include "kernel_set.hpp"
#include "tensor_ref.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

// Which nodes form a chain is the plan's decision (compiler::lower_host): elementwise nodes over
// one element count whose operands have that count or one element.
class ElementwiseChain {
 public:
  // Runs each chunk with `kernels`; large chains split their chunks across `team` (which must
  // outlive the chain).
  ElementwiseChain(std::vector<NodeTask> tasks, const KernelSet& kernels, ThreadTeam& team);
  void run();

 private:
  void run_chunks(std::int64_t first, std::int64_t last, std::vector<NodeTask>& chunk);

  std::vector<NodeTask> tasks_;
  // Per thread of the team: the tasks over one chunk, re-pointed for every chunk.
  std::vector<std::vector<NodeTask>> chunks_;
  std::int64_t count_ = 0;
  const KernelSet* kernels_;
  ThreadTeam* team_;
};

}  // namespace csrun::runtime
