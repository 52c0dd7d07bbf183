#include <array>

#include "fusion_groups.hpp"
#include "node_users.hpp"
#include "passes.hpp"
#include "plan.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

class SoftmaxFusion {
 public:
  explicit SoftmaxFusion(Program& program)
      : graph_(program.graph), users_(program.graph), groups_(program.graph, program.fusions) {}

  std::size_t run() {
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (!runs_row_chain(graph_.node(id)) || groups_.group_of(id) >= 0 || groups_.is_static(id))
        continue;
      std::int32_t group = groups_.start(id, "softmax");
      if (graph_.node(id).op == OpKind::softmax) {
        take_input_chain(group, id);
        take_rounded_copy(group, id);
      } else {
        take_result_chain(group, id);
        take_upstream_dropout(group, id);
        if (joins_softmax(group, id)) continue;
      }
      if (groups_.size(group) > 1) fused_ += groups_.size(group);
    }
    return fused_;
  }

  std::vector<Fusion> finish() const { return groups_.finish(); }

 private:
  // Whether `id` can run over the rows of `rows` with a row kernel, as a chain in registers: an
  // elementwise node of that shape, in no kernel yet, whose operands broadcast a block at a time.
  bool runs_by_rows(NodeId id, const graph::Shape& rows) const {
    const graph::Node& node = graph_.node(id);
    if (graph::op_class(node.op) != graph::OpClass::elementwise || node.type.shape != rows ||
        groups_.group_of(id) >= 0 || groups_.is_static(id))
      return false;
    std::vector<graph::DType> operands;
    for (NodeId input : node.inputs) {
      const graph::TensorType& operand = graph_.node(input).type;
      if (!graph::flat_broadcast(operand.shape, rows)) return false;
      operands.push_back(operand.dtype);
    }
    return computes_in_registers(node, operands);
  }

  // The elementwise nodes that compute a softmax's input and that only the next of them reads
  // (attention's scale and mask): the kernel computes each row of the input as it normalizes it,
  // so the input is never stored. Follows the operand of the softmax's shape, latest first.
  void take_input_chain(std::int32_t group, NodeId softmax) {
    const graph::Shape& rows = graph_.node(softmax).type.shape;
    NodeId tail = softmax;
    while (true) {
      NodeId next = -1;
      for (NodeId input : graph_.node(tail).inputs) {
        if (users_.sole_user(input) == tail && runs_by_rows(input, rows) &&
            groups_.can_join(group, input)) {
          next = input;
          break;
        }
      }
      if (next < 0) return;
      groups_.join(group, next);
      tail = next;
    }
  }

  // The first cast of the softmax's result to a 16-bit type (the operand of attention's product
  // with the values), or of a dropout of it that only the cast reads (attention dropout): the
  // kernel rounds each row into it, dropped out, as it writes the row.
  void take_rounded_copy(std::int32_t group, NodeId softmax) {
    for (NodeId user : users_.of(softmax)) {
      if (graph_.node(user).op == OpKind::dropout) {
        if (take_dropped_copy(group, user)) return;
        continue;
      }
      if (!is_half_cast(user)) continue;
      if (groups_.group_of(user) < 0 && groups_.can_join(group, user)) groups_.join(group, user);
      return;
    }
  }

  bool take_dropped_copy(std::int32_t group, NodeId dropout) {
    NodeId cast = users_.sole_user(dropout);
    if (cast < 0 || !is_half_cast(cast) || graph_.node(dropout).type.dtype != graph::DType::f32)
      return false;
    std::array<NodeId, 2> copy{dropout, cast};
    if (!groups_.can_join_all(group, copy)) return false;
    for (NodeId id : copy)
      groups_.join(group, id);
    return true;
  }

  bool is_half_cast(NodeId id) const {
    const graph::Node& node = graph_.node(id);
    return node.op == OpKind::cast && graph::is_half(node.type.dtype);
  }

  // The elementwise nodes that read a softmax_grad's result, each the only reader of the one
  // before (attention's mask, scale and 16-bit cast): the kernel takes each row through them as
  // it computes the row, so only the last one's values are stored.
  void take_result_chain(std::int32_t group, NodeId gradient) {
    const graph::Shape& rows = graph_.node(gradient).type.shape;
    NodeId tail = gradient;
    while (true) {
      NodeId next = users_.sole_user(tail);
      if (next < 0 || !runs_by_rows(next, rows) || !groups_.can_join(group, next)) return;
      groups_.join(group, next);
      tail = next;
    }
  }

  // A dropout of a stored value that only the softmax_grad reads, as its upstream operand
  // (attention dropout's backward): the kernel drops each row out as it takes the gradient.
  void take_upstream_dropout(std::int32_t group, NodeId gradient) {
    NodeId upstream = graph_.node(gradient).inputs[1];
    const graph::Node& node = graph_.node(upstream);
    if (node.op != OpKind::dropout || node.type != graph_.node(gradient).type ||
        users_.sole_user(upstream) != gradient || !groups_.can_join(group, upstream))
      return;
    groups_.join(group, upstream);
  }

  // The gradient's group joins that of the softmax that is a softmax_grad's y operand,
  // where only that group and the gradient read the softmax: attention's probabilities made again
  // for the backward pass (recompute-attention), which the kernel then computes a few rows at a
  // time and takes the gradient of there, never storing them in f32. Whether it joined: not where
  // the gradient comes long after its softmax (a forward softmax's).
  bool joins_softmax(std::int32_t group, NodeId gradient) {
    NodeId softmax = graph_.node(gradient).inputs.front();
    std::int32_t joined = groups_.group_of(softmax);
    if (joined < 0 || graph_.node(softmax).op != OpKind::softmax) return false;
    for (NodeId user : users_.of(softmax)) {
      if (user != gradient && groups_.group_of(user) != joined) return false;
    }
    if (!groups_.can_merge(joined, group)) return false;
    fused_ += groups_.size(group);
    groups_.merge(joined, group);
    return true;
  }

  const graph::Graph& graph_;
  NodeUsers users_;
  FusionGroups groups_;
  std::size_t fused_ = 0;
};

}  // namespace

std::size_t fuse_softmax(Program& program) {
  SoftmaxFusion fusion(program);
  std::size_t fused = fusion.run();
  program.fusions = fusion.finish();
  return fused;
}

}  // namespace csrun::compiler
