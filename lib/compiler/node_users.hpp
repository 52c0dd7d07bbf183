#pragma once

#include <vector>

#include "graph/graph.hpp"

namespace csrun::compiler {

// Who reads each node of a graph: its users (a node using a value twice is listed twice) and
// whether the step itself returns it (an output or an update).
class NodeUsers {
 public:
  explicit NodeUsers(const graph::Graph& graph);

  const std::vector<graph::NodeId>& of(graph::NodeId id) const {
    return users_[static_cast<std::size_t>(id)];
  }
  bool escapes(graph::NodeId id) const { return escapes_[static_cast<std::size_t>(id)]; }
  // The node's only reader, when it has exactly one and does not escape; else -1.
  graph::NodeId sole_user(graph::NodeId id) const;

 private:
  std::vector<std::vector<graph::NodeId>> users_;
  std::vector<bool> escapes_;
};

}  // namespace csrun::compiler
