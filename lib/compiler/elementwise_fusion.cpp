#include "fusion_groups.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

bool fusible(const graph::Node& node) {
  return graph::op_class(node.op) == graph::OpClass::elementwise || node.op == OpKind::dropout;
}

}  // namespace

std::size_t fuse_elementwise(Program& program) {
  const graph::Graph& graph = program.graph;
  FusionGroups groups(graph, program.fusions);
  std::size_t fused = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    const graph::Node& node = graph.node(id);
    if (!fusible(node) || groups.group_of(id) >= 0 || groups.is_static(id)) continue;
    std::int32_t joined = -1;
    for (NodeId operand : node.inputs) {
      std::int32_t group = groups.group_of(operand);
      if (group < 0 || groups.pattern(group) != "elementwise" ||
          groups.size(group) >= kMaxElementwiseFusion ||
          graph.node(operand).type.shape != node.type.shape || !groups.can_join(group, id)) {
        continue;
      }
      joined = group;
      break;
    }
    if (joined >= 0) {
      groups.join(joined, id);
      fused += groups.size(joined) == 2 ? 2 : 1;
    } else {
      groups.start(id, "elementwise");
    }
  }
  program.fusions = groups.finish();
  return fused;
}

}  // namespace csrun::compiler
