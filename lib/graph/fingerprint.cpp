#include "fingerprint.hpp"

#include <cstdio>
#include <cstring>
#include <type_traits>

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
  for (double value : {init.mean, init.std, init.a, init.b, init.gain, init.value, init.scale}) {
    text += ",";
    append_number(text, value);
  }
  return text + "," + init.fan_mode + "," + init.distribution;
}

std::vector<std::string> interface_keys(const Graph& graph) {
  std::vector<std::string> keys;
  for (const NamedNode& input : graph.inputs())
    keys.push_back("input " + input.name + "=%" + std::to_string(input.node));
  for (const Variable& variable : graph.variables()) {
    std::string copied = variable.copy_of.empty() ? "" : " of " + variable.copy_of;
    keys.push_back("variable " + variable.name + "=%" + std::to_string(variable.node) + " " +
                   role_name(variable.role) + copied + " " + initializer_key(variable.init));
  }
  for (const NamedNode& output : graph.outputs())
    keys.push_back("output " + output.name + "=%" + std::to_string(output.node));
  for (const NamedNode& update : graph.updates())
    keys.push_back("update " + update.name + "=%" + std::to_string(update.node));
  return keys;
}

// FNV-1a over fixed-width little-endian values: the same on every machine. Every variable-length
// item is preceded by its length, so no two different sequences hash the same bytes.
class Hasher {
 public:
  void add(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (value >> (8 * i)) & 0xFF;
      hash_ *= 0x100000001B3ull;
    }
  }
  void add(double value) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    add(bits);
  }
  void add(const std::string& text) {
    add(static_cast<std::uint64_t>(text.size()));
    for (unsigned char c : text) {
      hash_ ^= c;
      hash_ *= 0x100000001B3ull;
    }
  }
  template <class T>
  void add(const std::vector<T>& values) {
    add(static_cast<std::uint64_t>(values.size()));
    for (const T& value : values) {
      if constexpr (std::is_floating_point_v<T>) {
        add(static_cast<double>(value));
      } else {
        add(static_cast<std::uint64_t>(value));
      }
    }
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xCBF29CE484222325ull;
};

void add_attributes(Hasher& hash, const Attributes& a) {
  hash.add(a.shape);
  hash.add(a.axes);
  hash.add(a.perm);
  hash.add(a.begins);
  hash.add(a.ends);
  hash.add(a.values);
  for (std::int64_t value : {a.axis, a.depth})
    hash.add(static_cast<std::uint64_t>(value));
  hash.add(static_cast<std::uint64_t>(a.keepdims) | static_cast<std::uint64_t>(a.approximate) << 1);
  hash.add(a.eps);
  hash.add(a.rate);
  hash.add(a.seed);
  hash.add(a.salt);
  hash.add(static_cast<std::uint64_t>(a.dtype));
}

void add_type(Hasher& hash, const TensorType& type) {
  hash.add(type.shape);
  hash.add(static_cast<std::uint64_t>(type.dtype));
}

// A short description of a node for the diff.
std::string described(const Graph& graph, NodeId id) {
  return node_key(graph, id) + " at " + location_string(graph.node(id).location);
}

}  // namespace

std::string fingerprint(const Graph& graph) {
  Hasher hash;
  for (const Node& node : graph.nodes()) {
    hash.add(static_cast<std::uint64_t>(node.op));
    hash.add(node.inputs);
    add_attributes(hash, node.attrs);
    add_type(hash, node.type);
  }
  for (const NamedNode& input : graph.inputs()) {
    hash.add(input.name);
    hash.add(static_cast<std::uint64_t>(input.node));
  }
  for (const Variable& variable : graph.variables()) {
    hash.add(variable.name);
    hash.add(static_cast<std::uint64_t>(variable.node));
    hash.add(static_cast<std::uint64_t>(variable.role));
    hash.add(variable.init.name);
    for (double value : {variable.init.mean, variable.init.std, variable.init.a, variable.init.b,
                         variable.init.gain, variable.init.value, variable.init.scale})
      hash.add(value);
    hash.add(variable.init.fan_mode);
    hash.add(variable.init.distribution);
    if (!variable.copy_of.empty()) hash.add(variable.copy_of);
  }
  for (const std::vector<NamedNode>* named : {&graph.outputs(), &graph.updates()}) {
    hash.add(static_cast<std::uint64_t>(named->size()));
    for (const NamedNode& item : *named) {
      hash.add(item.name);
      hash.add(static_cast<std::uint64_t>(item.node));
    }
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash.value()));
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
