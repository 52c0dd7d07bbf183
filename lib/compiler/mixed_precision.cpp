#include <unordered_map>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::DType;
using graph::NodeId;
using graph::OpKind;

class PrecisionLowering {
 public:
  PrecisionLowering(const graph::Graph& source, const PrecisionPolicy& policy)
      : rewriter_(source), users_(source), policy_(policy) {}

  std::size_t run() {
    const graph::Graph& source = rewriter_.source();
    for (std::size_t i = 0; i < source.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      const graph::Node& node = source.node(id);
      if (node.op == OpKind::matmul && node.type.dtype == DType::f32) {
        lower_matmul(id);
      } else if (node.op == OpKind::softmax && policy_.level >= 2 &&
                 node.type.dtype == DType::f32) {
        lower_softmax(id);
      } else if (is_cross_entropy(node.op) && node.type.dtype == DType::f32) {
        lower_cross_entropy(id);
      } else if (node.op == OpKind::windows_sum && node.type.dtype == DType::f32) {
        lower_windows_sum(id);
      } else {
        rewriter_.copy(id);
      }
    }
    return casts_;
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  const graph::Node& built(NodeId id) const { return rewriter_.target().node(id); }

  NodeId cast(NodeId value, DType dtype, NodeId origin) {
    graph::Attributes attrs;
    attrs.dtype = dtype;
    ++casts_;
    return rewriter_.add(OpKind::cast, {value}, std::move(attrs), origin);
  }

  // The 16-bit form of a new node's value, made once per value. A value that is itself the f32
  // widening of a 16-bit value is that value: widening then narrowing again is exact.
  NodeId to_half(NodeId value, NodeId origin) {
    const graph::Node& node = built(value);
    if (node.type.dtype == policy_.half) return value;
    if (node.op == OpKind::cast && built(node.inputs[0]).type.dtype == policy_.half)
      return node.inputs[0];
    auto found = half_of_.find(value);
    if (found != half_of_.end()) return found->second;
    NodeId half =
        taken_in_half(node) ? half_layout(node, origin) : cast(value, policy_.half, origin);
    half_of_.emplace(value, half);
    return half;
  }

  // Layout ops whose 16-bit form is the op over their operand's 16-bit form (exactly: a cast
  // moves no value, and a pad's zeros are zeros in any type). A transpose stays next to the
  // product, which reads it through its layout (host lowering), and a transposed weight is not
  // copied every step; a convolution's windows (with the pad beneath them and the reshape a
  // product reads them through) are taken of the 16-bit input, half the bytes copied, and never
  // exist in f32; a slice (attention's blocks of keys and values over a long sequence) is taken of
  // its operand's 16-bit form, converted once for every block. A reshape that keeps the rows of a
  // value computed row by row (a softmax, its dropout, an elementwise node) is taken of its 16-bit
  // form too: the cast then joins the kernel that computes the value, which writes the 16-bit rows
  // as it computes them (grouped-query attention's probabilities, reshaped from heads to their
  // groups for the product with the values, and their gradient). Other reshapes stay below their
  // cast, which the product's kernel takes.
  bool taken_in_half(const graph::Node& node) const {
    switch (node.op) {
      case OpKind::transpose:
      case OpKind::windows:
      case OpKind::pad:
      case OpKind::slice:
        return true;
      case OpKind::reshape:
        return built(node.inputs[0]).op == OpKind::windows || reshapes_rows_computed(node);
      default:
        return false;
    }
  }

  bool reshapes_rows_computed(const graph::Node& reshape) const {
    const graph::Node& operand = built(reshape.inputs[0]);
    bool by_rows = operand.op == OpKind::softmax || operand.op == OpKind::dropout ||
                   graph::op_class(operand.op) == graph::OpClass::elementwise;
    const graph::Shape& from = operand.type.shape;
    const graph::Shape& to = reshape.type.shape;
    return by_rows && !from.empty() && !to.empty() && from.back() == to.back();
  }

  NodeId half_layout(const graph::Node& layout, NodeId origin) {
    // Copies first: adding nodes may move `layout`.
    OpKind op = layout.op;
    graph::Attributes attrs = layout.attrs;
    NodeId operand = layout.inputs[0];
    return rewriter_.add(op, {to_half(operand, origin)}, std::move(attrs), origin);
  }

  void lower_matmul(NodeId id) {
    std::vector<NodeId> in = rewriter_.mapped_inputs(id);
    // Batched products of two activations are attention's scores and context (and their
    // gradients): level 1 keeps them f32.
    bool batched = built(in[0]).type.rank() > 2 && built(in[1]).type.rank() > 2;
    bool half_result = policy_.level >= 2 || (policy_.level == 1 && !batched);
    graph::Attributes attrs;
    attrs.dtype = half_result ? policy_.half : DType::f32;
    NodeId product = rewriter_.add(OpKind::matmul, {to_half(in[0], id), to_half(in[1], id)},
                                   std::move(attrs), id);
    rewriter_.map(id, half_result ? cast(product, DType::f32, id) : product);
  }

  void lower_softmax(NodeId id) {
    NodeId x = to_half(rewriter_.mapped_inputs(id)[0], id);
    NodeId y = rewriter_.add(OpKind::softmax, {x}, rewriter_.source().node(id).attrs, id);
    rewriter_.map(id, cast(y, DType::f32, id));
  }

  static bool is_cross_entropy(OpKind op) {
    return op == OpKind::softmax_cross_entropy || op == OpKind::softmax_cross_entropy_grad;
  }

  // Every reader of source node `id` takes it in 16 bits: products (lower_matmul), and
  // transposes that only products read.
  bool read_in_half_only(NodeId id) const {
    if (users_.escapes(id)) return false;
    for (NodeId user : users_.of(id)) {
      const graph::Node& reader = rewriter_.source().node(user);
      bool product = reader.op == OpKind::matmul && reader.type.dtype == DType::f32;
      if (!product && !(reader.op == OpKind::transpose && read_in_half_only(user))) return false;
    }
    return true;
  }

  // The loss and its gradient read a product's 16-bit logits as they are (the kernel widens each
  // row as it goes, exactly as the cast did), so no f32 copy of the logits is made; a gradient
  // that only products read is rounded to 16 bits by the kernel, once, as the cast to their
  // operand would have.
  void lower_cross_entropy(NodeId id) {
    std::vector<NodeId> in = rewriter_.mapped_inputs(id);
    const graph::Node& logits = built(in[0]);
    if (logits.op != OpKind::cast || built(logits.inputs[0]).type.dtype != policy_.half) {
      rewriter_.copy(id, std::move(in));
      return;
    }
    in[0] = logits.inputs[0];
    graph::Attributes attrs = rewriter_.source().node(id).attrs;
    bool gradient = rewriter_.source().node(id).op == OpKind::softmax_cross_entropy_grad;
    if (gradient && read_in_half_only(id)) attrs.dtype = policy_.half;
    rewriter_.map(
        id, rewriter_.add(rewriter_.source().node(id).op, std::move(in), std::move(attrs), id));
  }

  // A convolution's input gradient sums the 16-bit product's windows (reshaped from it) as they
  // are: the kernel widens each value as it adds it in f32, exactly as the cast did, so no f32
  // copy of the windows' gradient, as many times the input's size as the kernel has elements, is
  // made.
  void lower_windows_sum(NodeId id) {
    std::vector<NodeId> in = rewriter_.mapped_inputs(id);
    const graph::Node& reshape = built(in[0]);
    NodeId widened = reshape.op == OpKind::reshape ? reshape.inputs[0] : in[0];
    const graph::Node& cast = built(widened);
    if (cast.op != OpKind::cast || built(cast.inputs[0]).type.dtype != policy_.half) {
      rewriter_.copy(id, std::move(in));
      return;
    }
    NodeId half = cast.inputs[0];
    if (widened != in[0]) {
      graph::Attributes shape = reshape.attrs;
      half = rewriter_.add(OpKind::reshape, {half}, std::move(shape), id);
    }
    rewriter_.copy(id, {half});
  }

  GraphRewriter rewriter_;
  NodeUsers users_;
  PrecisionPolicy policy_;
  std::unordered_map<NodeId, NodeId> half_of_;
  std::size_t casts_ = 0;
};

}  // namespace

std::size_t lower_precision(Program& program, const PrecisionPolicy& policy) {
  expect_unfused(program, "lower_precision");
  if (!policy.mixed) return 0;
  PrecisionLowering lowering(program.graph, policy);
  std::size_t casts = lowering.run();
  if (casts > 0) program.graph = lowering.finish();
  return casts;
}

}  // namespace csrun::compiler
