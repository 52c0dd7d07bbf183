#pragma once

#include "graph.hpp"

namespace csrun::graph {

// Floating-point operations of one evaluation of the graph: 2·M·N·K per matrix product (a
// multiply and an add), one per output element of elementwise ops, one per input element of
// reductions and normalizations; layout ops and leaves cost nothing.
double count_flops(const Graph& graph);
double node_flops(const Graph& graph, const Node& node);

// Elements of every variable of `role`.
std::int64_t count_elements(const Graph& graph, VariableRole role);

}  // namespace csrun::graph
