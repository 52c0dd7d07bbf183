#include "graph_rewriter.hpp"

#include <stdexcept>

namespace csrun::compiler {

using graph::NodeId;

GraphRewriter::GraphRewriter(const graph::Graph& source)
    : source_(&source), map_(source.size(), -1) {
  target_.adopt_scopes(source);
}

bool GraphRewriter::copy_leaf(NodeId id) {
  graph::OpKind op = source_->node(id).op;
  if (op != graph::OpKind::input && op != graph::OpKind::variable) return false;
  copy(id, {});
  return true;
}

NodeId GraphRewriter::copy(NodeId id) {
  const graph::Node& node = source_->node(id);
  if (node.op == graph::OpKind::input || node.op == graph::OpKind::variable) return copy(id, {});
  return copy(id, mapped_inputs(id));
}

NodeId GraphRewriter::copy(NodeId id, std::vector<NodeId> inputs) {
  const graph::Node& node = source_->node(id);
  NodeId copied = -1;
  if (node.op == graph::OpKind::input) {
    copied = target_.add_input(source_->leaf_name(id), node);
  } else if (node.op == graph::OpKind::variable) {
    copied = target_.add_variable(source_->variable_of(id), node);
  } else {
    copied = target_.add_like(node, *source_, std::move(inputs));
  }
  map(id, copied);
  return copied;
}

void GraphRewriter::map(NodeId id, NodeId replacement) {
  map_.at(static_cast<std::size_t>(id)) = replacement;
}

std::vector<NodeId> GraphRewriter::mapped_inputs(NodeId id) const {
  std::vector<NodeId> inputs;
  inputs.reserve(source_->node(id).inputs.size());
  for (NodeId input : source_->node(id).inputs) {
    NodeId target = mapped(input);
    if (target < 0)
      throw std::logic_error("a pass dropped %" + std::to_string(input) + " but kept its user %" +
                             std::to_string(id));
    inputs.push_back(target);
  }
  return inputs;
}

NodeId GraphRewriter::add(graph::OpKind op, std::vector<NodeId> inputs, graph::Attributes attrs,
                          NodeId origin) {
  return target_.add(op, std::move(inputs), std::move(attrs), source_->node(origin));
}

NodeId GraphRewriter::repeat(NodeId id, std::vector<NodeId> inputs, graph::Phase phase) {
  graph::Node origin = source_->node(id);
  origin.phase = phase;
  return target_.add(origin.op, std::move(inputs), origin.attrs, origin);
}

NodeId GraphRewriter::add_variable(const graph::Variable& variable, graph::TensorType type,
                                   NodeId origin) {
  graph::Node leaf = source_->node(origin);
  leaf.type = std::move(type);
  return target_.add_variable(variable, leaf);
}

graph::Graph GraphRewriter::finish() {
  auto mapped_or_fail = [&](const graph::NamedNode& named) {
    NodeId target = mapped(named.node);
    if (target < 0) throw std::logic_error("a pass dropped " + named.name);
    return target;
  };
  for (const graph::NamedNode& output : source_->outputs())
    target_.add_output(output.name, mapped_or_fail(output));
  for (const graph::NamedNode& update : source_->updates())
    target_.set_update(update.name, mapped_or_fail(update));
  return std::move(target_);
}

namespace {

// The earliest of `reader` and its later-phase operands that only it reads.
NodeId first_made_for(const graph::Graph& source, const NodeUsers& users, NodeId reader) {
  NodeId first = reader;
  for (NodeId operand : source.node(reader).inputs) {
    if (source.node(operand).phase != graph::Phase::forward && users.sole_user(operand) == reader)
      first = std::min(first, operand);
  }
  return first;
}

}  // namespace

std::vector<std::vector<NodeId>> recomputations_due(const graph::Graph& source,
                                                    const NodeUsers& users,
                                                    const std::vector<bool>& chosen) {
  std::vector<std::vector<NodeId>> due(source.size());
  std::vector<bool> placed(source.size(), false);
  for (std::size_t i = 0; i < source.size(); ++i) {
    auto reader = static_cast<NodeId>(i);
    if (source.node(reader).phase == graph::Phase::forward) continue;
    for (NodeId value : source.node(reader).inputs) {
      auto index = static_cast<std::size_t>(value);
      if (!chosen[index] || placed[index]) continue;
      placed[index] = true;
      due[static_cast<std::size_t>(first_made_for(source, users, reader))].push_back(value);
    }
  }
  return due;
}

}  // namespace csrun::compiler
