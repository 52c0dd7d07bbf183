#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

#include "graph_rewriter.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

bool commutative(OpKind op) {
  switch (op) {
    case OpKind::add:
    case OpKind::mul:
    case OpKind::maximum:
    case OpKind::minimum:
    case OpKind::equal:
    case OpKind::not_equal:
    case OpKind::logical_and:
    case OpKind::logical_or:
      return true;
    default:
      return false;
  }
}

bool same_operands(OpKind op, std::span<const NodeId> a, std::span<const NodeId> b) {
  if (a.size() != b.size()) return false;
  if (std::equal(a.begin(), a.end(), b.begin())) return true;
  return commutative(op) && a.size() == 2 && a[0] == b[1] && a[1] == b[0];
}

void combine(std::size_t& seed, std::size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}

// A hash of what a node computes; commutative operands in either order hash alike.
std::size_t node_hash(OpKind op, std::span<const NodeId> inputs, const graph::Attributes& a) {
  std::size_t seed = static_cast<std::size_t>(op);
  if (commutative(op) && inputs.size() == 2) {
    combine(seed, static_cast<std::size_t>(std::min(inputs[0], inputs[1])));
    combine(seed, static_cast<std::size_t>(std::max(inputs[0], inputs[1])));
  } else {
    for (NodeId input : inputs)
      combine(seed, static_cast<std::size_t>(input));
  }
  combine(seed, static_cast<std::size_t>(a.dtype));
  combine(seed, static_cast<std::size_t>(a.axis));
  combine(seed, a.shape.size() + 31 * a.values.size());
  if (!a.values.empty()) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, a.values.data(), sizeof bits);
    combine(seed, bits);
  }
  return seed;
}

// The nodes of the rebuilt graph by what they compute: open addressing over node ids, compared
// against the graph itself, so looking a node up copies nothing.
class NodeTable {
 public:
  NodeTable(const graph::Graph& graph, std::size_t nodes)
      : graph_(graph), slots_(std::bit_ceil(2 * nodes + 2), -1), hashes_(slots_.size(), 0) {}

  NodeId find(OpKind op, std::span<const NodeId> inputs, const graph::Attributes& attrs,
              std::size_t hash) const {
    for (std::size_t slot = hash & mask();; slot = (slot + 1) & mask()) {
      NodeId candidate = slots_[slot];
      if (candidate < 0) return -1;
      if (hashes_[slot] != hash) continue;
      const graph::Node& node = graph_.node(candidate);
      if (node.op == op && same_operands(op, node.inputs, inputs) && node.attrs == attrs)
        return candidate;
    }
  }

  void insert(NodeId node, std::size_t hash) {
    std::size_t slot = hash & mask();
    while (slots_[slot] >= 0)
      slot = (slot + 1) & mask();
    slots_[slot] = node;
    hashes_[slot] = hash;
  }

 private:
  std::size_t mask() const { return slots_.size() - 1; }

  const graph::Graph& graph_;
  std::vector<NodeId> slots_;
  std::vector<std::size_t> hashes_;
};

}  // namespace

std::size_t eliminate_common_subexpressions(Program& program) {
  expect_unfused(program, "eliminate_common_subexpressions");
  const graph::Graph& source = program.graph;
  GraphRewriter rewriter(source);
  NodeTable seen(rewriter.target(), source.size());
  std::size_t merged = 0;
  for (std::size_t i = 0; i < source.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    if (rewriter.copy_leaf(id)) continue;
    const graph::Node& node = source.node(id);
    std::vector<NodeId> inputs = rewriter.mapped_inputs(id);
    std::size_t hash = node_hash(node.op, inputs, node.attrs);
    NodeId same = seen.find(node.op, inputs, node.attrs, hash);
    if (same >= 0) {
      rewriter.map(id, same);
      ++merged;
      continue;
    }
    seen.insert(rewriter.copy(id, std::move(inputs)), hash);
  }
  if (merged > 0) program.graph = rewriter.finish();
  return merged;
}

}  // namespace csrun::compiler
