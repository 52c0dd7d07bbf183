#include "graph_rewriter.hpp"
#include "passes.hpp"

namespace csrun::compiler {

using graph::NodeId;

std::size_t eliminate_dead_code(Program& program) {
  expect_unfused(program, "eliminate_dead_code");
  const graph::Graph& source = program.graph;
  std::vector<bool> live(source.size(), false);
  std::vector<NodeId> pending;
  for (const graph::NamedNode& output : source.outputs())
    pending.push_back(output.node);
  for (const graph::NamedNode& update : source.updates())
    pending.push_back(update.node);
  while (!pending.empty()) {
    NodeId id = pending.back();
    pending.pop_back();
    if (live[static_cast<std::size_t>(id)]) continue;
    live[static_cast<std::size_t>(id)] = true;
    for (NodeId input : source.node(id).inputs)
      pending.push_back(input);
  }
  GraphRewriter rewriter(source);
  std::size_t removed = 0;
  for (std::size_t i = 0; i < source.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    // Inputs and variables are the step's interface and state: kept even when unread.
    if (rewriter.copy_leaf(id)) continue;
    if (live[i]) {
      rewriter.copy(id);
    } else {
      ++removed;
    }
  }
  if (removed > 0) program.graph = rewriter.finish();
  return removed;
}

}  // namespace csrun::compiler
