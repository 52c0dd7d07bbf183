#include <map>
#include <string>

#include "graph_rewriter.hpp"
#include "node_users.hpp"
#include "passes.hpp"
#include "static_values.hpp"

namespace csrun::compiler {

namespace {

using graph::NodeId;

class LayerRecomputer {
 public:
  explicit LayerRecomputer(const graph::Graph& source)
      : source_(source),
        users_(source),
        static_(static_values(source)),
        rewriter_(source),
        layer_(source.size(), -1),
        kept_(source.size(), false),
        chosen_(source.size(), false) {
    assign_layers();
    keep_what_leaves_layers();
    for (std::size_t i = 0; i < source.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      chosen_[i] = recomputable(id) && read_after_forward(source_, users_, id);
    }
  }

  std::size_t run() {
    return recompute_chosen(rewriter_, users_, chosen_,
                            [&](NodeId operand) { return recomputable(operand); });
  }

  graph::Graph finish() { return rewriter_.finish(); }

 private:
  bool forward(NodeId id) const { return source_.node(id).phase == graph::Phase::forward; }
  std::int32_t layer(NodeId id) const { return layer_[static_cast<std::size_t>(id)]; }

  // Each forward node's layer: the element of a module list its scope lies in (one per index).
  void assign_layers() {
    std::map<std::string, std::int32_t, std::less<>> index;
    std::vector<std::int32_t> scope_layer;
    for (const std::string& scope : source_.scope_names()) {
      std::string_view listed = graph::listed_module(scope);
      if (listed.empty()) {
        scope_layer.push_back(-1);
        continue;
      }
      auto [at, added] = index.try_emplace(std::string(listed), std::ssize(index));
      scope_layer.push_back(at->second);
    }
    for (std::size_t i = 0; i < source_.size(); ++i) {
      const graph::Node& node = source_.node(static_cast<NodeId>(i));
      if (node.phase == graph::Phase::forward)
        layer_[i] = scope_layer[static_cast<std::size_t>(node.scope)];
    }
  }

  // A layer's value that a forward node outside the layer reads (its output, the next layer's
  // input; a value the layers share, such as rotary positions), or that the step returns, is
  // stored as without this pass: the layers are computed again from these.
  void keep_what_leaves_layers() {
    for (std::size_t i = 0; i < source_.size(); ++i) {
      auto id = static_cast<NodeId>(i);
      if (layer(id) < 0) continue;
      bool leaves = users_.escapes(id);
      for (NodeId reader : users_.of(id))
        leaves = leaves || (forward(reader) && layer(reader) != layer(id));
      kept_[i] = leaves;
    }
  }

  // A forward value of a layer that does not leave it: computed again with the layer, unless it
  // is a leaf, a static value or a single value, which are read where they are.
  bool recomputable(NodeId id) const {
    auto index = static_cast<std::size_t>(id);
    const graph::Node& node = source_.node(id);
    if (layer(id) < 0 || kept_[index] || static_[index]) return false;
    if (graph::op_class(node.op) == graph::OpClass::leaf) return false;
    return graph::element_count(node.type.shape) > 1;
  }

  const graph::Graph& source_;
  NodeUsers users_;
  std::vector<bool> static_;
  GraphRewriter rewriter_;
  std::vector<std::int32_t> layer_;  // per source node: its layer, -1 for none (or not forward)
  std::vector<bool> kept_;           // per source node: a layer's value stored as it is
  std::vector<bool> chosen_;         // per source node: computed again where a later phase reads it
};

}  // namespace

std::size_t recompute_layers(Program& program) {
  std::size_t added = rewrite_program<LayerRecomputer>(program, "recompute_layers");
  if (added > 0) eliminate_dead_code(program);
  return added;
}

}  // namespace csrun::compiler
