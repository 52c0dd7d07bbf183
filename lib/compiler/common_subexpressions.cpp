#include <algorithm>
#include <cstring>
#include <unordered_map>

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

// A node of the rebuilt graph as CSE compares it; `attrs` points into that graph, whose nodes
// do not move while it grows.
struct NodeKey {
  OpKind op;
  std::vector<NodeId> inputs;
  const graph::Attributes* attrs;

  bool operator==(const NodeKey& other) const {
    return op == other.op && inputs == other.inputs && *attrs == *other.attrs;
  }
};

void combine(std::size_t& seed, std::size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}

struct NodeKeyHash {
  std::size_t operator()(const NodeKey& key) const {
    std::size_t seed = static_cast<std::size_t>(key.op);
    for (NodeId input : key.inputs)
      combine(seed, static_cast<std::size_t>(input));
    const graph::Attributes& a = *key.attrs;
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
};

}  // namespace

std::size_t eliminate_common_subexpressions(Program& program) {
  expect_unfused(program, "eliminate_common_subexpressions");
  const graph::Graph& source = program.graph;
  GraphRewriter rewriter(source);
  std::unordered_map<NodeKey, NodeId, NodeKeyHash> seen;
  seen.reserve(source.size());
  std::size_t merged = 0;
  for (std::size_t i = 0; i < source.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    const graph::Node& node = source.node(id);
    if (node.op == OpKind::input || node.op == OpKind::variable) {
      rewriter.copy(id);
      continue;
    }
    std::vector<NodeId> inputs = rewriter.mapped_inputs(id);
    NodeKey key{node.op, inputs, &node.attrs};
    if (commutative(node.op)) std::sort(key.inputs.begin(), key.inputs.end());
    auto found = seen.find(key);
    if (found != seen.end()) {
      rewriter.map(id, found->second);
      ++merged;
      continue;
    }
    NodeId copied = rewriter.copy(id, std::move(inputs));
    key.attrs = &rewriter.target().node(copied).attrs;
    seen.emplace(std::move(key), copied);
  }
  if (merged > 0) program.graph = rewriter.finish();
  return merged;
}

}  // namespace csrun::compiler
