#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "diagnostics.hpp"
#include "node.hpp"

namespace csrun::config {

// Bounds that keep hostile input (alias bombs, deep nesting, huge files) from exhausting
// time or memory. Real params files are a few hundred values, a dozen levels deep.
struct YamlLimits {
  std::size_t max_bytes = 16u << 20;
  std::size_t max_values = 200'000;
  int max_depth = 64;
};

// Reads a params file strictly: duplicate keys are errors ("Found duplicate YAML key"),
// merge keys (<<) and anchors/aliases are resolved, scalars are typed as PyYAML does.
// Problems are added to `diagnostics`; the returned tree holds what could be read (null
// when nothing could).
Node read_yaml_file(const std::string& path, Diagnostics& diagnostics,
                    const YamlLimits& limits = {});

// The same for text held in memory; `origin` names it in diagnostics.
Node read_yaml_text(std::string_view text, const std::string& origin, Diagnostics& diagnostics,
                    const YamlLimits& limits = {});

}  // namespace csrun::config
