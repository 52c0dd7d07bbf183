#include <algorithm>
#include <map>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

// Rebuilds the graph in a new order: every node where it was, except the optimizer's (update
// phase) nodes, which come as soon as what they wait for is there:
// - their operands;
// - for each variable they read, and each whose next value they help to compute (a moment of
//   Adam, for the weight), every other node that reads it, directly or through a layout op or
//   cast a kernel may read it by: so the new value can still overwrite the old in place.
// An update node of more than one value that reads only leaves, single values and such nodes
// (0.9 times a moment, the weight decay's lr * weight_decay times a weight) is lazy: it comes
// with the first node that reads it, not where its operands are ready (the start of the step, or
// after the weight's last other reader), where its temporary would live until the gradient. Single
// values (Adam's step size) do not wait for the variables they help to update and so come early: a
// fusion reads only what comes before its first node, and a parameter's whole update can be one
// kernel.
class UpdateScheduler {
 public:
  explicit UpdateScheduler(const graph::Graph& source)
      : source_(source),
        users_(source),
        rewriter_(source),
        lazy_(source.size(), false),
        emitted_(source.size(), false),
        waiting_(source.size(), 0),
        dependents_(source.size()) {
    std::vector<std::vector<NodeId>> variables = variables_updated_through();
    for (std::size_t i = 0; i < source.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (!deferred(id)) continue;
      lazy_[i] = !single(id) && std::all_of(source.node(id).inputs.begin(),
                                            source.node(id).inputs.end(), [&](NodeId input) {
                                              return source.node(input).inputs.empty() ||
                                                     single(input) ||
                                                     lazy_[static_cast<std::size_t>(input)];
                                            });
      if (!lazy_[i]) wait_for(id, single(id) ? std::vector<NodeId>{} : variables[i]);
    }
  }

  // The nodes that now stand at another position.
  std::size_t run() {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      if (!deferred(static_cast<NodeId>(i))) emit(static_cast<NodeId>(i));
    }
    for (std::size_t i = 0; i < source_.size(); ++i)
      emit(static_cast<NodeId>(i));
    return moved_;
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  bool deferred(NodeId id) const {
    const graph::Node& node = source_.node(id);
    return node.phase == graph::Phase::update && !node.inputs.empty();
  }

  bool single(NodeId id) const { return graph::element_count(source_.node(id).type.shape) <= 1; }

  // Constants (the optimizer's are traced with its first update) and lazy operands come with the
  // node that reads them.
  bool on_demand(NodeId id) const {
    const graph::Node& node = source_.node(id);
    bool constant = node.inputs.empty() && node.op != graph::OpKind::input &&
                    node.op != graph::OpKind::variable;
    return constant || lazy_[static_cast<std::size_t>(id)];
  }

  // Per update node, the variables whose next value it computes or helps to compute.
  std::vector<std::vector<NodeId>> variables_updated_through() const {
    std::vector<std::vector<NodeId>> variables(source_.size());
    for (const graph::NamedNode& update : source_.updates()) {
      NodeId variable = source_.find_variable(update.name)->node;
      std::vector<NodeId> pending = {update.node};
      while (!pending.empty()) {
        NodeId id = pending.back();
        pending.pop_back();
        std::vector<NodeId>& of = variables[static_cast<std::size_t>(id)];
        // Single values (a step size, a clipping coefficient shared by every update) do not wait.
        if (!deferred(id) || single(id) || std::find(of.begin(), of.end(), variable) != of.end())
          continue;
        of.push_back(variable);
        pending.insert(pending.end(), source_.node(id).inputs.begin(),
                       source_.node(id).inputs.end());
      }
    }
    return variables;
  }

  // The nodes outside the update that read `variable`, directly or through layout ops and casts.
  const std::vector<NodeId>& readers(NodeId variable) {
    auto known = readers_.find(variable);
    if (known != readers_.end()) return known->second;
    std::vector<NodeId>& found = readers_[variable];
    std::vector<NodeId> pending = {variable};
    while (!pending.empty()) {
      NodeId value = pending.back();
      pending.pop_back();
      for (NodeId reader : users_.of(value)) {
        if (deferred(reader) || std::find(found.begin(), found.end(), reader) != found.end())
          continue;
        found.push_back(reader);
        const graph::Node& node = source_.node(reader);
        if (graph::op_class(node.op) == graph::OpClass::layout || node.op == graph::OpKind::cast)
          pending.push_back(reader);
      }
    }
    return found;
  }

  // Waits for the node's operands and for the readers of `updated` and of the variables it reads.
  void wait_for(NodeId id, std::vector<NodeId> updated) {
    std::vector<NodeId> waits_for;
    for (NodeId input : source_.node(id).inputs) {
      if (!on_demand(input)) waits_for.push_back(input);
      if (source_.node(input).op == graph::OpKind::variable) updated.push_back(input);
    }
    for (NodeId variable : updated) {
      const std::vector<NodeId>& found = readers(variable);
      waits_for.insert(waits_for.end(), found.begin(), found.end());
    }
    std::sort(waits_for.begin(), waits_for.end());
    waits_for.erase(std::unique(waits_for.begin(), waits_for.end()), waits_for.end());
    waiting_[static_cast<std::size_t>(id)] = waits_for.size();
    for (NodeId dependency : waits_for)
      dependents_[static_cast<std::size_t>(dependency)].push_back(id);
  }

  // Emits `id` after its operands (an update node a later node reads comes when that node needs
  // it), then every update node that waited only for it.
  void emit(NodeId id) {
    if (emitted_[static_cast<std::size_t>(id)]) return;
    for (NodeId input : source_.node(id).inputs)
      emit(input);
    emitted_[static_cast<std::size_t>(id)] = true;
    if (id != emitted_count_++) ++moved_;
    if (!rewriter_.copy_leaf(id)) rewriter_.copy(id);
    for (NodeId dependent : dependents_[static_cast<std::size_t>(id)]) {
      if (--waiting_[static_cast<std::size_t>(dependent)] == 0) emit(dependent);
    }
  }

  const graph::Graph& source_;
  NodeUsers users_;
  GraphRewriter rewriter_;
  std::vector<bool> lazy_;
  std::vector<bool> emitted_;
  std::vector<std::size_t> waiting_;
  std::vector<std::vector<NodeId>> dependents_;
  std::map<NodeId, std::vector<NodeId>> readers_;  // per variable read by the update
  NodeId emitted_count_ = 0;
  std::size_t moved_ = 0;
};

}  // namespace

std::size_t schedule_updates(Program& program) {
  expect_unfused(program, "schedule_updates");
  UpdateScheduler scheduler(program.graph);
  std::size_t moved = scheduler.run();
  if (moved > 0) program.graph = scheduler.finish();
  return moved;
}

}  // namespace csrun::compiler
