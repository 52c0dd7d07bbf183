#pragma once

#include <optional>
#include <string>

#include "graph.hpp"

namespace csrun::graph {

// A stable identity of a graph's structure: every node (op, operands, attributes, type), every
// input, variable (name, role, initializer), output and update. Source lines are left out, so
// editing a comment in model code keeps the fingerprint; anything that changes the computation
// changes it. Same on every run and machine. 16 hexadecimal digits.
std::string fingerprint(const Graph& graph);

// The first way `after` differs from `before`, in words ("node 17 was add(...) at gpt.cpp:88,
// is now mul(...)"), or nothing when their fingerprints agree.
std::optional<std::string> first_difference(const Graph& before, const Graph& after);

}  // namespace csrun::graph
