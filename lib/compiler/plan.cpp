#include "plan.hpp"

#include <algorithm>

namespace csrun::compiler {

const char* step_kind_name(StepKind kind) {
  return kind == StepKind::train ? "train" : "eval";
}

const char* execution_mode_name(ExecutionMode mode) {
  switch (mode) {
    case ExecutionMode::none:
      return "none";
    case ExecutionMode::pipelined:
      return "pipelined";
    case ExecutionMode::weight_streaming:
      return "weight_streaming";
  }
  return "?";
}

bool chain_sums(graph::OpKind op, graph::DType operand, graph::DType result,
                std::int64_t result_count) {
  return op == graph::OpKind::reduce_sum && result_count == 1 && operand == graph::DType::f32 &&
         result == graph::DType::f32;
}

bool runs_row_chain(const graph::Node& node) {
  return (node.op == graph::OpKind::softmax || node.op == graph::OpKind::softmax_grad) &&
         node.type.dtype == graph::DType::f32 && node.type.rank() > 0 &&
         node.attrs.axis == node.type.rank() - 1;
}

bool computes_in_registers(const graph::Node& node, std::span<const graph::DType> operands) {
  using graph::DType;
  using graph::OpKind;
  DType result = node.type.dtype;
  auto all_f32 = [](std::span<const DType> dtypes) {
    return std::all_of(dtypes.begin(), dtypes.end(), [](DType d) { return d == DType::f32; });
  };
  switch (node.op) {
    case OpKind::gelu:
      if (node.attrs.approximate) return false;
      [[fallthrough]];
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::maximum:
    case OpKind::minimum:
    case OpKind::neg:
    case OpKind::abs:
    case OpKind::relu:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::exp:
    case OpKind::erf:
    case OpKind::sigmoid:
      return result == DType::f32 && all_f32(operands);
    case OpKind::less:
    case OpKind::less_equal:
    case OpKind::greater:
    case OpKind::greater_equal:
    case OpKind::equal:
    case OpKind::not_equal:
    case OpKind::is_finite:
      return result == DType::boolean && all_f32(operands);
    case OpKind::logical_not:
      return result == DType::boolean && operands.size() == 1 && operands[0] == DType::boolean;
    case OpKind::where:
      return result == DType::f32 && operands.size() == 3 && operands[0] == DType::boolean &&
             all_f32(operands.subspan(1));
    case OpKind::cast:
      return operands.size() == 1 && ((operands[0] == DType::f32 && graph::is_half(result)) ||
                                      (graph::is_half(operands[0]) && result == DType::f32) ||
                                      (operands[0] == DType::boolean && result == DType::f32));
    default:
      return false;
  }
}

std::vector<graph::NodeId> variables_read_from(const Plan& reader, const Plan& owner) {
  const graph::Graph& graph = reader.graph;
  auto kept_here = [&](const graph::Variable& variable) {
    auto named = [&](const graph::NamedNode& update) { return update.name == variable.name; };
    return variable.role == graph::VariableRole::half_copy ||
           std::any_of(graph.updates().begin(), graph.updates().end(), named);
  };
  std::vector<graph::NodeId> read;
  for (const graph::Variable& variable : graph.variables()) {
    const graph::Variable* theirs = owner.graph.find_variable(variable.name);
    if (theirs == nullptr || kept_here(variable) ||
        owner.graph.node(theirs->node).type != graph.node(variable.node).type)
      continue;
    read.push_back(variable.node);
  }
  return read;
}

std::vector<graph::NodeId> sums_kept_by(const Plan& reader, const Plan& owner) {
  const graph::Graph& graph = reader.graph;
  std::vector<graph::NodeId> sums;
  for (const graph::Variable& variable : graph.variables()) {
    std::optional<graph::NodeId> input = owner.graph.find_input(variable.name);
    if (variable.role != graph::VariableRole::gradient_sum || !input ||
        owner.graph.node(*input).type != graph.node(variable.node).type)
      continue;
    sums.push_back(variable.node);
  }
  return sums;
}

std::int64_t variable_bytes(const Plan& plan, std::span<const graph::NodeId> variables) {
  std::int64_t bytes = 0;
  for (graph::NodeId id : variables)
    bytes += plan.graph.node(id).type.byte_size();
  return bytes;
}

const char* sample_size_name(const Plan& plan) {
  return plan.tokens_per_sample > 0 ? "the sequence length"
                                    : "the size of a sample (its image_shape)";
}

}  // namespace csrun::compiler
