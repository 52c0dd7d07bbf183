#include <algorithm>
#include <cstdint>
#include <set>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"
#include "static_values.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

// The most nodes one recomputation repeats: SwiGLU's sigmoid of the gate's input and its product
// with that input, a normalization's scale and weight.
constexpr std::ptrdiff_t kMaxRecomputedNodes = 3;

class ActivationRecomputer {
 public:
  explicit ActivationRecomputer(const graph::Graph& source)
      : source_(source),
        users_(source),
        static_(static_values(source)),
        rewriter_(source),
        recomputable_(source.size(), false),
        chosen_(source.size(), false) {
    choose();
  }

  std::size_t run() {
    return recompute_chosen(rewriter_, users_, chosen_,
                            [&](NodeId operand) { return !readable(operand); });
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  bool forward(NodeId id) const { return source_.node(id).phase == graph::Phase::forward; }
  bool single(NodeId id) const { return graph::element_count(source_.node(id).type.shape) == 1; }

  bool read_later(NodeId id) const { return read_after_forward(source_, users_, id); }

  // Whether a recomputation may read `id` where it is, storing nothing more: a leaf, a static or
  // single value, or a forward value a later phase reads anyway and that is not recomputed.
  bool available(NodeId id) const {
    auto index = static_cast<std::size_t>(id);
    const graph::Node& node = source_.node(id);
    if (graph::op_class(node.op) == graph::OpClass::leaf || static_[index] || single(id))
      return true;
    return forward(id) && read_later(id) && !chosen_[index];
  }

  // Whether a recomputation may read `id` where it is: available, or a forward 16-bit value (a
  // product's result before its widening), which is then stored for the later phase instead of
  // the f32 value made from it, half the bytes.
  bool readable(NodeId id) const {
    const graph::Node& node = source_.node(id);
    return available(id) || (forward(id) && graph::is_half(node.type.dtype) &&
                             graph::op_class(node.op) != graph::OpClass::leaf);
  }

  // Whether recomputing `id` repeats an op that computes something: a reshape only views its
  // operand.
  static bool computes(const graph::Node& node) { return node.op != graph::OpKind::reshape; }

  static bool recomputable_op(const graph::Node& node) {
    return graph::op_class(node.op) == graph::OpClass::elementwise ||
           node.op == graph::OpKind::reshape;
  }

  // Adds to `nodes` the nodes recomputing `id` repeats (reshapes aside); false when `id` cannot
  // be recomputed or they would be more than kMaxRecomputedNodes.
  bool collect(NodeId id, std::set<NodeId>& nodes) const {
    const graph::Node& node = source_.node(id);
    if (!forward(id) || !recomputable_op(node) || static_[static_cast<std::size_t>(id)] ||
        single(id))
      return false;
    if (computes(node)) nodes.insert(id);
    if (std::ssize(nodes) > kMaxRecomputedNodes) return false;
    for (NodeId operand : node.inputs) {
      if (readable(operand)) continue;
      if (!recomputable_[static_cast<std::size_t>(operand)] || !collect(operand, nodes))
        return false;
    }
    return true;
  }

  // A forward slice of a value a later phase reads anyway (a block of attention's keys or values
  // of any type): made again by a copy, it need not be stored beside the value it copies.
  bool slice_of_kept(NodeId id) const {
    const graph::Node& node = source_.node(id);
    return node.op == graph::OpKind::slice && forward(id) && !single(id) &&
           available(node.inputs[0]);
  }

  // In node order, so each operand's choice is known first: an f32 value a later phase reads is
  // recomputed there when a few elementwise nodes make it from what is stored anyway. 16-bit
  // values (the products' operand copies) are kept: half the bytes, and often the end of a longer
  // chain (GELU's tanh), unless they are slices of a value stored anyway.
  void choose() {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      std::set<NodeId> nodes;
      recomputable_[i] = collect(id, nodes);
      bool computed =
          recomputable_[i] && !nodes.empty() && source_.node(id).type.dtype == graph::DType::f32;
      chosen_[i] = read_later(id) && (computed || slice_of_kept(id));
    }
  }

  const graph::Graph& source_;
  NodeUsers users_;
  std::vector<bool> static_;
  GraphRewriter rewriter_;
  std::vector<bool> recomputable_;  // per source node: whether collect() found it recomputable
  std::vector<bool> chosen_;        // per source node: recomputed where a later phase reads it
};

}  // namespace

std::size_t recompute_activations(Program& program) {
  return rewrite_program<ActivationRecomputer>(program, "recompute_activations");
}

}  // namespace csrun::compiler
