#pragma once

#include <span>
#include <vector>

#include "graph/graph.hpp"

namespace csrun::compiler {

// Who reads each node of a graph: its users (a node using a value twice is listed twice) and
// whether the step itself returns it (an output or an update).
class NodeUsers {
 public:
  explicit NodeUsers(const graph::Graph& graph);

  std::span<const graph::NodeId> of(graph::NodeId id) const {
    auto node = static_cast<std::size_t>(id);
    return {users_.data() + first_[node], users_.data() + first_[node + 1]};
  }
  bool escapes(graph::NodeId id) const { return escapes_[static_cast<std::size_t>(id)]; }
  // The node's only reader, when it has exactly one and does not escape; else -1.
  graph::NodeId sole_user(graph::NodeId id) const;

 private:
  std::vector<std::size_t> first_;    // per node, where its users start in users_ (one past: end)
  std::vector<graph::NodeId> users_;  // every node's users, node after node
  std::vector<bool> escapes_;
};

// Whether a node of a later phase than the forward pass (the backward pass, the update) reads
// `id`: a forward value stored until then.
bool read_after_forward(const graph::Graph& graph, const NodeUsers& users, graph::NodeId id);

}  // namespace csrun::compiler
