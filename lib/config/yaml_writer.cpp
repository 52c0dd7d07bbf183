#include "yaml_writer.hpp"

#include <nlohmann/json.hpp>

namespace csrun::config {

namespace {

std::string scalar(const Node& node) {
  if (node.is_null()) return "null";
  if (node.is_string()) return nlohmann::json(node.as_string()).dump();
  if (node.is_bool()) return node.as_bool() ? "true" : "false";
  if (node.is_int()) return std::to_string(node.as_int());
  return nlohmann::json(node.as_number()).dump();
}

void emit(const Node& node, int indent, std::string& out) {
  std::string pad(static_cast<std::size_t>(indent), ' ');
  if (node.is_map()) {
    for (const Node::Entry& entry : node.entries()) {
      out += pad + nlohmann::json(entry.key).dump() + ":";
      const Node& value = entry.value;
      bool empty =
          (value.is_map() && value.entries().empty()) || (value.is_list() && value.items().empty());
      if (value.is_scalar() || empty) {
        out += " " + (empty ? std::string(value.is_map() ? "{}" : "[]") : scalar(value)) + "\n";
      } else {
        out += "\n";
        emit(value, indent + 2, out);
      }
    }
    return;
  }
  if (node.is_list()) {
    for (const Node& item : node.items()) {
      if (item.is_scalar()) {
        out += pad + "- " + scalar(item) + "\n";
      } else {
        out += pad + "-\n";
        emit(item, indent + 2, out);
      }
    }
    return;
  }
  out += pad + scalar(node) + "\n";
}

}  // namespace

std::string to_yaml(const Node& node) {
  std::string out;
  emit(node, 0, out);
  return out;
}

}  // namespace csrun::config
