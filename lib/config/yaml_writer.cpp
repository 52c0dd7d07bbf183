#include "yaml_writer.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace csrun::config {

namespace {

// The shortest text that reads back as the same double: YAML 1.1 (PyYAML, and csrun's reader)
// takes "1e-05" for a string, so a mantissa always has its point ("1.0e-05"); the non-finite in
// YAML's spellings.
std::string number_text(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  std::string text = nlohmann::json(value).dump();
  std::size_t exponent = text.find_first_of("eE");
  if (exponent != std::string::npos && text.find('.') == std::string::npos)
    text.insert(exponent, ".0");
  return text;
}

void emit(YAML::Emitter& out, const Node& node) {
  if (node.is_map()) {
    out << YAML::BeginMap;
    for (const Node::Entry& entry : node.entries()) {
      out << YAML::Key << entry.key << YAML::Value;
      emit(out, entry.value);
    }
    out << YAML::EndMap;
  } else if (node.is_list()) {
    out << YAML::BeginSeq;
    for (const Node& item : node.items())
      emit(out, item);
    out << YAML::EndSeq;
  } else if (node.is_null()) {
    out << YAML::Null;
  } else if (node.is_string()) {
    // Quoted, so "true", "1e-3" or "~" stay strings when read back.
    out << YAML::DoubleQuoted << node.as_string();
  } else if (node.is_bool()) {
    out << YAML::TrueFalseBool << node.as_bool();
  } else if (node.is_int()) {
    out << node.as_int();
  } else {
    out << number_text(node.as_number());
  }
}

}  // namespace

std::string to_yaml(const Node& node) {
  YAML::Emitter out;
  emit(out, node);
  return std::string(out.c_str()) + "\n";
}

}  // namespace csrun::config
