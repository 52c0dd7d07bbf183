#include "fusion_groups.hpp"

#include <algorithm>

#include "static_values.hpp"

namespace csrun::compiler {

using graph::NodeId;

FusionGroups::FusionGroups(const graph::Graph& graph, const std::vector<Fusion>& existing)
    : graph_(graph), static_(static_values(graph)), group_of_(graph.size(), -1) {
  for (const Fusion& fusion : existing) {
    std::int32_t group = start(fusion.nodes.front(), fusion.pattern);
    for (std::size_t k = 1; k < fusion.nodes.size(); ++k)
      join(group, fusion.nodes[k]);
  }
}

std::int32_t FusionGroups::start(NodeId id, std::string pattern) {
  auto group = static_cast<std::int32_t>(groups_.size());
  groups_.push_back(Group{std::move(pattern), {id}, id});
  group_of_[static_cast<std::size_t>(id)] = group;
  return group;
}

bool FusionGroups::forward(NodeId id) const {
  return graph_.node(id).phase == graph::Phase::forward;
}

// A reshape of a computed value is a view of it, ready when that is (grouped-query attention's
// gradient of the probabilities, reshaped from the heads' groups after its product); not a
// reshape of a variable, which a step borrowing its variables copies where it comes.
bool FusionGroups::outside_operand_allowed(NodeId operand, NodeId first) const {
  const graph::Node& node = graph_.node(operand);
  if (node.inputs.empty() || is_static(operand) || operand < first) return true;
  return views_computed_value(graph_, operand) && outside_operand_allowed(node.inputs[0], first);
}

bool FusionGroups::can_join(std::int32_t group, NodeId id) const {
  return can_join_all(group, std::span<const NodeId>(&id, 1));
}

bool FusionGroups::can_join_all(std::int32_t group, std::span<const NodeId> ids) const {
  const Group& g = groups_[index(group)];
  NodeId first = g.first;
  for (NodeId id : ids) {
    if (group_of(id) >= 0 || is_static(id) || forward(id) != forward(g.first)) return false;
    first = std::min(first, id);
  }
  auto allowed = [&](NodeId member) {
    return std::all_of(graph_.node(member).inputs.begin(), graph_.node(member).inputs.end(),
                       [&](NodeId operand) {
                         return group_of(operand) == group ||
                                std::find(ids.begin(), ids.end(), operand) != ids.end() ||
                                outside_operand_allowed(operand, first);
                       });
  };
  if (!std::all_of(ids.begin(), ids.end(), allowed)) return false;
  // The members' operands already come before the group's first member.
  return first == g.first || std::all_of(g.nodes.begin(), g.nodes.end(), allowed);
}

void FusionGroups::join(std::int32_t group, NodeId id) {
  Group& g = groups_[index(group)];
  g.nodes.push_back(id);
  g.first = std::min(g.first, id);
  group_of_[static_cast<std::size_t>(id)] = group;
}

bool FusionGroups::can_merge(std::int32_t group, std::int32_t other) const {
  if (group == other ||
      forward(groups_[index(group)].first) != forward(groups_[index(other)].first))
    return false;
  NodeId first = std::min(groups_[index(group)].first, groups_[index(other)].first);
  for (std::int32_t side : {group, other}) {
    for (NodeId member : groups_[index(side)].nodes) {
      for (NodeId operand : graph_.node(member).inputs) {
        std::int32_t owner = group_of(operand);
        if (owner != group && owner != other && !outside_operand_allowed(operand, first))
          return false;
      }
    }
  }
  return true;
}

void FusionGroups::merge(std::int32_t group, std::int32_t other) {
  Group& from = groups_[index(other)];
  for (NodeId id : from.nodes)
    join(group, id);
  from.nodes.clear();
}

std::vector<Fusion> FusionGroups::finish() const {
  std::vector<const Group*> kept;
  for (const Group& group : groups_) {
    if (group.nodes.size() >= 2) kept.push_back(&group);
  }
  std::sort(kept.begin(), kept.end(),
            [](const Group* a, const Group* b) { return a->first < b->first; });
  std::vector<Fusion> fusions;
  fusions.reserve(kept.size());
  for (const Group* group : kept) {
    Fusion fusion{group->pattern, group->nodes};
    std::sort(fusion.nodes.begin(), fusion.nodes.end());
    fusions.push_back(std::move(fusion));
  }
  return fusions;
}

bool views_computed_value(const graph::Graph& graph, NodeId id) {
  const graph::Node& node = graph.node(id);
  return node.op == graph::OpKind::reshape &&
         graph::op_class(graph.node(node.inputs[0]).op) != graph::OpClass::leaf;
}

}  // namespace csrun::compiler
