#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "op.hpp"
#include "source_line.hpp"
#include "types.hpp"

namespace csrun::graph {

using NodeId = std::int32_t;

// An operation that cannot be built: a shape or dtype mismatch, an axis out of range. The
// message names the op, its operands' types and the model line that built it.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The part of a training step a node belongs to. The wafer model places them differently: in
// weight streaming the update runs next to the weights, off the wafer.
enum class Phase : std::uint8_t { forward, backward, update };
const char* phase_name(Phase phase);

// A module path such as model.transformer_decoder.layers.3.self_attn, by index into the graph's
// scope names; 0 is the top level ("").
using ScopeId = std::int32_t;

// The element of a module list that a module path lies in: the path up to its first index
// (model.transformer_decoder.layers.3 for model.transformer_decoder.layers.3.self_attn), or empty
// when it has none.
std::string_view listed_module(std::string_view scope);

struct Node {
  OpKind op = OpKind::constant;
  std::vector<NodeId> inputs;
  Attributes attrs;
  TensorType type;
  SourceLine location;  // the model code that built it
  ScopeId scope = 0;
  Phase phase = Phase::forward;

  friend bool operator==(const Node&, const Node&) = default;
};

// How a variable is first filled. Values are made by the runtime (lib/nn/initializers), so a
// traced graph is shape-only: no weight exists until a step runs.
struct Initializer {
  std::string name = "zeros";  // zeros, ones, constant, normal, truncated_normal, uniform,
                               // xavier_*, kaiming_*, lecun_*, variance_scaling
  double mean = 0.0;
  double std = 1.0;
  double a = -2.0;  // truncation (truncated_normal, variance_scaling) or range (uniform) bounds
  double b = 2.0;
  double gain = 1.0;  // xavier_*, kaiming_* (kaiming's from its nonlinearity)
  double value = 0.0;
  // variance_scaling (and kaiming_*'s fan): variance scale / fan_mode's fan, drawn as
  // `distribution` (truncated_normal, normal, uniform).
  double scale = 1.0;
  std::string fan_mode = "fan_in";  // fan_in, fan_out, fan_avg
  std::string distribution = "truncated_normal";

  friend bool operator==(const Initializer&, const Initializer&) = default;
};

// A statistic is a running value the forward pass keeps but does not train (BatchNorm's running
// mean and variance). A 16-bit copy is a parameter rounded to the 16-bit type its products read,
// kept by the parameter's update (compiler pass half-copies) and refreshed by the runtime whenever
// the parameter is written from outside the step: derived state, never a checkpoint entry.
enum class VariableRole : std::uint8_t {
  parameter,
  optimizer_state,
  step_counter,
  loss_scaling,
  statistic,
  half_copy,
  // A sum a split batch's micro-steps add their gradients (or batch sums) to, which the runner
  // sets to -0.0 before a replica's first micro-step and the update reads: no checkpoint entry.
  gradient_sum
};
const char* role_name(VariableRole role);

struct Variable {
  std::string name;  // the checkpoint key: model.fc_layers.0.weight, optimizer.state.0.exp_avg
  VariableRole role = VariableRole::parameter;
  Initializer init;
  NodeId node = -1;
  std::string copy_of;  // a 16-bit copy's parameter (an f32 variable of its shape); else empty

  friend bool operator==(const Variable&, const Variable&) = default;
};

struct NamedNode {
  std::string name;
  NodeId node = -1;

  friend bool operator==(const NamedNode&, const NamedNode&) = default;
};

// A graph's nodes, in chunks of kChunk that never move: a reference to a node stays valid while
// nodes are added (tracing and autodiff hold them), and a pass rebuilding a graph of 100,000 nodes
// allocates a chunk per kChunk nodes rather than a block per node (std::deque's, for a type this
// size).
class NodeList {
 public:
  static constexpr std::size_t kChunk = 256;

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    using pointer = const Node*;
    using reference = const Node&;

    Iterator() = default;
    Iterator(const NodeList* list, std::size_t index) : list_(list), index_(index) {}
    const Node& operator*() const { return (*list_)[index_]; }
    const Node* operator->() const { return &(*list_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++index_;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.index_ == b.index_; }

   private:
    const NodeList* list_ = nullptr;
    std::size_t index_ = 0;
  };

  NodeList() = default;
  // A copy's chunks reserve kChunk too, so nodes added to it do not move its last chunk's.
  NodeList(const NodeList& other) { *this = other; }
  NodeList(NodeList&&) noexcept = default;
  NodeList& operator=(const NodeList& other);
  NodeList& operator=(NodeList&&) noexcept = default;

  void push_back(Node&& node);
  const Node& operator[](std::size_t index) const {
    return chunks_[index / kChunk][index % kChunk];
  }
  // Inline: every pass and the memory plan read nodes through it, millions of times a compile.
  const Node& at(std::size_t index) const {
    std::size_t chunk = index / kChunk;
    if (chunk >= chunks_.size() || index % kChunk >= chunks_[chunk].size()) out_of_range(index);
    return chunks_[chunk][index % kChunk];
  }
  std::size_t size() const {
    return chunks_.empty() ? 0 : (chunks_.size() - 1) * kChunk + chunks_.back().size();
  }
  bool empty() const { return chunks_.empty(); }
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

  friend bool operator==(const NodeList& a, const NodeList& b);

 private:
  friend class Graph;  // replaces a node in place (replace_with_constant)
  Node& at(std::size_t index) {
    return const_cast<Node&>(static_cast<const NodeList&>(*this).at(index));
  }
  [[noreturn]] void out_of_range(std::size_t index) const;

  std::vector<std::vector<Node>> chunks_;  // each reserves kChunk: its nodes never move
};

// Hashes names as string views: a lookup by a std::string_view builds no std::string.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view name) const {
    return std::hash<std::string_view>{}(name);
  }
};
template <typename Value>
using NameMap = std::unordered_map<std::string, Value, NameHash, std::equal_to<>>;

// A static graph: nodes in topological (creation) order, the batch inputs it reads, the
// variables it keeps across steps, the named results it produces and the new value of each
// variable it updates.
class Graph {
 public:
  // Adds a node in the current scope and phase, inferring its type; throws GraphError when the
  // operands do not fit.
  NodeId add(OpKind op, std::vector<NodeId> inputs, Attributes attrs = {},
             SourceLine location = std::source_location::current());
  NodeId add_input(const std::string& name, TensorType type,
                   SourceLine location = std::source_location::current());
  NodeId add_variable(const std::string& name, TensorType type, VariableRole role, Initializer init,
                      SourceLine location = std::source_location::current());
  // The same, with the location, scope and phase of `origin`: a node of a graph whose scopes this
  // one adopted (passes rebuilding a graph, a plan being read back).
  NodeId add(OpKind op, std::vector<NodeId> inputs, Attributes attrs, const Node& origin);
  // Rebuilding a node whose operands keep the types they had when `origin`'s type was inferred
  // (a pass copying a graph): the same type follows, so it is taken over, not inferred again.
  // Falls back to inference when an operand's type differs.
  NodeId add_like(const Node& origin, const Graph& origin_graph, std::vector<NodeId> inputs);
  NodeId add_input(const std::string& name, const Node& origin);
  NodeId add_variable(const Variable& variable, const Node& origin);
  // Takes over `other`'s scope names, so its ScopeIds mean the same here. Only before any scope
  // of this graph is named.
  void adopt_scopes(const Graph& other);

  void add_output(const std::string& name, NodeId node);
  // The value `variable` holds after the step.
  void set_update(const std::string& variable, NodeId value);
  // Makes node `id`, not a leaf, the constant `value` of its own type in place (constant
  // folding): its readers read the constant, its operands lose a reader; no node moves. Throws
  // GraphError when `value` holds another type.
  void replace_with_constant(NodeId id, Attributes value);

  // Nodes added from here on belong to `scope` (and `phase`) until the returned guard ends.
  class ScopeGuard;
  [[nodiscard]] ScopeGuard enter_scope(std::string_view name);
  [[nodiscard]] ScopeGuard enter_scope(ScopeId scope);
  void set_phase(Phase phase) { phase_ = phase; }
  Phase phase() const { return phase_; }
  ScopeId scope_id(std::string_view name);  // interns
  const std::string& scope_name(ScopeId scope) const;
  const std::vector<std::string>& scope_names() const { return scope_names_; }

  // References to nodes stay valid while the graph grows (tracing and autodiff hold them).
  const Node& node(NodeId id) const { return nodes_.at(static_cast<std::size_t>(id)); }
  const NodeList& nodes() const { return nodes_; }
  std::size_t size() const { return nodes_.size(); }
  const std::vector<NamedNode>& inputs() const { return inputs_; }
  const std::vector<Variable>& variables() const { return variables_; }
  const std::vector<NamedNode>& outputs() const { return outputs_; }
  const std::vector<NamedNode>& updates() const { return updates_; }
  const Variable* find_variable(std::string_view name) const;
  std::optional<NodeId> find_input(std::string_view name) const;
  std::optional<NodeId> find_output(std::string_view name) const;
  // The name of a leaf node (input or variable), or empty.
  const std::string& leaf_name(NodeId id) const;
  // The variable of a variable node.
  const Variable& variable_of(NodeId id) const;

  // A readable listing: one line per node (node_text), then the outputs and updates
  // (interface_text).
  std::string to_text() const;
  std::string node_text(NodeId id) const;
  std::string interface_text() const;

  // Same nodes (with their locations, scopes and phases), interface and scope names.
  friend bool operator==(const Graph& a, const Graph& b);

 private:
  NodeId append(Node&& node);
  // Throws GraphError unless `variable` is a 16-bit copy of an earlier f32 parameter of its shape
  // exactly when its role says so.
  void check_half_copy(const Variable& variable, const TensorType& type) const;

  NodeList nodes_;
  std::vector<std::int32_t> leaf_index_;  // per node: its entry in inputs_ or variables_, or -1
  std::vector<NamedNode> inputs_;
  std::vector<Variable> variables_;
  std::vector<NamedNode> outputs_;
  std::vector<NamedNode> updates_;
  NameMap<std::size_t> variable_index_;
  std::vector<bool> updated_;  // per variable
  std::vector<std::string> scope_names_{""};
  NameMap<ScopeId> scope_index_{{"", 0}};
  ScopeId scope_ = 0;
  Phase phase_ = Phase::forward;
};

class Graph::ScopeGuard {
 public:
  ScopeGuard(Graph& graph, ScopeId scope) : graph_(&graph), previous_(graph.scope_) {
    graph.scope_ = scope;
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ~ScopeGuard() { graph_->scope_ = previous_; }

 private:
  Graph* graph_;
  ScopeId previous_;
};

// "file.cpp:42".
inline std::string location_string(const SourceLine& location) {
  return location.to_string();
}

}  // namespace csrun::graph
