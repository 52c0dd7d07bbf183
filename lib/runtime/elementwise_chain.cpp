#include "elementwise_chain.hpp"

#include <algorithm>

namespace csrun::runtime {

namespace {

// 4096 f32 elements: a chain of a dozen values fits in a core's L2 cache.
constexpr std::int64_t kChunkElements = 4096;
// A thread takes at least this many chunks: fewer do not repay waking it.
constexpr std::int64_t kChunksPerPart = 8;

// Elements [begin, begin + length) of a whole value as a flat vector; a single value stays whole
// and broadcasts.
TensorRef chunk_of(const TensorRef& whole, std::int64_t count, std::int64_t begin,
                   std::int64_t length) {
  if (whole.count != count) return whole;
  TensorRef chunk = whole;
  chunk.data = whole.data + begin * static_cast<std::int64_t>(graph::dtype_size(whole.dtype));
  chunk.rank = 1;
  chunk.shape = {};
  chunk.shape[0] = length;
  chunk.count = length;
  return chunk;
}

}  // namespace

ElementwiseChain::ElementwiseChain(std::vector<NodeTask> tasks, const KernelSet& kernels,
                                   ThreadTeam& team)
    : tasks_(std::move(tasks)),
      chunks_(static_cast<std::size_t>(team.size()), tasks_),
      count_(tasks_.front().out.count),
      kernels_(&kernels),
      team_(&team) {}

void ElementwiseChain::run() {
  std::int64_t chunks = (count_ + kChunkElements - 1) / kChunkElements;
  std::int64_t parts = std::min<std::int64_t>(team_->size(), chunks / kChunksPerPart);
  if (parts <= 1) return run_chunks(0, chunks, chunks_.front());
  auto work = [&](int part) {
    run_chunks(chunks * part / parts, chunks * (part + 1) / parts,
               chunks_[static_cast<std::size_t>(part)]);
  };
  team_->run(work);
}

void ElementwiseChain::run_chunks(std::int64_t first, std::int64_t last,
                                  std::vector<NodeTask>& chunk) {
  for (std::int64_t index = first; index < last; ++index) {
    std::int64_t begin = index * kChunkElements;
    std::int64_t length = std::min(kChunkElements, count_ - begin);
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
      const NodeTask& whole = tasks_[t];
      NodeTask& part = chunk[t];
      part.out = chunk_of(whole.out, count_, begin, length);
      for (std::size_t i = 0; i < whole.in.size(); ++i)
        part.in[i] = chunk_of(whole.in[i], count_, begin, length);
      kernels_->run_elementwise(part);
    }
  }
}

}  // namespace csrun::runtime
