#include "static_values.hpp"

#include <algorithm>

namespace csrun::compiler {

std::vector<bool> static_values(const graph::Graph& graph) {
  std::vector<bool> fixed(graph.size(), false);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const graph::Node& node = graph.nodes()[i];
    switch (node.op) {
      case graph::OpKind::input:
      case graph::OpKind::variable:
        break;
      case graph::OpKind::constant:
      case graph::OpKind::iota:
        fixed[i] = true;
        break;
      default:
        fixed[i] = std::all_of(node.inputs.begin(), node.inputs.end(), [&](graph::NodeId input) {
          return fixed[static_cast<std::size_t>(input)];
        });
    }
  }
  return fixed;
}

}  // namespace csrun::compiler
