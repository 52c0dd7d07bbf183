#include "graph.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "shape_inference.hpp"

namespace csrun::graph {

namespace {

std::string list(const std::vector<std::int64_t>& values) {
  return shape_string(values);
}

// The attributes an op reads, for the listing, in the order of op.hpp's attr bits; a shape and
// a dtype are in the node's type already.
std::string attributes_text(const Node& node) {
  const Attributes& a = node.attrs;
  AttributeSet reads = attributes_read(node.op);
  std::ostringstream text;
  if (reads & attr::values) {
    text << " value=";
    if (a.values.size() == 1) {
      text << a.values[0];
    } else {
      text << "<" << a.values.size() << " values>";
    }
  }
  if (reads & attr::axis) text << " axis=" << a.axis;
  if (reads & attr::axes) text << " axes=" << list(a.axes);
  if ((reads & attr::keepdims) && a.keepdims) text << " keepdims";
  if (reads & attr::perm) text << " perm=" << list(a.perm);
  if (reads & attr::begins) text << " begins=" << list(a.begins);
  if (reads & attr::ends) text << " ends=" << list(a.ends);
  if (reads & attr::eps) text << " eps=" << a.eps;
  if ((reads & attr::approximate) && a.approximate) text << " approximate=tanh";
  if (reads & attr::depth) text << " depth=" << a.depth;
  if (reads & attr::rate) text << " rate=" << a.rate;
  if (reads & attr::seed) text << " seed=" << a.seed;
  if (reads & attr::salt) text << " salt=" << a.salt;
  return text.str();
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
    case VariableRole::statistic:
      return "statistic";
    case VariableRole::half_copy:
      return "16-bit copy";
    case VariableRole::gradient_sum:
      return "gradient sum";
  }
  return "?";
}

std::string_view listed_module(std::string_view scope) {
  std::size_t start = 0;
  while (start < scope.size()) {
    std::size_t end = std::min(scope.find('.', start), scope.size());
    std::string_view part = scope.substr(start, end - start);
    bool index = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
    if (index) return scope.substr(0, end);
    start = end + 1;
  }
  return {};
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::update:
      return "update";
  }
  return "?";
}

Graph::ScopeGuard Graph::enter_scope(std::string_view name) {
  return ScopeGuard(*this, scope_id(name));
}

Graph::ScopeGuard Graph::enter_scope(ScopeId scope) {
  scope_name(scope);  // checks it exists
  return ScopeGuard(*this, scope);
}

ScopeId Graph::scope_id(std::string_view name) {
  auto found = scope_index_.find(name);
  if (found != scope_index_.end()) return found->second;
  auto id = static_cast<ScopeId>(scope_names_.size());
  scope_names_.emplace_back(name);
  scope_index_.emplace(name, id);
  return id;
}

const std::string& Graph::scope_name(ScopeId scope) const {
  return scope_names_.at(static_cast<std::size_t>(scope));
}

void Graph::adopt_scopes(const Graph& other) {
  if (scope_names_.size() > 1) throw GraphError("adopt_scopes: this graph already names scopes");
  scope_names_ = other.scope_names_;
  scope_index_ = other.scope_index_;
}

NodeList& NodeList::operator=(const NodeList& other) {
  if (this == &other) return *this;
  std::vector<std::vector<Node>> chunks;
  chunks.reserve(other.chunks_.size());
  for (const std::vector<Node>& chunk : other.chunks_) {
    chunks.emplace_back().reserve(kChunk);
    chunks.back().assign(chunk.begin(), chunk.end());
  }
  chunks_ = std::move(chunks);
  return *this;
}

void NodeList::push_back(Node&& node) {
  if (chunks_.empty() || chunks_.back().size() == kChunk) chunks_.emplace_back().reserve(kChunk);
  chunks_.back().push_back(std::move(node));
}

void NodeList::out_of_range(std::size_t index) const {
  throw std::out_of_range("node " + std::to_string(index) + " of a graph of " +
                          std::to_string(size()));
}

bool operator==(const NodeList& a, const NodeList& b) {
  return a.chunks_ == b.chunks_;
}

NodeId Graph::append(Node&& node) {
  nodes_.push_back(std::move(node));
  leaf_index_.push_back(-1);
  return static_cast<NodeId>(nodes_.size() - 1);
}

NodeId Graph::add(OpKind op, std::vector<NodeId> inputs, Attributes attrs, SourceLine location) {
  Node origin;
  origin.location = location;
  origin.scope = scope_;
  origin.phase = phase_;
  return add(op, std::move(inputs), std::move(attrs), origin);
}

NodeId Graph::add(OpKind op, std::vector<NodeId> inputs, Attributes attrs, const Node& origin) {
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  for (NodeId input : inputs) {
    if (input < 0 || static_cast<std::size_t>(input) >= nodes_.size()) {
      throw GraphError(std::string(op_name(op)) + " at " + origin.location.to_string() +
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
                     origin.location.to_string() + " " + error.what());
  }
  return append(Node{op, std::move(inputs), std::move(attrs), std::move(type), origin.location,
                     origin.scope, origin.phase});
}

NodeId Graph::add_like(const Node& origin, const Graph& origin_graph, std::vector<NodeId> inputs) {
  bool same_types = inputs.size() == origin.inputs.size();
  for (std::size_t i = 0; same_types && i < inputs.size(); ++i) {
    NodeId input = inputs[i];
    same_types =
        input >= 0 && static_cast<std::size_t>(input) < nodes_.size() &&
        nodes_[static_cast<std::size_t>(input)].type == origin_graph.node(origin.inputs[i]).type;
  }
  if (!same_types) return add(origin.op, std::move(inputs), origin.attrs, origin);
  return append(Node{origin.op, std::move(inputs), origin.attrs, origin.type, origin.location,
                     origin.scope, origin.phase});
}

NodeId Graph::add_input(const std::string& name, TensorType type, SourceLine location) {
  Node origin{OpKind::input, {}, {}, std::move(type), location, scope_, phase_};
  return add_input(name, origin);
}

NodeId Graph::add_input(const std::string& name, const Node& origin) {
  if (find_input(name)) throw GraphError("the graph already has an input named " + name);
  NodeId id =
      append(Node{OpKind::input, {}, {}, origin.type, origin.location, origin.scope, origin.phase});
  leaf_index_.back() = static_cast<std::int32_t>(inputs_.size());
  inputs_.push_back({name, id});
  return id;
}

NodeId Graph::add_variable(const std::string& name, TensorType type, VariableRole role,
                           Initializer init, SourceLine location) {
  Node origin{OpKind::variable, {}, {}, std::move(type), location, scope_, phase_};
  return add_variable(Variable{name, role, std::move(init), -1, {}}, origin);
}

void Graph::check_half_copy(const Variable& variable, const TensorType& type) const {
  bool copy = variable.role == VariableRole::half_copy;
  if (copy == variable.copy_of.empty()) {
    throw GraphError(
        "variable " + variable.name +
        (copy ? " is a 16-bit copy of no parameter"
              : " copies a parameter but is a " + std::string(role_name(variable.role))));
  }
  if (!copy) return;
  const Variable* parameter = find_variable(variable.copy_of);
  TensorType expected{type.shape, DType::f32};
  if (parameter == nullptr || parameter->role != VariableRole::parameter ||
      node(parameter->node).type != expected) {
    throw GraphError("variable " + variable.name + " copies " + variable.copy_of +
                     ", which is not an earlier parameter of type " + expected.to_string());
  }
  if (!is_half(type.dtype)) {
    throw GraphError("variable " + variable.name + " is a 16-bit copy of " + variable.copy_of +
                     " but holds " + type.to_string());
  }
}

NodeId Graph::add_variable(const Variable& variable, const Node& origin) {
  if (find_variable(variable.name))
    throw GraphError("the graph already has a variable named " + variable.name);
  check_half_copy(variable, origin.type);
  NodeId id = append(
      Node{OpKind::variable, {}, {}, origin.type, origin.location, origin.scope, origin.phase});
  leaf_index_.back() = static_cast<std::int32_t>(variables_.size());
  variable_index_.emplace(variable.name, variables_.size());
  variables_.push_back(Variable{variable.name, variable.role, variable.init, id, variable.copy_of});
  updated_.push_back(false);
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
  auto slot = static_cast<std::size_t>(leaf_index_[static_cast<std::size_t>(target->node)]);
  if (updated_[slot]) throw GraphError(variable + " is updated twice");
  updated_[slot] = true;
  updates_.push_back({variable, value});
}

void Graph::replace_with_constant(NodeId id, Attributes value) {
  const Node& node = this->node(id);
  if (node.op == OpKind::input || node.op == OpKind::variable)
    throw GraphError("%" + std::to_string(id) + " is a leaf: it cannot become a constant");
  TensorType type;
  try {
    type = infer_type(OpKind::constant, {}, value);
  } catch (const std::invalid_argument& error) {
    throw GraphError("constant for %" + std::to_string(id) + " " + error.what());
  }
  if (type != node.type) {
    throw GraphError("%" + std::to_string(id) + " is " + node.type.to_string() +
                     ", not the constant's " + type.to_string());
  }
  Node& replaced = nodes_.at(static_cast<std::size_t>(id));
  replaced.op = OpKind::constant;
  replaced.inputs.clear();
  replaced.attrs = std::move(value);
}

const Variable& Graph::variable_of(NodeId id) const {
  std::int32_t index = leaf_index_.at(static_cast<std::size_t>(id));
  if (node(id).op != OpKind::variable || index < 0)
    throw GraphError("%" + std::to_string(id) + " is not a variable");
  return variables_[static_cast<std::size_t>(index)];
}

const Variable* Graph::find_variable(std::string_view name) const {
  auto found = variable_index_.find(name);
  return found == variable_index_.end() ? nullptr : &variables_[found->second];
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

const std::string& Graph::leaf_name(NodeId id) const {
  static const std::string none;
  std::int32_t index = leaf_index_.at(static_cast<std::size_t>(id));
  if (index < 0) return none;
  auto slot = static_cast<std::size_t>(index);
  return node(id).op == OpKind::input ? inputs_[slot].name : variables_[slot].name;
}

bool operator==(const Graph& a, const Graph& b) {
  return a.nodes_ == b.nodes_ && a.inputs_ == b.inputs_ && a.variables_ == b.variables_ &&
         a.outputs_ == b.outputs_ && a.updates_ == b.updates_ && a.scope_names_ == b.scope_names_;
}

std::string Graph::node_text(NodeId id) const {
  const Node& node = this->node(id);
  std::ostringstream text;
  text << "%" << id << " = " << op_name(node.op);
  const std::string& name = leaf_name(id);
  if (!name.empty()) text << " \"" << name << "\"";
  for (std::size_t k = 0; k < node.inputs.size(); ++k)
    text << (k ? ", %" : " %") << node.inputs[k];
  text << attributes_text(node) << " : " << node.type.to_string() << "   # "
       << node.location.to_string();
  if (node.scope != 0) text << " " << scope_name(node.scope);
  if (node.phase != Phase::forward) text << " (" << phase_name(node.phase) << ")";
  return text.str();
}

std::string Graph::interface_text() const {
  std::ostringstream text;
  for (const NamedNode& output : outputs_)
    text << "output \"" << output.name << "\" = %" << output.node << "\n";
  for (const NamedNode& update : updates_)
    text << "update \"" << update.name << "\" = %" << update.node << "\n";
  return text.str();
}

std::string Graph::to_text() const {
  std::string text;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    text += node_text(static_cast<NodeId>(i)) + "\n";
  return text + interface_text();
}

}  // namespace csrun::graph
