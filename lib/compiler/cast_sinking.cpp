#include <algorithm>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

// A 16-bit value widened to f32: its source is the smaller of the two.
bool widens(const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  return node.op == graph::OpKind::cast && node.type.dtype == graph::DType::f32 &&
         graph::dtype_size(graph.node(node.inputs[0]).type.dtype) <
             graph::dtype_size(node.type.dtype);
}

class CastSinker {
 public:
  explicit CastSinker(const graph::Graph& source)
      : source_(source),
        users_(source),
        rewriter_(source),
        deferred_at_(source.size(), kNotDeferred) {}

  std::size_t run() {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (widens(source_, id) && !read_first_by_update(id)) {
        deferred_at_[i] = copied_;
        continue;
      }
      for (NodeId input : source_.node(id).inputs)
        emit_pending(input);
      if (!rewriter_.copy_leaf(id)) rewriter_.copy(id);
      ++copied_;
    }
    for (std::size_t i = 0; i < source_.size(); ++i)
      emit_pending(static_cast<NodeId>(i));
    return moved_;
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  // A weight's gradient widened for its update stays where it is: schedule-updates moves the
  // update up to it, right after the gradient, where sinking it would hold the update back.
  bool read_first_by_update(NodeId id) const {
    std::span<const NodeId> readers = users_.of(id);
    if (readers.empty()) return false;
    NodeId first = *std::min_element(readers.begin(), readers.end());
    return source_.node(first).phase == graph::Phase::update;
  }

  // Emits a deferred cast just before its first reader; it moved if another node came between.
  void emit_pending(NodeId id) {
    std::int64_t& deferred_at = deferred_at_[static_cast<std::size_t>(id)];
    if (deferred_at == kNotDeferred) return;
    if (deferred_at != copied_) ++moved_;
    deferred_at = kNotDeferred;
    rewriter_.copy(id);
    ++copied_;
  }

  static constexpr std::int64_t kNotDeferred = -1;

  const graph::Graph& source_;
  NodeUsers users_;
  GraphRewriter rewriter_;
  std::vector<std::int64_t> deferred_at_;  // per cast: the nodes copied before it was deferred
  std::int64_t copied_ = 0;
  std::size_t moved_ = 0;
};

}  // namespace

std::size_t sink_casts(Program& program) {
  expect_unfused(program, "sink_casts");
  CastSinker sinker(program.graph);
  std::size_t moved = sinker.run();
  if (moved > 0) program.graph = sinker.finish();
  return moved;
}

}  // namespace csrun::compiler
