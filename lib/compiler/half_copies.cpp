#include <algorithm>
#include <map>
#include <utility>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"

namespace csrun::compiler {

namespace {

using graph::DType;
using graph::NodeId;

// Rebuilds the graph with a 16-bit copy of each f32 parameter that the step narrows and either
// updates or holds narrowed from the forward to the backward pass anyway: the narrowing casts
// become reads of the copy, and when the step updates the parameter its update narrows the new
// value into the copy, in the same pass over the parameter (the cast joins the update's
// elementwise chain). A parameter the step does not update (a split batch's micro-step) is
// rounded into its copy by the runtime when it is written; one it neither updates nor holds (an
// eval step's) is cast where it is read, as the copy would take memory the step does not. So is
// one it does not update when its layers are recomputed (`layers_recomputed`): the backward pass
// rounds the weights again with the rest of the layer's forward pass, and the copies would be the
// step's largest values kept between the passes. The values are the same bits: each is the
// parameter rounded to the same type, by the same rounding.
class HalfCopier {
 public:
  HalfCopier(const graph::Graph& source, bool layers_recomputed)
      : source_(source), users_(source), rewriter_(source), layers_recomputed_(layers_recomputed) {
    std::map<std::string, NodeId> updates;
    for (const graph::NamedNode& update : source.updates())
      updates.emplace(update.name, update.node);
    for (const graph::Variable& variable : source.variables()) {
      auto update = updates.find(variable.name);
      find_casts(variable, update == updates.end() ? -1 : update->second);
    }
  }

  // The casts that became reads of a copy.
  std::size_t run() {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (rewriter_.copy_leaf(id)) {
        add_copies_of(id);
        continue;
      }
      auto copy = copy_read_by_.find(id);
      if (copy != copy_read_by_.end()) {
        rewriter_.map(id, copy->second);
        ++replaced_;
        continue;
      }
      rewriter_.copy(id);
      narrow_update(id);
    }
    return replaced_;
  }

  graph::Graph finish() {
    graph::Graph graph = rewriter_.finish();
    for (const auto& [name, value] : copy_updates_)
      graph.set_update(name, value);
    return graph;
  }

 private:
  struct Copy {
    DType dtype;
    std::vector<NodeId> casts;
  };

  // The 16-bit types the parameter `variable` is cast to, when the step updates it only in the
  // optimizer's update (`update`; -1: not at all) or reads it in that type in the backward pass.
  void find_casts(const graph::Variable& variable, NodeId update) {
    const graph::Node& leaf = source_.node(variable.node);
    if (variable.role != graph::VariableRole::parameter || leaf.type.dtype != DType::f32) return;
    if (update >= 0 && source_.node(update).phase != graph::Phase::update) return;
    std::map<DType, std::vector<NodeId>> casts;
    std::map<DType, bool> held;
    for (NodeId user : users_.of(variable.node)) {
      const graph::Node& node = source_.node(user);
      if (node.op != graph::OpKind::cast || !graph::is_half(node.type.dtype)) continue;
      casts[node.type.dtype].push_back(user);
      held[node.type.dtype] =
          held[node.type.dtype] || update >= 0 || (!layers_recomputed_ && read_backward(user));
    }
    for (auto& [dtype, readers] : casts) {
      if (held[dtype]) copies_[variable.node].push_back({dtype, std::move(readers)});
    }
    if (update >= 0 && copies_.contains(variable.node)) update_of_[update].push_back(variable.node);
  }

  bool read_backward(NodeId id) const {
    std::span<const NodeId> readers = users_.of(id);
    return std::any_of(readers.begin(), readers.end(), [&](NodeId reader) {
      return source_.node(reader).phase == graph::Phase::backward;
    });
  }

  static std::string copy_name(const std::string& parameter, DType dtype) {
    return parameter + "@" + graph::dtype_name(dtype);
  }

  void add_copies_of(NodeId parameter) {
    auto found = copies_.find(parameter);
    if (found == copies_.end()) return;
    const std::string& name = source_.leaf_name(parameter);
    for (const Copy& copy : found->second) {
      graph::Variable variable;
      variable.name = copy_name(name, copy.dtype);
      variable.role = graph::VariableRole::half_copy;
      variable.copy_of = name;
      graph::TensorType type{source_.node(parameter).type.shape, copy.dtype};
      NodeId leaf = rewriter_.add_variable(variable, std::move(type), parameter);
      for (NodeId cast : copy.casts)
        copy_read_by_.emplace(cast, leaf);
    }
  }

  // After the new value of one or more copied parameters: its 16-bit forms, their copies' updates.
  void narrow_update(NodeId value) {
    auto found = update_of_.find(value);
    if (found == update_of_.end()) return;
    for (NodeId parameter : found->second) {
      for (const Copy& copy : copies_.at(parameter)) {
        graph::Attributes attrs;
        attrs.dtype = copy.dtype;
        NodeId narrowed =
            rewriter_.add(graph::OpKind::cast, {rewriter_.mapped(value)}, std::move(attrs), value);
        copy_updates_.emplace_back(copy_name(source_.leaf_name(parameter), copy.dtype), narrowed);
      }
    }
  }

  const graph::Graph& source_;
  NodeUsers users_;
  GraphRewriter rewriter_;
  bool layers_recomputed_;
  std::map<NodeId, std::vector<Copy>> copies_;       // per copied parameter's leaf
  std::map<NodeId, std::vector<NodeId>> update_of_;  // per update value: its parameters
  std::map<NodeId, NodeId> copy_read_by_;            // per narrowing cast: the copy it reads
  std::vector<std::pair<std::string, NodeId>> copy_updates_;
  std::size_t replaced_ = 0;
};

}  // namespace

std::size_t keep_half_copies(Program& program, bool layers_recomputed) {
  expect_unfused(program, "keep_half_copies");
  HalfCopier copier(program.graph, layers_recomputed);
  std::size_t replaced = copier.run();
  if (replaced > 0) program.graph = copier.finish();
  return replaced;
}

}  // namespace csrun::compiler
