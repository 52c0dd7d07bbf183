#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "graph/graph.hpp"
#include "node_users.hpp"
#include "program.hpp"

namespace csrun::compiler {

// Rebuilds a graph into a new one, node by node in order, so that a pass can drop, replace or add
// nodes. The new graph keeps the source's scopes, every input and variable (the step's interface
// and state), and its outputs and updates, which follow their nodes' replacements.
class GraphRewriter {
 public:
  explicit GraphRewriter(const graph::Graph& source);

  const graph::Graph& source() const { return *source_; }
  const graph::Graph& target() const { return target_; }

  // Copies source node `id` when it is an input or a variable (the step's interface and state,
  // which every pass keeps); false for any other node.
  bool copy_leaf(graph::NodeId id);
  // Copies source node `id` with its operands mapped; returns its id in the new graph.
  graph::NodeId copy(graph::NodeId id);
  // The same, given the mapped operands (mapped_inputs(id)) already at hand.
  graph::NodeId copy(graph::NodeId id, std::vector<graph::NodeId> inputs);
  // Makes source node `id` stand for new node `replacement` from here on.
  void map(graph::NodeId id, graph::NodeId replacement);
  // The new node that source node `id` became; -1 when it was dropped.
  graph::NodeId mapped(graph::NodeId id) const { return map_.at(static_cast<std::size_t>(id)); }
  // The new nodes source node `id`'s operands became.
  std::vector<graph::NodeId> mapped_inputs(graph::NodeId id) const;
  // Adds a new node with the location, scope and phase of source node `origin`.
  graph::NodeId add(graph::OpKind op, std::vector<graph::NodeId> inputs, graph::Attributes attrs,
                    graph::NodeId origin);
  // Adds source node `id` once more, reading `inputs`, in `phase`: a value computed again where
  // a later phase reads it. Its copy (copy(id)) stays what `id` maps to.
  graph::NodeId repeat(graph::NodeId id, std::vector<graph::NodeId> inputs, graph::Phase phase);
  // Adds a new variable of type `type` with the location, scope and phase of source node `origin`.
  graph::NodeId add_variable(const graph::Variable& variable, graph::TensorType type,
                             graph::NodeId origin);

  // The new graph, with the outputs and updates carried over. Throws std::logic_error when one of
  // them lost its node (a pass dropped something still needed).
  graph::Graph finish();

 private:
  const graph::Graph* source_;
  graph::Graph target_;
  std::vector<graph::NodeId> map_;
};

// Rebuilds the source graph into `rewriter` node by node, each operand of a node of a later phase
// (backward, update) for which `wanted(operand)` holds replaced by `recomputed(operand, phase)`:
// a forward value computed again where a later phase reads it, rather than kept until then.
template <class Wanted, class Recomputed>
void copy_recomputing_later_reads(GraphRewriter& rewriter, Wanted&& wanted,
                                  Recomputed&& recomputed) {
  const graph::Graph& source = rewriter.source();
  for (std::size_t i = 0; i < source.size(); ++i) {
    auto id = static_cast<graph::NodeId>(i);
    if (rewriter.copy_leaf(id)) continue;
    const graph::Node& node = source.node(id);
    std::vector<graph::NodeId> inputs = rewriter.mapped_inputs(id);
    if (node.phase != graph::Phase::forward) {
      for (std::size_t j = 0; j < inputs.size(); ++j) {
        if (wanted(node.inputs[j])) inputs[j] = recomputed(node.inputs[j], node.phase);
      }
    }
    rewriter.copy(id, std::move(inputs));
  }
}

// Forward values a rewrite computes again in a later phase, each once for all its later readers:
// the operands of a value for which `again_too(operand)` holds are computed again with it, the
// others read where they are.
class Recomputations {
 public:
  explicit Recomputations(std::size_t nodes) : again_(nodes, -1) {}

  template <class AgainToo>
  graph::NodeId of(GraphRewriter& rewriter, graph::NodeId id, graph::Phase phase,
                   const AgainToo& again_too) {
    graph::NodeId& again = again_[static_cast<std::size_t>(id)];
    if (again >= 0) return again;
    std::vector<graph::NodeId> inputs;
    for (graph::NodeId operand : rewriter.source().node(id).inputs)
      inputs.push_back(again_too(operand) ? of(rewriter, operand, phase, again_too)
                                          : rewriter.mapped(operand));
    ++added_;
    again = rewriter.repeat(id, std::move(inputs), phase);
    return again;
  }

  // Source node `id`'s recomputation, or -1 while there is none.
  graph::NodeId existing(graph::NodeId id) const { return again_[static_cast<std::size_t>(id)]; }
  std::size_t added() const { return added_; }

 private:
  std::vector<graph::NodeId> again_;  // per source node
  std::size_t added_ = 0;
};

// Per source node, the forward values for which `chosen` holds (per node) to compute again just
// before it: before their first reader of a later phase, or before that reader's operands made
// for it alone (a weight gradient's transposed upstream), which its kernel then still folds.
std::vector<std::vector<graph::NodeId>> recomputations_due(const graph::Graph& source,
                                                           const NodeUsers& users,
                                                           const std::vector<bool>& chosen);

// Rebuilds the source graph into `rewriter` node by node, computing each forward value for which
// `chosen` holds again just before the node recomputations_due gives it, once for all its later
// readers, with the operands for which `again_too(operand)` holds computed again too; every
// later-phase read of a value computed again reads its recomputation. Returns the nodes added (0:
// nothing chosen, and nothing copied).
template <class AgainToo>
std::size_t recompute_chosen(GraphRewriter& rewriter, const NodeUsers& users,
                             const std::vector<bool>& chosen, const AgainToo& again_too) {
  if (std::find(chosen.begin(), chosen.end(), true) == chosen.end()) return 0;
  const graph::Graph& source = rewriter.source();
  std::vector<std::vector<graph::NodeId>> due = recomputations_due(source, users, chosen);
  Recomputations recomputations(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    auto id = static_cast<graph::NodeId>(i);
    if (rewriter.copy_leaf(id)) continue;
    const graph::Node& node = source.node(id);
    for (graph::NodeId value : due[i])
      recomputations.of(rewriter, value, node.phase, again_too);
    std::vector<graph::NodeId> inputs = rewriter.mapped_inputs(id);
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      graph::NodeId again = recomputations.existing(node.inputs[j]);
      if (node.phase != graph::Phase::forward && again >= 0) inputs[j] = again;
    }
    rewriter.copy(id, std::move(inputs));
  }
  return recomputations.added();
}

// Runs `Rewrite` over an unfused program: made from its graph, run() rebuilds the graph and counts
// the changes, finish() gives the new graph, kept when something changed. Returns the changes.
template <class Rewrite>
std::size_t rewrite_program(Program& program, const char* pass) {
  expect_unfused(program, pass);
  Rewrite rewrite(program.graph);
  std::size_t changes = rewrite.run();
  if (changes > 0) program.graph = rewrite.finish();
  return changes;
}

// Runs a rewrite over `graph` when it holds a node of `op` (most steps have none: no graph to
// rebuild), keeping the new graph when the rewrite changed something. `Rewrite` is made from the
// graph; its run() rebuilds it and counts the changes, its finish() gives the new graph. Returns
// the changes.
template <class Rewrite>
std::size_t rewrite_where_present(graph::Graph& graph, graph::OpKind op) {
  const graph::NodeList& nodes = graph.nodes();
  if (std::none_of(nodes.begin(), nodes.end(),
                   [op](const graph::Node& node) { return node.op == op; }))
    return 0;
  Rewrite rewrite(graph);
  std::size_t changes = rewrite.run();
  if (changes > 0) graph = rewrite.finish();
  return changes;
}

}  // namespace csrun::compiler
