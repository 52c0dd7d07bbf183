#include <algorithm>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

class WindowsRecomputer {
 public:
  explicit WindowsRecomputer(const graph::Graph& source)
      : source_(source), users_(source), rewriter_(source), again_(source.size(), -1) {}

  std::size_t run() {
    copy_recomputing_later_reads(
        rewriter_, [&](NodeId id) { return forward_windows(id); },
        [&](NodeId id, graph::Phase phase) { return recomputed(id, phase); });
    return added_;
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  // A forward value made of a convolution's windows: the windows themselves (more than one per
  // element, or they would be a reshape), or a reshape of such a value. Under mixed precision the
  // windows are taken of the 16-bit input (precision), so no cast lies above them.
  bool forward_windows(NodeId id) const {
    const graph::Node& node = source_.node(id);
    if (node.phase != graph::Phase::forward) return false;
    switch (node.op) {
      case OpKind::windows:
        return graph::element_count(node.attrs.shape) > 1;
      case OpKind::reshape:
        return forward_windows(node.inputs[0]);
      default:
        return false;
    }
  }

  // A forward pad that only windows read: recomputed with them, so that only the unpadded value
  // stays alive.
  bool padding_for_windows(NodeId id) const {
    const graph::Node& node = source_.node(id);
    if (node.op != OpKind::pad || node.phase != graph::Phase::forward || users_.escapes(id))
      return false;
    std::span<const NodeId> readers = users_.of(id);
    return std::all_of(readers.begin(), readers.end(),
                       [&](NodeId reader) { return source_.node(reader).op == OpKind::windows; });
  }

  // `id` computed again in `phase`, from the value its windows read, once for all later readers.
  NodeId recomputed(NodeId id, graph::Phase phase) {
    NodeId& again = again_[static_cast<std::size_t>(id)];
    if (again >= 0) return again;
    NodeId operand = source_.node(id).inputs[0];
    bool repeated = forward_windows(operand) || padding_for_windows(operand);
    NodeId from = repeated ? recomputed(operand, phase) : rewriter_.mapped(operand);
    ++added_;
    again = rewriter_.repeat(id, {from}, phase);
    return again;
  }

  const graph::Graph& source_;
  NodeUsers users_;
  GraphRewriter rewriter_;
  std::vector<NodeId> again_;  // per source node, its recomputation; -1 while there is none
  std::size_t added_ = 0;
};

}  // namespace

std::size_t recompute_windows(Program& program) {
  expect_unfused(program, "recompute_windows");
  return rewrite_where_present<WindowsRecomputer>(program.graph, OpKind::windows);
}

}  // namespace csrun::compiler
