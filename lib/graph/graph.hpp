#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "op.hpp"
#include "types.hpp"

namespace csrun::graph {

using NodeId = std::int32_t;

// An operation that cannot be built: a shape or dtype mismatch, an axis out of range. The
// message names the op, its operands' types and the model line that built it.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Node {
  OpKind op = OpKind::constant;
  std::vector<NodeId> inputs;
  Attributes attrs;
  TensorType type;
  std::source_location location;  // the model code that built it
};

// How a variable is first filled. Values are made by the runtime (lib/nn/initializers), so a
// traced graph is shape-only: no weight exists until a step runs.
struct Initializer {
  std::string name = "zeros";  // zeros, ones, constant, normal, truncated_normal, uniform,
                               // xavier_uniform, xavier_normal
  double mean = 0.0;
  double std = 1.0;
  double a = -2.0;  // truncation (truncated_normal) or range (uniform) bounds
  double b = 2.0;
  double gain = 1.0;
  double value = 0.0;

  friend bool operator==(const Initializer&, const Initializer&) = default;
};

enum class VariableRole : std::uint8_t { parameter, optimizer_state, step_counter, loss_scaling };
const char* role_name(VariableRole role);

struct Variable {
  std::string name;  // the checkpoint key: model.fc_layers.0.weight, optimizer.state.0.exp_avg
  VariableRole role = VariableRole::parameter;
  Initializer init;
  NodeId node = -1;
};

struct NamedNode {
  std::string name;
  NodeId node = -1;
};

// A static graph: nodes in topological (creation) order, the batch inputs it reads, the
// variables it keeps across steps, the named results it produces and the new value of each
// variable it updates.
class Graph {
 public:
  // Adds a node, inferring its type; throws GraphError when the operands do not fit.
  NodeId add(OpKind op, std::vector<NodeId> inputs, Attributes attrs = {},
             std::source_location location = std::source_location::current());
  NodeId add_input(const std::string& name, TensorType type,
                   std::source_location location = std::source_location::current());
  NodeId add_variable(const std::string& name, TensorType type, VariableRole role, Initializer init,
                      std::source_location location = std::source_location::current());
  void add_output(const std::string& name, NodeId node);
  // The value `variable` holds after the step.
  void set_update(const std::string& variable, NodeId value);

  // References to nodes stay valid while the graph grows (tracing and autodiff hold them).
  const Node& node(NodeId id) const { return nodes_.at(static_cast<std::size_t>(id)); }
  const std::deque<Node>& nodes() const { return nodes_; }
  std::size_t size() const { return nodes_.size(); }
  const std::vector<NamedNode>& inputs() const { return inputs_; }
  const std::vector<Variable>& variables() const { return variables_; }
  const std::vector<NamedNode>& outputs() const { return outputs_; }
  const std::vector<NamedNode>& updates() const { return updates_; }
  const Variable* find_variable(std::string_view name) const;
  std::optional<NodeId> find_input(std::string_view name) const;
  std::optional<NodeId> find_output(std::string_view name) const;
  // The name of a leaf node (input or variable), or empty.
  std::string leaf_name(NodeId id) const;

  // A readable listing: one line per node, then inputs, variables, outputs and updates.
  std::string to_text() const;

 private:
  std::deque<Node> nodes_;
  std::vector<NamedNode> inputs_;
  std::vector<Variable> variables_;
  std::vector<NamedNode> outputs_;
  std::vector<NamedNode> updates_;
};

// "file.cpp:42" (the file name without its directories).
std::string location_string(const std::source_location& location);

}  // namespace csrun::graph
