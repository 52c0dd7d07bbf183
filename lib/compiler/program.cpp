#include "program.hpp"

#include <sstream>
#include <stdexcept>

namespace csrun::compiler {

std::string Program::to_text() const {
  std::vector<std::int32_t> group(graph.size(), -1);
  for (std::size_t f = 0; f < fusions.size(); ++f) {
    for (graph::NodeId id : fusions[f].nodes)
      group[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(f);
  }
  std::ostringstream text;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    text << graph.node_text(static_cast<graph::NodeId>(i));
    if (group[i] >= 0) {
      text << "  {f" << group[i] << " " << fusions[static_cast<std::size_t>(group[i])].pattern
           << "}";
    }
    text << "\n";
  }
  text << graph.interface_text();
  return text.str();
}

void expect_unfused(const Program& program, const char* pass) {
  if (!program.fusions.empty())
    throw std::logic_error(std::string(pass) + " rebuilds the graph, so it must run before fusion");
}

}  // namespace csrun::compiler
