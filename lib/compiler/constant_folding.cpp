#include <algorithm>

#include "graph/reference_evaluator.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;
using graph::OpKind;

bool is_constant(const graph::Graph& graph, NodeId id) {
  return graph.node(id).op == OpKind::constant;
}

// Evaluates `node` over its constant operands with the reference evaluator; nothing when the
// evaluation fails (a gather out of range: the runtime reports that, not the compiler).
std::optional<graph::Attributes> evaluate(const graph::Graph& graph, const graph::Node& node) {
  graph::Graph scratch;
  std::vector<NodeId> operands;
  for (NodeId input : node.inputs)
    operands.push_back(scratch.add(OpKind::constant, {}, graph.node(input).attrs, node));
  NodeId result = scratch.add(node.op, std::move(operands), node.attrs, node);
  std::vector<graph::HostTensor> values;
  try {
    values = graph::evaluate_reference(scratch, {}, std::span<const NodeId>(&result, 1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  graph::Attributes constant;
  constant.shape = node.type.shape;
  constant.dtype = node.type.dtype;
  constant.values = std::move(values.front().values);
  // The runtime holds f32 values as floats: fold to exactly what it would compute with.
  if (constant.dtype == graph::DType::f32) {
    for (double& value : constant.values)
      value = static_cast<double>(static_cast<float>(value));
  }
  bool splat = !constant.values.empty() &&
               std::all_of(constant.values.begin(), constant.values.end(),
                           [&](double value) { return value == constant.values.front(); });
  if (splat) constant.values = std::vector<double>{constant.values.front()};
  return constant;
}

// A node computed from constants alone, small enough to hold as one. Leaves are not: an iota
// stays a generator (a static value, computed when the plan is loaded).
bool foldable(const graph::Graph& graph, const graph::Node& node) {
  const std::vector<NodeId>& inputs = node.inputs;
  if (inputs.empty() || graph::element_count(node.type.shape) > kMaxFoldedElements) return false;
  return std::all_of(inputs.begin(), inputs.end(),
                     [&](NodeId input) { return is_constant(graph, input); });
}

}  // namespace

std::size_t fold_constants(Program& program) {
  expect_unfused(program, "fold_constants");
  graph::Graph& graph = program.graph;
  // In place and in order: a node folded makes its readers' operands constants before they come.
  std::size_t folded = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    const graph::Node& node = graph.node(id);
    if (!foldable(graph, node)) continue;
    std::optional<graph::Attributes> value = evaluate(graph, node);
    if (!value) continue;
    graph.replace_with_constant(id, std::move(*value));
    ++folded;
  }
  return folded;
}

}  // namespace csrun::compiler
