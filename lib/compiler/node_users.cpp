#include "node_users.hpp"

namespace csrun::compiler {

NodeUsers::NodeUsers(const graph::Graph& graph)
    : first_(graph.size() + 1, 0), escapes_(graph.size(), false) {
  for (const graph::Node& node : graph.nodes()) {
    for (graph::NodeId input : node.inputs)
      ++first_[static_cast<std::size_t>(input) + 1];
  }
  for (std::size_t i = 1; i < first_.size(); ++i)
    first_[i] += first_[i - 1];
  users_.resize(first_.back());
  std::vector<std::size_t> next(first_.begin(), first_.end() - 1);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    for (graph::NodeId input : graph.nodes()[i].inputs)
      users_[next[static_cast<std::size_t>(input)]++] = static_cast<graph::NodeId>(i);
  }
  for (const graph::NamedNode& output : graph.outputs())
    escapes_[static_cast<std::size_t>(output.node)] = true;
  for (const graph::NamedNode& update : graph.updates())
    escapes_[static_cast<std::size_t>(update.node)] = true;
}

graph::NodeId NodeUsers::sole_user(graph::NodeId id) const {
  std::span<const graph::NodeId> users = of(id);
  if (escapes(id) || users.size() != 1) return -1;
  return users.front();
}

bool read_after_forward(const graph::Graph& graph, const NodeUsers& users, graph::NodeId id) {
  for (graph::NodeId reader : users.of(id)) {
    if (graph.node(reader).phase != graph::Phase::forward) return true;
  }
  return false;
}

}  // namespace csrun::compiler
