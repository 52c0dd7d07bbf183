#include <algorithm>
#include <set>

#include "fusion_groups.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

bool fusible(const graph::Node& node) {
  return graph::op_class(node.op) == graph::OpClass::elementwise || node.op == OpKind::dropout;
}

// A sum the kernel that computes its operand can take a chunk at a time as it goes, so the
// operand need not be stored for it.
bool chain_can_sum(const graph::Graph& graph, const graph::Node& node) {
  return !node.inputs.empty() && chain_sums(node.op, graph.node(node.inputs.front()).type.dtype,
                                            node.type.dtype, graph::element_count(node.type.shape));
}

}  // namespace

std::size_t fuse_elementwise(Program& program) {
  const graph::Graph& graph = program.graph;
  FusionGroups groups(graph, program.fusions);
  // Groups that end with a sum: no node joins them after it, so that a kernel's sums come after
  // every node it computes (a sum's value is whole only once the kernel has seen every element).
  std::set<std::int32_t> summed;
  // The elementwise groups of `node`'s operands that `node` could share a kernel with.
  auto operand_groups = [&](const graph::Node& node) {
    std::vector<std::int32_t> found;
    for (NodeId operand : node.inputs) {
      std::int32_t group = groups.group_of(operand);
      if (group < 0 || groups.pattern(group) != "elementwise" || summed.contains(group) ||
          graph.node(operand).type.shape != node.type.shape ||
          std::find(found.begin(), found.end(), group) != found.end())
        continue;
      found.push_back(group);
    }
    return found;
  };
  std::size_t fused = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    const graph::Node& node = graph.node(id);
    if (groups.group_of(id) >= 0 || groups.is_static(id)) continue;
    if (chain_can_sum(graph, node)) {
      std::int32_t group = groups.group_of(node.inputs.front());
      if (group >= 0 && groups.pattern(group) == "elementwise" &&
          groups.size(group) < kMaxElementwiseFusion && groups.can_join(group, id)) {
        groups.join(group, id);
        summed.insert(group);
        fused += groups.size(group) == 2 ? 2 : 1;
      }
      continue;
    }
    if (!fusible(node)) continue;
    std::vector<std::int32_t> candidates = operand_groups(node);
    // A node combining values of two groups (AdamW's update reads both moments) makes them one
    // kernel where the invariant allows, even when the node itself cannot join it.
    for (std::size_t c = 1; c < candidates.size(); ++c) {
      std::int32_t other = candidates[c];
      if (groups.size(candidates[0]) + groups.size(other) > kMaxElementwiseFusion ||
          !groups.can_merge(candidates[0], other))
        continue;
      fused += groups.size(other);
      groups.merge(candidates[0], other);
    }
    auto joinable = std::find_if(candidates.begin(), candidates.end(), [&](std::int32_t group) {
      return groups.size(group) > 0 && groups.size(group) < kMaxElementwiseFusion &&
             groups.can_join(group, id);
    });
    if (joinable == candidates.end()) {
      groups.start(id, "elementwise");
      continue;
    }
    groups.join(*joinable, id);
    fused += groups.size(*joinable) == 2 ? 2 : 1;
  }
  program.fusions = groups.finish();
  return fused;
}

}  // namespace csrun::compiler
