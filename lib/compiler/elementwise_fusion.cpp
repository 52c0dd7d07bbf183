#include <algorithm>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "fusion_groups.hpp"
#include "node_users.hpp"
#include "passes.hpp"
#include "plan.hpp"

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

// Groups elementwise nodes into kernels, node by node in graph order.
class ElementwiseFusion {
 public:
  explicit ElementwiseFusion(Program& program)
      : program_(program),
        graph_(program.graph),
        users_(program.graph),
        groups_(program.graph, program.fusions),
        feeds_sums_(program.graph.size(), Unknown) {}

  std::size_t run() {
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      const graph::Node& node = graph_.node(id);
      if (groups_.group_of(id) >= 0 || groups_.is_static(id)) continue;
      if (chain_can_sum(graph_, node)) {
        join_as_sum(id);
      } else if (fusible(node)) {
        place(id);
      }
    }
    program_.fusions = groups_.finish();
    return fused_;
  }

 private:
  enum Known : std::int8_t { Unknown = -1, No = 0, Yes = 1 };

  void join_as_sum(NodeId id) {
    std::int32_t group = groups_.group_of(graph_.node(id).inputs.front());
    if (group < 0 || groups_.pattern(group) != "elementwise" ||
        groups_.size(group) >= kMaxElementwiseFusion || sum_count(group) >= kMaxChainSums ||
        !groups_.can_join(group, id))
      return;
    join(group, id);
    sums_[group].push_back(id);
  }

  void place(NodeId id) {
    std::vector<std::int32_t> candidates = operand_groups(id);
    // A node combining values of two groups (AdamW's update reads both moments) makes them one
    // kernel where the invariant allows, even when the node itself cannot join it.
    for (std::size_t c = 1; c < candidates.size(); ++c)
      merge(candidates[0], candidates[c]);
    auto joinable = std::find_if(candidates.begin(), candidates.end(), [&](std::int32_t group) {
      return groups_.size(group) > 0 && groups_.size(group) < kMaxElementwiseFusion &&
             groups_.can_join(group, id);
    });
    if (joinable == candidates.end()) {
      groups_.start(id, "elementwise");
      return;
    }
    join(*joinable, id);
  }

  void join(std::int32_t group, NodeId id) {
    groups_.join(group, id);
    fused_ += groups_.size(group) == 2 ? 2 : 1;
  }

  void merge(std::int32_t group, std::int32_t other) {
    if (groups_.size(group) + groups_.size(other) > kMaxElementwiseFusion ||
        !groups_.can_merge(group, other) || !sums_allow_merge(group, other))
      return;
    fused_ += groups_.size(other);
    groups_.merge(group, other);
    auto taken = sums_.extract(other);
    if (taken.empty()) return;
    std::vector<NodeId>& into = sums_[group];
    into.insert(into.end(), taken.mapped().begin(), taken.mapped().end());
  }

  // The elementwise groups of `id`'s operands that `id` could share a kernel with. A kernel has
  // its sums whole only once it has seen every element, so a node after one of its sums joins it
  // only when it reads none of them and leads to sums alone (a gradient's norm beside its finite
  // check, one pass over it): a value stored for a later kernel is better computed there.
  std::vector<std::int32_t> operand_groups(NodeId id) {
    const graph::Node& node = graph_.node(id);
    std::vector<std::int32_t> found;
    for (NodeId operand : node.inputs) {
      std::int32_t group = groups_.group_of(operand);
      if (group < 0 || groups_.pattern(group) != "elementwise" ||
          graph_.node(operand).type.shape != node.type.shape ||
          std::find(found.begin(), found.end(), group) != found.end())
        continue;
      if (sum_count(group) > 0 && (reads_sum_of(group, id) || !feeds_only_sums(id))) continue;
      found.push_back(group);
    }
    return found;
  }

  // Whether every reader of `id` is a sum a kernel takes as it goes, or an elementwise node of
  // its shape of which the same holds.
  bool feeds_only_sums(NodeId id) {
    auto& known = feeds_sums_[static_cast<std::size_t>(id)];
    if (known != Unknown) return known == Yes;
    std::span<const NodeId> readers = users_.of(id);
    bool only = !users_.escapes(id) && !readers.empty() &&
                std::all_of(readers.begin(), readers.end(), [&](NodeId reader) {
                  const graph::Node& node = graph_.node(reader);
                  if (chain_can_sum(graph_, node)) return true;
                  return fusible(node) && node.type.shape == graph_.node(id).type.shape &&
                         feeds_only_sums(reader);
                });
    known = only ? Yes : No;
    return only;
  }

  std::size_t sum_count(std::int32_t group) const {
    auto found = sums_.find(group);
    return found == sums_.end() ? 0 : found->second.size();
  }

  bool reads_sum_of(std::int32_t group, NodeId id) const {
    auto found = sums_.find(group);
    if (found == sums_.end()) return false;
    const std::vector<NodeId>& taken = found->second;
    const std::vector<NodeId>& inputs = graph_.node(id).inputs;
    return std::any_of(inputs.begin(), inputs.end(), [&](NodeId input) {
      return std::find(taken.begin(), taken.end(), input) != taken.end();
    });
  }

  // Whether two groups' members may share a kernel with their sums: none reads a sum of the
  // other, and the sums fit one kernel.
  bool sums_allow_merge(std::int32_t group, std::int32_t other) const {
    if (sum_count(group) + sum_count(other) > kMaxChainSums) return false;
    for (auto [reader, summing] : {std::pair{group, other}, std::pair{other, group}}) {
      for (NodeId member : groups_.members(reader)) {
        if (reads_sum_of(summing, member)) return false;
      }
    }
    return true;
  }

  Program& program_;
  const graph::Graph& graph_;
  NodeUsers users_;
  FusionGroups groups_;
  std::map<std::int32_t, std::vector<NodeId>> sums_;  // per group, the sums it takes
  std::vector<Known> feeds_sums_;                     // per node, feeds_only_sums once known
  std::size_t fused_ = 0;
};

}  // namespace

std::size_t fuse_elementwise(Program& program) {
  return ElementwiseFusion(program).run();
}

}  // namespace csrun::compiler
