#pragma once

#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace csrun::compiler {

// Nodes one kernel executes together, found by the fusion passes. Members are in ascending node
// order. A fusion's results are its members read outside it (and graph outputs and updates).
struct Fusion {
  std::string pattern;  // "matmul" (with its operand prologue and epilogue) or "elementwise"
  std::vector<graph::NodeId> nodes;

  friend bool operator==(const Fusion&, const Fusion&) = default;
};

// What the passes work on: the graph and, once the fusion passes ran, how its nodes group into
// kernels. Passes that rebuild the graph run before the fusion passes.
struct Program {
  graph::Graph graph;
  std::vector<Fusion> fusions;

  // The graph's listing with every fused node marked by its group ("{f3 matmul}").
  std::string to_text() const;
};

// Passes that rebuild the graph call this first: fusions name node ids, so fusing comes last.
void expect_unfused(const Program& program, const char* pass);

}  // namespace csrun::compiler
