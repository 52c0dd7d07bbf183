#pragma once

#include <span>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "program.hpp"

namespace csrun::compiler {

// Fusions under construction. Every group keeps one invariant: each operand a member reads from
// outside the group is static (a constant or computed from constants alone, see static_values)
// or comes before the group's first member. So no group can depend on itself through another,
// and ordering kernels by their first member is a valid schedule. Static nodes join no group.
// And a group's members are all forward nodes or none: a kernel runs where its first member
// comes, so a later phase's node in a forward kernel would be computed, and stored, before the
// forward pass ends (a layer's value that --recompute_layers makes again for the backward pass).
class FusionGroups {
 public:
  FusionGroups(const graph::Graph& graph, const std::vector<Fusion>& existing);

  // The group of a node, or -1.
  std::int32_t group_of(graph::NodeId id) const { return group_of_[static_cast<std::size_t>(id)]; }
  const std::string& pattern(std::int32_t group) const { return groups_[index(group)].pattern; }
  std::size_t size(std::int32_t group) const { return groups_[index(group)].nodes.size(); }
  const std::vector<graph::NodeId>& members(std::int32_t group) const {
    return groups_[index(group)].nodes;
  }

  std::int32_t start(graph::NodeId id, std::string pattern);
  bool is_static(graph::NodeId id) const { return static_[static_cast<std::size_t>(id)]; }

  // Whether `id` may join `group` keeping the invariant: it is not static, its operands outside
  // the group are static or come before the group's first member, and so does every operand
  // outside the group of its members when `id` would become the new first member.
  bool can_join(std::int32_t group, graph::NodeId id) const;
  // The same for `ids` joining together, where no order of joining one at a time keeps it.
  bool can_join_all(std::int32_t group, std::span<const graph::NodeId> ids) const;
  void join(std::int32_t group, graph::NodeId id);
  // Whether the members of `other` may join `group`, keeping the invariant for their union.
  bool can_merge(std::int32_t group, std::int32_t other) const;
  void merge(std::int32_t group, std::int32_t other);

  // The groups of two or more nodes, members sorted, in the order of their first member.
  std::vector<Fusion> finish() const;

 private:
  struct Group {
    std::string pattern;
    std::vector<graph::NodeId> nodes;
    graph::NodeId first = 0;
  };

  static std::size_t index(std::int32_t group) { return static_cast<std::size_t>(group); }
  bool forward(graph::NodeId id) const;
  // Whether an operand from outside a group whose first member is `first` keeps the invariant.
  bool outside_operand_allowed(graph::NodeId operand, graph::NodeId first) const;

  const graph::Graph& graph_;
  std::vector<bool> static_;
  std::vector<std::int32_t> group_of_;
  std::vector<Group> groups_;
};

// Whether `id` is a reshape of a value a kernel computes, not of a leaf: a view of that value's
// buffer, ready as soon as the value is. A reshape of a variable is not: a step that borrows its
// variables from another (a split batch's micro-step) copies them into the reshape where it comes.
bool views_computed_value(const graph::Graph& graph, graph::NodeId id);

}  // namespace csrun::compiler
