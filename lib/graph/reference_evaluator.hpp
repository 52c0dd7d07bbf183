#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "graph.hpp"

namespace csrun::graph {

// A value of the reference evaluator: row-major, every element held as a double whatever the
// dtype (integers and booleans exactly; 16-bit floats already rounded to their format).
struct HostTensor {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<double> values;

  static HostTensor scalar(double value, DType dtype = DType::f32);
  static HostTensor filled(Shape shape, double value, DType dtype = DType::f32);
};

// Values for a graph's inputs and variables, by name.
using Feeds = std::map<std::string, HostTensor>;

// Evaluates a graph slowly and obviously correctly, in double precision: the oracle the tests
// compare everything else against. Throws std::invalid_argument for a missing or mistyped feed
// and std::out_of_range for a gather index outside its table.
std::vector<HostTensor> evaluate_reference(const Graph& graph, const Feeds& feeds,
                                           std::span<const NodeId> fetch);

}  // namespace csrun::graph
