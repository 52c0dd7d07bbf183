#include "graph.hpp"

#include <algorithm>
#include <sstream>

#include "shape_inference.hpp"

namespace csrun::graph {

namespace {

std::string list(const std::vector<std::int64_t>& values) {
  return shape_string(values);
}

// The attributes an op reads, for the listing.
std::string attributes_text(const Node& node) {
  const Attributes& a = node.attrs;
  switch (node.op) {
    case OpKind::constant: {
      std::ostringstream text;
      text << " value=";
      if (a.values.size() == 1) {
        text << a.values[0];
      } else {
        text << "<" << a.values.size() << " values>";
      }
      return text.str();
    }
    case OpKind::iota:
      return " axis=" + std::to_string(a.axis);
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_max:
      return " axes=" + list(a.axes) + (a.keepdims ? " keepdims" : "");
    case OpKind::argmax:
    case OpKind::concat:
    case OpKind::softmax:
    case OpKind::log_softmax:
      return " axis=" + std::to_string(a.axis);
    case OpKind::transpose:
      return " perm=" + list(a.perm);
    case OpKind::slice:
    case OpKind::pad:
      return " begins=" + list(a.begins) + " ends=" + list(a.ends);
    case OpKind::layer_norm: {
      std::ostringstream text;
      text << " eps=" << a.eps;
      return text.str();
    }
    case OpKind::gelu:
      return a.approximate ? " approximate=tanh" : "";
    case OpKind::scatter_add:
    case OpKind::one_hot:
      return " depth=" + std::to_string(a.depth);
    case OpKind::dropout: {
      std::ostringstream text;
      text << " rate=" << a.rate << " seed=" << a.seed << " salt=" << a.salt;
      return text.str();
    }
    default:
      return "";
  }
}

}  // namespace

const char* role_name(VariableRole role) {
  switch (role) {
    case VariableRole::parameter:
      return "parameter";
    case VariableRole::optimizer_state:
      return "optimizer state";
    case VariableRole::step_counter:
      return "step counter";
    case VariableRole::loss_scaling:
      return "loss scaling";
  }
  return "?";
}

std::string location_string(const std::source_location& location) {
  std::string file = location.file_name();
  std::size_t slash = file.find_last_of('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(location.line());
}

NodeId Graph::add(OpKind op, std::vector<NodeId> inputs, Attributes attrs,
                  std::source_location location) {
  std::vector<TensorType> types;
  for (NodeId input : inputs) {
    if (input < 0 || static_cast<std::size_t>(input) >= nodes_.size()) {
      throw GraphError(std::string(op_name(op)) + " at " + location_string(location) +
                       ": operand refers to no node of this graph");
    }
    types.push_back(nodes_[static_cast<std::size_t>(input)].type);
  }
  TensorType type;
  try {
    type = infer_type(op, types, attrs);
  } catch (const std::invalid_argument& error) {
    std::string operands;
    for (const TensorType& t : types)
      operands += (operands.empty() ? "" : ", ") + t.to_string();
    throw GraphError(std::string(op_name(op)) + "(" + operands + ") at " +
                     location_string(location) + " " + error.what());
  }
  nodes_.push_back(Node{op, std::move(inputs), std::move(attrs), std::move(type), location});
  return static_cast<NodeId>(nodes_.size() - 1);
}

NodeId Graph::add_input(const std::string& name, TensorType type, std::source_location location) {
  if (find_input(name)) throw GraphError("the graph already has an input named " + name);
  nodes_.push_back(Node{OpKind::input, {}, {}, std::move(type), location});
  NodeId id = static_cast<NodeId>(nodes_.size() - 1);
  inputs_.push_back({name, id});
  return id;
}

NodeId Graph::add_variable(const std::string& name, TensorType type, VariableRole role,
                           Initializer init, std::source_location location) {
  if (find_variable(name)) throw GraphError("the graph already has a variable named " + name);
  nodes_.push_back(Node{OpKind::variable, {}, {}, std::move(type), location});
  NodeId id = static_cast<NodeId>(nodes_.size() - 1);
  variables_.push_back(Variable{name, role, std::move(init), id});
  return id;
}

void Graph::add_output(const std::string& name, NodeId node) {
  if (find_output(name)) throw GraphError("the graph already has an output named " + name);
  outputs_.push_back({name, node});
}

void Graph::set_update(const std::string& variable, NodeId value) {
  const Variable* target = find_variable(variable);
  if (!target) throw GraphError("no variable named " + variable + " to update");
  if (node(target->node).type != node(value).type) {
    throw GraphError("the update of " + variable + " is " + node(value).type.to_string() +
                     " but the variable is " + node(target->node).type.to_string());
  }
  auto existing = std::find_if(updates_.begin(), updates_.end(),
                               [&](const NamedNode& update) { return update.name == variable; });
  if (existing != updates_.end()) throw GraphError(variable + " is updated twice");
  updates_.push_back({variable, value});
}

const Variable* Graph::find_variable(std::string_view name) const {
  auto it = std::find_if(variables_.begin(), variables_.end(),
                         [&](const Variable& variable) { return variable.name == name; });
  return it == variables_.end() ? nullptr : &*it;
}

std::optional<NodeId> Graph::find_input(std::string_view name) const {
  for (const NamedNode& input : inputs_) {
    if (input.name == name) return input.node;
  }
  return std::nullopt;
}

std::optional<NodeId> Graph::find_output(std::string_view name) const {
  for (const NamedNode& output : outputs_) {
    if (output.name == name) return output.node;
  }
  return std::nullopt;
}

std::string Graph::leaf_name(NodeId id) const {
  for (const NamedNode& input : inputs_) {
    if (input.node == id) return input.name;
  }
  for (const Variable& variable : variables_) {
    if (variable.node == id) return variable.name;
  }
  return {};
}

std::string Graph::to_text() const {
  std::ostringstream text;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    text << "%" << i << " = " << op_name(node.op);
    std::string name = leaf_name(static_cast<NodeId>(i));
    if (!name.empty()) text << " \"" << name << "\"";
    for (std::size_t k = 0; k < node.inputs.size(); ++k)
      text << (k ? ", %" : " %") << node.inputs[k];
    text << attributes_text(node) << " : " << node.type.to_string() << "   # "
         << location_string(node.location) << "\n";
  }
  for (const NamedNode& output : outputs_)
    text << "output \"" << output.name << "\" = %" << output.node << "\n";
  for (const NamedNode& update : updates_)
    text << "update \"" << update.name << "\" = %" << update.node << "\n";
  return text.str();
}

}  // namespace csrun::graph
