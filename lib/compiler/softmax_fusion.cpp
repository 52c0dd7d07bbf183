#include "fusion_groups.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

// The first cast of an f32 softmax's result to a 16-bit type (the operand of attention's product
// with the values), or -1.
NodeId rounded_copy(const graph::Graph& graph, const NodeUsers& users, NodeId softmax) {
  for (NodeId user : users.of(softmax)) {
    const graph::Node& node = graph.node(user);
    if (node.op == OpKind::cast && graph::is_half(node.type.dtype)) return user;
  }
  return -1;
}

}  // namespace

std::size_t fuse_softmax(Program& program) {
  const graph::Graph& graph = program.graph;
  NodeUsers users(graph);
  FusionGroups groups(graph, program.fusions);
  std::size_t fused = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    const graph::Node& node = graph.node(id);
    if (node.op != OpKind::softmax || node.type.dtype != graph::DType::f32 ||
        groups.group_of(id) >= 0 || groups.is_static(id))
      continue;
    NodeId cast = rounded_copy(graph, users, id);
    if (cast < 0 || groups.group_of(cast) >= 0) continue;
    std::int32_t group = groups.start(id, "softmax");
    if (!groups.can_join(group, cast)) continue;
    groups.join(group, cast);
    fused += 2;
  }
  program.fusions = groups.finish();
  return fused;
}

}  // namespace csrun::compiler
