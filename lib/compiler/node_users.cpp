#include "node_users.hpp"

namespace csrun::compiler {

NodeUsers::NodeUsers(const graph::Graph& graph)
    : users_(graph.size()), escapes_(graph.size(), false) {
  for (std::size_t i = 0; i < graph.size(); ++i) {
    for (graph::NodeId input : graph.nodes()[i].inputs)
      users_[static_cast<std::size_t>(input)].push_back(static_cast<graph::NodeId>(i));
  }
  for (const graph::NamedNode& output : graph.outputs())
    escapes_[static_cast<std::size_t>(output.node)] = true;
  for (const graph::NamedNode& update : graph.updates())
    escapes_[static_cast<std::size_t>(update.node)] = true;
}

graph::NodeId NodeUsers::sole_user(graph::NodeId id) const {
  const std::vector<graph::NodeId>& users = of(id);
  if (escapes(id) || users.size() != 1) return -1;
  return users.front();
}

}  // namespace csrun::compiler
