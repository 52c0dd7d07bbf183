#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "yaml_reader.hpp"

namespace csrun::config {

// The key of a YAML merge (`<<: *defaults`), when it is plain (not quoted).
inline constexpr std::string_view kYamlMergeKey = "<<";

// The mappings that a merge key's value merges: the mapping itself, or the list's items when all
// are mappings. Nothing for anything else, which is no valid merge.
std::vector<YAML::Node> merged_mappings(const YAML::Node& merge_value);

// A value of a YAML document as the params reader converts it: the node, the mark of the key it
// is written under (none for list items and the document itself) and its dotted path.
struct YamlPlace {
  YAML::Node node;
  std::optional<YAML::Mark> key_mark;
  std::string path;
};

// The first value the params reader would convert past `limits.max_values`, in its order (a
// document, then each list item and mapping value in turn, a merged mapping where its `<<` key
// is), found without expanding an alias: each node that aliases share is measured once. An
// alias bomb of billions of values is refused at once instead of after converting
// `max_values` of them. Nothing when the document stays within the limit, and also when only
// converting it can tell what happens (nesting deeper than `limits.max_depth`, a node that
// holds itself): the converter then applies its own limits.
std::optional<YamlPlace> first_value_past_limit(const YAML::Node& document,
                                                const YamlLimits& limits);

}  // namespace csrun::config
