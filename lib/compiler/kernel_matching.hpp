#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "program.hpp"

namespace csrun::compiler {

// One kernel of the step: a library entry and the nodes it executes.
struct Kernel {
  std::string name;                     // the kernel library entry
  std::vector<graph::NodeId> nodes;     // ascending
  std::vector<graph::NodeId> results;   // members read after the kernel or returned by the step
  std::vector<graph::NodeId> operands;  // values it reads from elsewhere, in order of first use
  bool at_load = false;  // computes a static value (static_values.hpp) once, when loading the plan

  friend bool operator==(const Kernel&, const Kernel&) = default;
};

// Nodes no kernel of the library runs; each problem names the op, its types, the module and model
// line that built it, and what the library supports for that op.
class KernelMatchError : public std::runtime_error {
 public:
  explicit KernelMatchError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Assigns every computing node (a fusion as a whole) a kernel of the library, in execution order.
// Leaves (inputs, variables, constants, iota) get none: they are buffers filled before the step.
// Nodes computed from constants alone get kernels that run once, when the plan is loaded.
std::vector<Kernel> match_kernels(const Program& program);

// "div(i32[4], i32[4]) -> i32[4]".
std::string node_signature(const graph::Graph& graph, graph::NodeId id);

}  // namespace csrun::compiler
