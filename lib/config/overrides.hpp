#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnostics.hpp"
#include "node.hpp"

namespace csrun::config {

// `--set KEY=VALUE`: KEY is a dotted path in the file's own layout (list items by index),
// VALUE is YAML (a scalar, or a flow list/mapping such as [0.9, 0.95]).
struct SetOverride {
  std::string key_path;
  std::string value_text;

  std::string origin() const { return "command line (--set " + key_path + "=" + value_text + ")"; }
};

// Splits "KEY=VALUE". Throws std::invalid_argument with a usage message when malformed.
SetOverride parse_set_override(std::string_view assignment);

// Writes the override into the params tree, creating mappings along the path as needed.
void apply_set_override(Node& params, const SetOverride& override_, Diagnostics& diagnostics);

// A runconfig key set by a CLI flag (--max_steps, --num_csx, ...), applied with the Model
// Zoo's legacy-to-trainer mapping. `value` carries its flag as origin.
struct RunconfigOverride {
  std::string key;
  Node value;
};

// Gives a value (and everything inside it) one origin and dotted path.
void relocate(Node& value, const SourceMark& mark, const std::string& path);

}  // namespace csrun::config
