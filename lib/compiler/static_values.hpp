#pragma once

#include <vector>

#include "graph/graph.hpp"

namespace csrun::compiler {

// Which nodes hold the same value in every step: constants, iota, and what is computed from them
// alone (an attention mask from iota and a comparison). Kernels compute them once, when the plan
// is loaded, and no step waits for them.
std::vector<bool> static_values(const graph::Graph& graph);

}  // namespace csrun::compiler
