#include <algorithm>

#include "graph/reference_evaluator.hpp"
#include "graph_rewriter.hpp"
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
std::optional<graph::Attributes> evaluate(const graph::Graph& target, const graph::Node& node,
                                          const std::vector<NodeId>& inputs) {
  graph::Graph scratch;
  std::vector<NodeId> operands;
  for (NodeId input : inputs)
    operands.push_back(scratch.add(OpKind::constant, {}, target.node(input).attrs, node));
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
bool foldable(const graph::Graph& graph, const graph::Node& node,
              const std::vector<NodeId>& inputs) {
  if (inputs.empty() || graph::element_count(node.type.shape) > kMaxFoldedElements) return false;
  return std::all_of(inputs.begin(), inputs.end(),
                     [&](NodeId input) { return is_constant(graph, input); });
}

// Whether anything folds: a fold always starts at a node whose operands are constants already.
bool any_foldable(const graph::Graph& graph) {
  return std::any_of(graph.nodes().begin(), graph.nodes().end(),
                     [&](const graph::Node& node) { return foldable(graph, node, node.inputs); });
}

}  // namespace

std::size_t fold_constants(Program& program) {
  expect_unfused(program, "fold_constants");
  const graph::Graph& source = program.graph;
  if (!any_foldable(source)) return 0;
  GraphRewriter rewriter(source);
  std::size_t folded = 0;
  for (std::size_t i = 0; i < source.size(); ++i) {
    auto id = static_cast<NodeId>(i);
    if (rewriter.copy_leaf(id)) continue;
    const graph::Node& node = source.node(id);
    std::vector<NodeId> inputs = rewriter.mapped_inputs(id);
    std::optional<graph::Attributes> value;
    if (foldable(rewriter.target(), node, inputs))
      value = evaluate(rewriter.target(), node, inputs);
    if (!value) {
      rewriter.copy(id, std::move(inputs));
      continue;
    }
    rewriter.map(id, rewriter.add(OpKind::constant, {}, std::move(*value), id));
    ++folded;
  }
  if (folded > 0) program.graph = rewriter.finish();
  return folded;
}

}  // namespace csrun::compiler
