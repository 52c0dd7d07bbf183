#include <map>

#include "graph_rewriter.hpp"
#include "passes.hpp"
#include "static_values.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

// The most nodes a recomputation repeats: the widening, the loss scale's division and dynamic
// loss scaling's choice between the gradient and zero.
constexpr int kMaxRecomputedNodes = 3;

class Recomputer {
 public:
  explicit Recomputer(const graph::Graph& source)
      : source_(source), static_(static_values(source)), rewriter_(source) {}

  std::size_t run() {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (rewriter_.copy_leaf(id)) continue;
      std::vector<NodeId> inputs = rewriter_.mapped_inputs(id);
      std::map<NodeId, NodeId> recomputed;  // per value this node reads: its recomputation
      const std::vector<NodeId>& operands = source_.node(id).inputs;
      for (std::size_t j = 0; j < operands.size(); ++j) {
        NodeId value = operands[j];
        if (recompute_depth(value) == 0 || !kept_apart(id, value)) continue;
        auto [at, added] = recomputed.try_emplace(value, -1);
        if (added) at->second = recompute(value);
        inputs[j] = at->second;
      }
      rewriter_.copy(id, std::move(inputs));
    }
    return added_;
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  bool single(NodeId id) const { return graph::element_count(source_.node(id).type.shape) == 1; }
  bool same_shape(NodeId a, NodeId b) const {
    return source_.node(a).type.shape == source_.node(b).type.shape;
  }

  // The value a recomputation starts from: stored anyway, and no wider than the f32 value made
  // from it. A 16-bit value (a product's result) is half the size; an f32 one must be an input or
  // variable of the step (a split batch's summed gradients, which its update unscales) or come
  // from a kernel that stores its result (a product, a sum), not from an elementwise kernel that
  // could have kept it in registers.
  bool stored_source(NodeId id) const {
    const graph::Node& node = source_.node(id);
    if (graph::is_half(node.type.dtype)) return true;
    if (node.type.dtype != graph::DType::f32) return false;
    if (node.op == OpKind::input || node.op == OpKind::variable) return true;
    return graph::op_class(node.op) != graph::OpClass::elementwise && !node.inputs.empty();
  }

  // The operand of `id` that carries the value along (the others are single values), or -1.
  NodeId carried(NodeId id) const {
    const graph::Node& node = source_.node(id);
    const std::vector<NodeId>& in = node.inputs;
    switch (node.op) {
      case OpKind::cast:
        return graph::is_floating(source_.node(in[0]).type.dtype) ? in[0] : -1;
      case OpKind::mul:
        if (single(in[1])) return in[0];
        return single(in[0]) ? in[1] : -1;
      case OpKind::div:
        return single(in[1]) ? in[0] : -1;
      case OpKind::where:
        if (!single(in[0])) return -1;
        if (single(in[2])) return in[1];
        return single(in[1]) ? in[2] : -1;
      default:
        return -1;
    }
  }

  // How many nodes recomputing f32 value `id` repeats: a widening of a stored value, scaled by
  // single values or chosen against one (a gradient unscaled by dynamic loss scaling); 0 when it
  // is not such a value, a single value (which a kernel reads once) or would repeat more than
  // kMaxRecomputedNodes.
  int recompute_depth(NodeId id) const {
    const graph::Node& node = source_.node(id);
    if (node.type.dtype != graph::DType::f32 || single(id) || static_[static_cast<std::size_t>(id)])
      return 0;
    NodeId from = carried(id);
    if (from < 0 || !same_shape(from, id)) return 0;
    if (stored_source(from)) return 1;
    int below = recompute_depth(from);
    return below == 0 || below == kMaxRecomputedNodes ? 0 : below + 1;
  }

  // Whether `reader` cannot share a kernel with the one computing `value`, so it would read
  // `value` from memory: it is elementwise over the same elements, and it also reads a value
  // computed after `value` that no elementwise kernel over these elements computes (dynamic loss
  // scaling's verdict on every gradient, a clipping coefficient of the global norm).
  bool kept_apart(NodeId reader, NodeId value) const {
    const graph::Node& node = source_.node(reader);
    if (graph::op_class(node.op) != graph::OpClass::elementwise || !same_shape(reader, value))
      return false;
    for (NodeId other : node.inputs) {
      const graph::Node& operand = source_.node(other);
      if (other == value || other < value || operand.inputs.empty() ||
          static_[static_cast<std::size_t>(other)])
        continue;
      bool same_kernel_possible =
          graph::op_class(operand.op) == graph::OpClass::elementwise && same_shape(other, reader);
      if (!same_kernel_possible) return true;
    }
    return false;
  }

  // Adds the nodes that compute `id` again from its stored source, reading the single values
  // where they are.
  NodeId recompute(NodeId id) {
    NodeId from = carried(id);
    NodeId again = stored_source(from) ? rewriter_.mapped(from) : recompute(from);
    std::vector<NodeId> inputs = rewriter_.mapped_inputs(id);
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      if (source_.node(id).inputs[j] == from) inputs[j] = again;
    }
    ++added_;
    const graph::Node& node = source_.node(id);
    return rewriter_.add(node.op, std::move(inputs), node.attrs, id);
  }

  const graph::Graph& source_;
  std::vector<bool> static_;
  GraphRewriter rewriter_;
  std::size_t added_ = 0;
};

}  // namespace

std::size_t recompute_values(Program& program) {
  std::size_t added = rewrite_program<Recomputer>(program, "recompute_values");
  if (added > 0) eliminate_dead_code(program);
  return added;
}

}  // namespace csrun::compiler
