#include <algorithm>
#include <cmath>
#include <optional>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::Attributes;
using graph::NodeId;
using graph::OpKind;

class Simplifier {
 public:
  explicit Simplifier(const graph::Graph& source) : rewriter_(source), users_(source) {}

  std::size_t run() {
    const graph::Graph& source = rewriter_.source();
    for (std::size_t i = 0; i < source.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (rewriter_.copy_leaf(id)) continue;
      if (std::optional<NodeId> simpler = simplify(id)) {
        rewriter_.map(id, *simpler);
        ++changed_;
      } else {
        rewriter_.copy(id);
      }
    }
    return changed_;
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  const graph::Node& built(NodeId id) const { return rewriter_.target().node(id); }

  // The value of a constant that holds one value everywhere.
  std::optional<double> splat(NodeId id) const {
    const graph::Node& node = built(id);
    if (node.op != OpKind::constant || node.attrs.values.size() != 1) return std::nullopt;
    return node.attrs.values.front();
  }

  bool is_splat(NodeId id, double value) const {
    std::optional<double> held = splat(id);
    return held && *held == value;
  }

  // `x` can stand for node `id` when it has the node's type (no broadcasting dropped).
  std::optional<NodeId> same_as(NodeId id, NodeId x) const {
    if (built(x).type == rewriter_.source().node(id).type) return x;
    return std::nullopt;
  }

  NodeId add(OpKind op, std::vector<NodeId> inputs, Attributes attrs, NodeId origin) {
    return rewriter_.add(op, std::move(inputs), std::move(attrs), origin);
  }

  std::optional<NodeId> simplify(NodeId id) {
    const graph::Node& node = rewriter_.source().node(id);
    std::vector<NodeId> in = rewriter_.mapped_inputs(id);
    switch (node.op) {
      case OpKind::add:
        if (is_splat(in[1], 0.0)) return same_as(id, in[0]);
        if (is_splat(in[0], 0.0)) return same_as(id, in[1]);
        return std::nullopt;
      case OpKind::sub:
        if (is_splat(in[1], 0.0)) return same_as(id, in[0]);
        return std::nullopt;
      case OpKind::mul:
        if (is_splat(in[1], 1.0)) return same_as(id, in[0]);
        if (is_splat(in[0], 1.0)) return same_as(id, in[1]);
        return std::nullopt;
      case OpKind::div:
        return simplify_division(id, in);
      case OpKind::pow:
        return simplify_power(id, in);
      case OpKind::neg:
      case OpKind::logical_not:
        if (built(in[0]).op == node.op) return same_as(id, built(in[0]).inputs[0]);
        return std::nullopt;
      case OpKind::cast:
        if (built(in[0]).type.dtype == node.attrs.dtype) return in[0];
        return std::nullopt;
      case OpKind::reshape:
        return simplify_reshape(id, in[0]);
      case OpKind::transpose:
        return simplify_transpose(id, in[0], node.attrs.perm);
      case OpKind::broadcast_to:
        if (built(in[0]).type.shape == node.attrs.shape) return in[0];
        return std::nullopt;
      case OpKind::slice:
      case OpKind::pad:
        if (built(in[0]).type == node.type) return in[0];
        return std::nullopt;
      case OpKind::windows:
      case OpKind::windows_sum:
        return simplify_windows(id, in[0]);
      case OpKind::where:
        if (in[1] == in[2]) return same_as(id, in[1]);
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }

  // x / 2^k = x * 2^-k exactly; a multiplication is cheaper than a division on the wafer.
  std::optional<NodeId> simplify_division(NodeId id, const std::vector<NodeId>& in) {
    std::optional<double> divisor = splat(in[1]);
    if (!divisor || !graph::is_floating(built(in[0]).type.dtype)) return std::nullopt;
    if (*divisor == 1.0) return same_as(id, in[0]);
    int exponent = 0;
    if (std::frexp(*divisor, &exponent) != 0.5 || std::abs(exponent) > 100) return std::nullopt;
    Attributes reciprocal = built(in[1]).attrs;
    reciprocal.values = {1.0 / *divisor};
    NodeId factor = add(OpKind::constant, {}, std::move(reciprocal), id);
    return add(OpKind::mul, {in[0], factor}, {}, id);
  }

  std::optional<NodeId> simplify_power(NodeId id, const std::vector<NodeId>& in) {
    std::optional<double> exponent = splat(in[1]);
    if (!exponent || built(in[0]).type != rewriter_.source().node(id).type) return std::nullopt;
    if (*exponent == 1.0) return in[0];
    if (*exponent == 2.0) return add(OpKind::mul, {in[0], in[0]}, {}, id);
    if (*exponent == 0.5) return add(OpKind::sqrt, {in[0]}, {}, id);
    if (*exponent == -0.5) return add(OpKind::rsqrt, {in[0]}, {}, id);
    return std::nullopt;
  }

  std::optional<NodeId> simplify_reshape(NodeId id, NodeId x) {
    const graph::Shape& shape = rewriter_.source().node(id).attrs.shape;
    if (built(x).type.shape == shape) return x;
    if (built(x).op != OpKind::reshape) return std::nullopt;
    Attributes attrs;
    attrs.shape = shape;
    return add(OpKind::reshape, {built(x).inputs[0]}, std::move(attrs), id);
  }

  // Windows of one element (a 1x1 convolution's) copy each element once, and their sums add one
  // term each: a reshape, when the type stays.
  std::optional<NodeId> simplify_windows(NodeId id, NodeId x) {
    const graph::Node& node = rewriter_.source().node(id);
    if (graph::element_count(node.attrs.shape) != 1 || node.type.dtype != built(x).type.dtype)
      return std::nullopt;
    Attributes attrs;
    attrs.shape = node.type.shape;
    return add(OpKind::reshape, {x}, std::move(attrs), id);
  }

  static bool is_identity(const std::vector<std::int64_t>& perm) {
    for (std::size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] != static_cast<std::int64_t>(i)) return false;
    }
    return true;
  }

  // transpose(x, perm) built directly, folding into a transpose beneath it.
  NodeId transposed(NodeId x, std::vector<std::int64_t> perm, NodeId origin) {
    if (built(x).op == OpKind::transpose) {
      const std::vector<std::int64_t>& inner = built(x).attrs.perm;
      for (std::int64_t& axis : perm)
        axis = inner[static_cast<std::size_t>(axis)];
      x = built(x).inputs[0];
    }
    if (is_identity(perm)) return x;
    Attributes attrs;
    attrs.perm = std::move(perm);
    return add(OpKind::transpose, {x}, std::move(attrs), origin);
  }

  // A swap of the last two axes that only products read (or transposes, which fold into it),
  // over a transpose that keeps its source's last axis last (attention's keys split into heads):
  // the products read the swap as an operand layout and the transpose beneath copies whole rows,
  // where the two made one would gather its rows an element at a time.
  bool stays_a_product_layout(NodeId id, NodeId x, const std::vector<std::int64_t>& perm) const {
    const std::vector<std::int64_t>& inner = built(x).attrs.perm;
    if (!graph::swaps_last_two_axes(perm) || inner.back() != std::ssize(inner) - 1) return false;
    std::span<const NodeId> readers = users_.of(id);
    return !readers.empty() && !users_.escapes(id) &&
           std::all_of(readers.begin(), readers.end(), [&](NodeId reader) {
             OpKind op = rewriter_.source().node(reader).op;
             return op == OpKind::matmul || op == OpKind::transpose;
           });
  }

  std::optional<NodeId> simplify_transpose(NodeId id, NodeId x,
                                           const std::vector<std::int64_t>& perm) {
    if (is_identity(perm)) return x;
    if (built(x).op == OpKind::transpose) {
      if (stays_a_product_layout(id, x, perm)) return std::nullopt;
      return transposed(x, perm, id);
    }
    // (A B)^T = B^T A^T: the transposes then fuse into the product as operand layouts. Only
    // when the product has no other reader, which would still need it untransposed.
    NodeId product = rewriter_.source().node(id).inputs[0];
    if (built(x).op != OpKind::matmul || !graph::swaps_last_two_axes(perm) ||
        users_.sole_user(product) != id)
      return std::nullopt;
    const graph::Node& matmul = built(x);
    if (built(matmul.inputs[0]).type.rank() != built(matmul.inputs[1]).type.rank())
      return std::nullopt;  // broadcast batch dimensions: leave them alone
    NodeId b_t = transposed(matmul.inputs[1], perm, id);
    NodeId a_t = transposed(matmul.inputs[0], perm, id);
    return add(OpKind::matmul, {b_t, a_t}, matmul.attrs, id);
  }

  GraphRewriter rewriter_;
  NodeUsers users_;
  std::size_t changed_ = 0;
};

}  // namespace

std::size_t simplify_algebra(Program& program) {
  expect_unfused(program, "simplify_algebra");
  Simplifier simplifier(program.graph);
  std::size_t changed = simplifier.run();
  if (changed > 0) program.graph = simplifier.finish();
  return changed;
}

}  // namespace csrun::compiler
