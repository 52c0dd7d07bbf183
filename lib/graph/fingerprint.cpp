#include "fingerprint.hpp"

#include <cstdio>

namespace csrun::graph {

namespace {

void append_number(std::string& text, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%a", value);
  text += buffer;
}

template <class T>
void append_list(std::string& text, const char* name, const std::vector<T>& values) {
  if (values.empty()) return;
  text += std::string(" ") + name + "=";
  for (const T& value : values) {
    if constexpr (std::is_floating_point_v<T>) {
      append_number(text, value);
    } else {
      text += std::to_string(value);
    }
    text += ",";
  }
}

std::string attributes_key(const Attributes& a) {
  std::string text;
  append_list(text, "shape", a.shape);
  append_list(text, "axes", a.axes);
  append_list(text, "perm", a.perm);
  append_list(text, "begins", a.begins);
  append_list(text, "ends", a.ends);
  append_list(text, "values", a.values);
  text += " axis=" + std::to_string(a.axis) + " depth=" + std::to_string(a.depth) +
          " keepdims=" + std::to_string(a.keepdims) +
          " approximate=" + std::to_string(a.approximate) + " eps=";
  append_number(text, a.eps);
  text += " rate=";
  append_number(text, a.rate);
  text += " seed=" + std::to_string(a.seed) + " salt=" + std::to_string(a.salt) +
          " dtype=" + dtype_name(a.dtype);
  return text;
}

// One canonical line per node: what the fingerprint hashes and the diff compares.
std::string node_key(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  std::string text = op_name(node.op);
  std::string leaf = graph.leaf_name(id);
  if (!leaf.empty()) text += " \"" + leaf + "\"";
  text += "(";
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    text += (i ? ", %" : "%") + std::to_string(node.inputs[i]);
  return text + ")" + attributes_key(node.attrs) + " -> " + node.type.to_string();
}

std::string initializer_key(const Initializer& init) {
  std::string text = init.name;
  for (double value : {init.mean, init.std, init.a, init.b, init.gain, init.value}) {
    text += ",";
    append_number(text, value);
  }
  return text;
}

std::vector<std::string> interface_keys(const Graph& graph) {
  std::vector<std::string> keys;
  for (const NamedNode& input : graph.inputs())
    keys.push_back("input " + input.name + "=%" + std::to_string(input.node));
  for (const Variable& variable : graph.variables()) {
    keys.push_back("variable " + variable.name + "=%" + std::to_string(variable.node) + " " +
                   role_name(variable.role) + " " + initializer_key(variable.init));
  }
  for (const NamedNode& output : graph.outputs())
    keys.push_back("output " + output.name + "=%" + std::to_string(output.node));
  for (const NamedNode& update : graph.updates())
    keys.push_back("update " + update.name + "=%" + std::to_string(update.node));
  return keys;
}

std::uint64_t fnv1a(std::uint64_t hash, const std::string& text) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001B3ull;
  }
  return hash ^ 0x0Aull;  // a line end, so "ab","c" and "a","bc" differ
}

// A short description of a node for the diff.
std::string described(const Graph& graph, NodeId id) {
  return node_key(graph, id) + " at " + location_string(graph.node(id).location);
}

}  // namespace

std::string fingerprint(const Graph& graph) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (std::size_t i = 0; i < graph.size(); ++i)
    hash = fnv1a(hash, node_key(graph, static_cast<NodeId>(i)));
  for (const std::string& key : interface_keys(graph))
    hash = fnv1a(hash, key);
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

std::optional<std::string> first_difference(const Graph& before, const Graph& after) {
  std::size_t common = std::min(before.size(), after.size());
  for (std::size_t i = 0; i < common; ++i) {
    auto id = static_cast<NodeId>(i);
    if (node_key(before, id) == node_key(after, id)) continue;
    return "node %" + std::to_string(i) + " was " + described(before, id) + "; it is now " +
           described(after, id);
  }
  if (before.size() != after.size()) {
    const Graph& longer = before.size() > after.size() ? before : after;
    return "the graph had " + std::to_string(before.size()) + " nodes and now has " +
           std::to_string(after.size()) + "; the first node only one of them has is %" +
           std::to_string(common) + ", " + described(longer, static_cast<NodeId>(common));
  }
  std::vector<std::string> a = interface_keys(before);
  std::vector<std::string> b = interface_keys(after);
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string was = i < a.size() ? a[i] : "nothing";
    std::string now = i < b.size() ? b[i] : "nothing";
    if (was != now) return "the graph's " + was + " is now " + now;
  }
  return std::nullopt;
}

}  // namespace csrun::graph
