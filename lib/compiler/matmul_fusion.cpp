#include <algorithm>
#include <array>

#include "fusion_groups.hpp"
#include "kernel_library.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

bool is_activation(OpKind op) {
  return op == OpKind::relu || op == OpKind::gelu || op == OpKind::tanh || op == OpKind::sigmoid;
}

// A bias: one value per output column, broadcast over the rows.
bool is_bias_for(const graph::TensorType& bias, const graph::TensorType& rows) {
  if (bias.rank() == 0 || bias.rank() > rows.rank() || bias.shape.back() != rows.shape.back())
    return false;
  for (std::size_t i = 0; i + 1 < bias.shape.size(); ++i) {
    if (bias.shape[i] != 1) return false;
  }
  return true;
}

class MatmulFusion {
 public:
  explicit MatmulFusion(Program& program)
      : graph_(program.graph), users_(program.graph), groups_(program.graph, program.fusions) {}

  std::size_t run() {
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (graph_.node(id).op != OpKind::matmul || groups_.group_of(id) >= 0 ||
          groups_.is_static(id))
        continue;
      std::int32_t group = groups_.start(id, "matmul");
      absorb_windows(group, id);
      absorb_operands(group, id);
      if (!absorb_windows_sum(group, id)) extend_epilogue(group, id);
      if (groups_.size(group) > 1) fused_ += groups_.size(group);
    }
    return fused_;
  }

  std::vector<Fusion> finish() const { return groups_.finish(); }

 private:
  // A convolution's windows the kernel forms a tile at a time as it multiplies, never stored: a
  // product's operand b a reshape of windows into its matrices (one per product of the matmul,
  // each row a window offset of a lead index, each column an output position), or that
  // transposed, of the type of its operand a; each of them read by the next alone.
  void absorb_windows(std::int32_t group, NodeId matmul) {
    const graph::Node& product = graph_.node(matmul);
    std::vector<NodeId> chain;
    NodeId operand = product.inputs[1];
    const graph::Node* node = &graph_.node(operand);
    if (node->op == OpKind::transpose && graph::swaps_last_two_axes(node->attrs.perm)) {
      chain.push_back(operand);
      operand = node->inputs[0];
      node = &graph_.node(operand);
    }
    if (node->op != OpKind::reshape || graph_.node(node->inputs[0]).op != OpKind::windows) return;
    chain.push_back(operand);
    chain.push_back(node->inputs[0]);
    if (!forms_windows(product, *node, graph_.node(chain.back()))) return;
    NodeId reader = matmul;
    for (NodeId id : chain) {
      if (users_.sole_user(id) != reader) return;
      reader = id;
    }
    if (!groups_.can_join_all(group, chain)) return;
    for (NodeId id : chain)
      groups_.join(group, id);
  }

  // Whether `reshape` views `windows` as the matrices of `product`'s operand b: values of the
  // type of operand a, the product's batch axes, each matrix column an output position.
  bool forms_windows(const graph::Node& product, const graph::Node& reshape,
                     const graph::Node& windows) const {
    const graph::Shape& matrices = reshape.type.shape;
    const graph::Shape& result = product.type.shape;
    const graph::Shape& positions = windows.type.shape;
    auto axes = static_cast<std::ptrdiff_t>(windows.attrs.shape.size());
    bool typed = windows.type.dtype == graph_.node(product.inputs[0]).type.dtype &&
                 graph::is_floating(windows.type.dtype);
    return typed && matrices.size() == result.size() && matrices.size() >= 2 &&
           std::equal(matrices.begin(), matrices.end() - 2, result.begin()) &&
           std::ssize(positions) > axes &&
           graph::element_count(graph::Shape(positions.end() - axes, positions.end())) ==
               matrices.back();
  }

  // A convolution's input gradient the kernel sums onto the padded input as it computes the
  // windows' gradient a tile of columns at a time, never stored (a 16-bit one: convolve-gradients
  // convolves f32 ones): the product read alone by a reshape into windows, read alone by an f32
  // windows_sum that adds each value's terms in window order.
  bool absorb_windows_sum(std::int32_t group, NodeId matmul) {
    NodeId reshape = users_.sole_user(matmul);
    if (reshape < 0 || graph_.node(reshape).op != OpKind::reshape) return false;
    NodeId sum = users_.sole_user(reshape);
    if (sum < 0 || graph_.node(sum).op != OpKind::windows_sum) return false;
    std::array<NodeId, 2> chain = {reshape, sum};
    if (!sums_windows(graph_.node(matmul), graph_.node(reshape), graph_.node(sum)) ||
        !groups_.can_join_all(group, chain))
      return false;
    for (NodeId id : chain)
      groups_.join(group, id);
    return true;
  }

  // Whether `reshape` views `product`, one matrix times each of operand b's, as the windows `sum`
  // adds up (each matrix of the product [..., C * K, P] the windows [..., C, K, O1, ..., Od] of its
  // batch index), and whether adding a tile of columns after the tile after it adds each value's
  // terms in window order: so when every output extent but the first is at least the window's (a
  // later window offset is then an earlier output position).
  bool sums_windows(const graph::Node& product, const graph::Node& reshape,
                    const graph::Node& sum) const {
    const graph::Shape& matrices = product.type.shape;
    const graph::Shape& windows = reshape.type.shape;
    const graph::Shape& extents = sum.attrs.shape;
    std::size_t axes = extents.size();
    bool one_matrix = graph_.node(product.inputs[0]).type.rank() == 2 &&
                      graph_.node(product.inputs[1]).type.rank() == std::ssize(matrices);
    if (sum.type.dtype != graph::DType::f32 || !graph::is_floating(product.type.dtype) ||
        !one_matrix || matrices.size() < 2 || windows.size() != matrices.size() + axes)
      return false;
    std::size_t batch = matrices.size() - 2;
    std::int64_t count = graph::element_count(extents);
    auto outputs = windows.begin() + static_cast<std::ptrdiff_t>(batch + 2);
    bool shaped =
        std::equal(matrices.begin(), matrices.begin() + static_cast<std::ptrdiff_t>(batch),
                   windows.begin()) &&
        windows[batch + 1] == count && matrices[batch] == windows[batch] * count &&
        matrices.back() == graph::element_count(graph::Shape(outputs, windows.end()));
    for (std::size_t a = 1; a < axes && shaped; ++a)
      shaped = outputs[static_cast<std::ptrdiff_t>(a)] >= extents[a];
    return shaped;
  }

  // Operand layout and conversion the kernel does as it loads: cast(W), W^T, cast(W)^T, ...
  // Candidates join latest first, so the group's first member moves back one node at a time.
  void absorb_operands(std::int32_t group, NodeId matmul) {
    std::vector<std::pair<NodeId, int>> candidates;  // node, depth below the matmul
    for (NodeId operand : graph_.node(matmul).inputs)
      candidates.emplace_back(operand, 1);
    while (!candidates.empty()) {
      auto latest = std::max_element(candidates.begin(), candidates.end());
      auto [operand, depth] = *latest;
      candidates.erase(latest);
      const graph::Node& node = graph_.node(operand);
      bool loadable =
          (node.op == OpKind::transpose && graph::swaps_last_two_axes(node.attrs.perm)) ||
          (node.op == OpKind::cast && !rounds_elementwise_result(operand));
      if (!loadable || !groups_.can_join(group, operand)) continue;
      groups_.join(group, operand);
      if (depth < 2) candidates.emplace_back(node.inputs[0], depth + 1);
    }
  }

  // A cast to 16 bits of a value an elementwise kernel will compute (softmax's gradient masked
  // and scaled) is left to that kernel: it stores the 16-bit values alone, where converting them
  // as the product loads them would have it store the f32 values for one more pass to read. A
  // value another product's epilogue computes (its activation) keeps its cast here.
  bool rounds_elementwise_result(NodeId cast) const {
    const graph::Node& node = graph_.node(cast);
    NodeId value = node.inputs[0];
    const graph::Node& source = graph_.node(value);
    return graph::is_half(node.type.dtype) && source.type.shape == node.type.shape &&
           graph::op_class(source.op) == graph::OpClass::elementwise &&
           groups_.group_of(value) < 0 && !groups_.is_static(value);
  }

  // What the kernel applies to the product before storing it: at most one each of a bias add, a
  // reshape keeping the columns, a cast, and an activation, which ends the epilogue.
  void extend_epilogue(std::int32_t group, NodeId matmul) {
    NodeId tail = matmul;
    std::vector<OpKind> taken;
    auto untaken = [&](OpKind op) {
      return std::find(taken.begin(), taken.end(), op) == taken.end();
    };
    while (true) {
      NodeId next = -1;
      for (NodeId user : users_.of(tail)) {
        if (fits_epilogue(tail, user) && untaken(graph_.node(user).op) &&
            groups_.can_join(group, user)) {
          next = user;
          break;
        }
      }
      if (next < 0) return;
      groups_.join(group, next);
      OpKind op = graph_.node(next).op;
      if (is_activation(op)) return;
      taken.push_back(op);
      tail = next;
    }
  }

  bool fits_epilogue(NodeId tail, NodeId user) const {
    const graph::Node& node = graph_.node(user);
    const graph::TensorType& value = graph_.node(tail).type;
    switch (node.op) {
      case OpKind::add: {
        if (node.inputs.size() != 2 || node.type.shape != value.shape) return false;
        NodeId other = node.inputs[0] == tail ? node.inputs[1] : node.inputs[0];
        return other != tail && is_bias_for(graph_.node(other).type, value);
      }
      case OpKind::reshape:
        // Within the rank the matmul kernel stores (a convolution's view of its product as
        // [N, C, D, H, W] is a separate view kernel).
        return !node.type.shape.empty() && !value.shape.empty() &&
               node.type.shape.back() == value.shape.back() &&
               node.type.rank() <= kernel_spec("matmul").max_rank;
      case OpKind::cast:
        return graph::is_floating(node.type.dtype) && !widened_as_read(user);
      default:
        return is_activation(node.op);
    }
  }

  // A 16-bit product widened for elementwise readers alone (a weight's gradient for its update)
  // is stored as it is: the kernel reading it widens it as it loads, so the f32 copy is never
  // stored. A widening the epilogue goes on from (a bias, an activation) stays in it.
  bool widened_as_read(NodeId cast) const {
    const graph::Node& node = graph_.node(cast);
    bool widens = node.type.dtype == graph::DType::f32 &&
                  graph_.node(node.inputs[0]).type.dtype != graph::DType::f32;
    std::span<const NodeId> readers = users_.of(cast);
    if (!widens || readers.empty()) return false;
    return std::all_of(readers.begin(), readers.end(), [&](NodeId reader) {
      return graph::op_class(graph_.node(reader).op) == graph::OpClass::elementwise &&
             !fits_epilogue(cast, reader);
    });
  }

  const graph::Graph& graph_;
  NodeUsers users_;
  FusionGroups groups_;
  std::size_t fused_ = 0;
};

}  // namespace

std::size_t fuse_matmuls(Program& program) {
  MatmulFusion fusion(program);
  std::size_t fused = fusion.run();
  program.fusions = fusion.finish();
  return fused;
}

}  // namespace csrun::compiler
