#include <cstdint>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

// The most products one recomputation repeats: the scores' Q K^T.
constexpr int kMaxRecomputedProducts = 1;
constexpr int kUnknown = -2;
constexpr int kUnrecomputable = -1;

class AttentionRecomputer {
 public:
  explicit AttentionRecomputer(const graph::Graph& source)
      : source_(source),
        users_(source),
        rewriter_(source),
        probabilities_(source.size(), false),
        products_(source.size(), kUnknown),
        recomputations_(source.size()) {
    mark_probabilities();
  }

  std::size_t run() {
    if (!worthwhile()) return 0;
    copy_recomputing_later_reads(
        rewriter_, [&](NodeId id) { return recomputable_probabilities(id); },
        [&](NodeId id, graph::Phase phase) { return recomputed(id, phase); });
    return recomputations_.added();
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  bool forward(NodeId id) const { return source_.node(id).phase == graph::Phase::forward; }
  bool leaf(NodeId id) const {
    return graph::op_class(source_.node(id).op) == graph::OpClass::leaf;
  }
  bool same_shape(NodeId a, NodeId b) const {
    return source_.node(a).type.shape == source_.node(b).type.shape;
  }

  bool read_later(NodeId id) const { return read_after_forward(source_, users_, id); }

  // A forward softmax along the last axis of a batched value: attention's probabilities, one
  // row per query and head.
  bool attention_softmax(NodeId id) const {
    const graph::Node& node = source_.node(id);
    auto rank = static_cast<std::int64_t>(node.type.shape.size());
    return node.op == OpKind::softmax && forward(id) && rank >= 3 && node.attrs.axis == rank - 1;
  }

  // The probabilities: each attention softmax, and the forward values made from it element by
  // element (its 16-bit copy, its dropout) or reshaped (grouped-query attention's heads).
  void mark_probabilities() {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      const graph::Node& node = source_.node(id);
      if (attention_softmax(id)) {
        probabilities_[i] = true;
        continue;
      }
      if (!forward(id)) continue;
      if (node.op == OpKind::reshape) {
        probabilities_[i] = probabilities_[static_cast<std::size_t>(node.inputs[0])];
        continue;
      }
      bool elementwise =
          graph::op_class(node.op) == graph::OpClass::elementwise || node.op == OpKind::dropout;
      if (!elementwise) continue;
      for (NodeId operand : node.inputs) {
        if (probabilities_[static_cast<std::size_t>(operand)] && same_shape(operand, id))
          probabilities_[i] = true;
      }
    }
  }

  // Ops the forward pass can run again for the same bits: pure functions of their operands
  // (dropout's draws are keyed by the step and the element).
  static bool repeatable(OpKind op) {
    switch (graph::op_class(op)) {
      case graph::OpClass::elementwise:
        return true;
      case graph::OpClass::layout:
        return op == OpKind::transpose || op == OpKind::reshape || op == OpKind::broadcast_to;
      default:
        return op == OpKind::matmul || op == OpKind::softmax || op == OpKind::dropout;
    }
  }

  // Whether operand `id` of a recomputed node is recomputed with it, rather than read where it
  // is: a forward value the later phases do not read (so it is not stored until then), unless
  // it is a leaf. Probabilities are always recomputed.
  bool recomputed_with(NodeId id) const {
    if (probabilities_[static_cast<std::size_t>(id)]) return true;
    return forward(id) && !leaf(id) && !read_later(id);
  }

  // How many products recomputing `id` repeats; kUnrecomputable when it cannot be recomputed (an
  // op that is not repeatable, or more products than kMaxRecomputedProducts).
  int products_repeated(NodeId id) {
    int& known = products_[static_cast<std::size_t>(id)];
    if (known != kUnknown) return known;
    const graph::Node& node = source_.node(id);
    int products = node.op == OpKind::matmul ? 1 : 0;
    bool possible = repeatable(node.op);
    for (NodeId operand : node.inputs) {
      if (!possible || !recomputed_with(operand)) continue;
      int below = products_repeated(operand);
      if (below == kUnrecomputable) possible = false;
      products += below;
    }
    known = possible && products <= kMaxRecomputedProducts ? products : kUnrecomputable;
    return known;
  }

  bool recomputable_probabilities(NodeId id) {
    return probabilities_[static_cast<std::size_t>(id)] && products_repeated(id) != kUnrecomputable;
  }

  // Recomputing pays when the probabilities the later phases read are at least half of what the
  // forward pass stores for them: they grow with the square of the sequence, the rest with the
  // sequence, so this holds from a few hundred tokens on (GPT-2 small's shape: from MSL 1024).
  bool worthwhile() {
    std::int64_t probabilities = 0;
    std::int64_t stored = 0;
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (!forward(id) || leaf(id) || !read_later(id)) continue;
      std::int64_t bytes = source_.node(id).type.byte_size();
      stored += bytes;
      if (recomputable_probabilities(id)) probabilities += bytes;
    }
    return probabilities > 0 && 2 * probabilities >= stored;
  }

  // `id` computed again in `phase`, once for all later readers.
  NodeId recomputed(NodeId id, graph::Phase phase) {
    return recomputations_.of(rewriter_, id, phase,
                              [&](NodeId operand) { return recomputed_with(operand); });
  }

  const graph::Graph& source_;
  NodeUsers users_;
  GraphRewriter rewriter_;
  std::vector<bool> probabilities_;  // per source node
  std::vector<int> products_;        // per source node: products_repeated, once known
  Recomputations recomputations_;
};

}  // namespace

std::size_t recompute_attention(Program& program) {
  expect_unfused(program, "recompute_attention");
  return rewrite_where_present<AttentionRecomputer>(program.graph, OpKind::softmax);
}

}  // namespace csrun::compiler
