#include "yaml_expansion.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "node.hpp"

namespace csrun::config {

namespace {

// What a node expands to: its values (saturated at the meter's cap) and how many levels of
// nesting they reach below it.
struct Extent {
  std::uint64_t values = 0;
  int depth = 0;
};

// A value the reader converts right under a list or mapping: a list item, a mapping value, or
// a mapping merged into it (no step in the path, no level of nesting).
struct Child {
  YAML::Node node;
  std::optional<YAML::Mark> key_mark;
  std::optional<std::string> path_step;
};

// The values the reader converts right under `node`, in its order: the first of duplicate keys
// only, no key that is not a scalar, the mappings of a merge key that merges mappings only.
// Nothing when which values count depends on what the merge brings (a quoted '<<' key, which
// the merged mappings may hold too).
std::optional<std::vector<Child>> counted_children(const YAML::Node& node) {
  std::vector<Child> children;
  if (node.IsSequence()) {
    std::size_t index = 0;
    for (const YAML::Node& item : node)
      children.push_back({item, std::nullopt, std::to_string(index++)});
    return children;
  }
  if (!node.IsMap()) return children;
  std::set<std::string, std::less<>> keys;
  for (const auto& entry : node) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) continue;
    if (key.Scalar() != kYamlMergeKey) {
      if (keys.insert(key.Scalar()).second)
        children.push_back({entry.second, key.Mark(), key.Scalar()});
      continue;
    }
    if (key.Tag() != "?") return std::nullopt;
    for (YAML::Node& source : merged_mappings(entry.second))
      children.push_back({std::move(source), key.Mark(), std::nullopt});
  }
  return children;
}

// Measures each node once, however many aliases share it.
class ExpansionMeter {
 public:
  explicit ExpansionMeter(std::uint64_t cap) : cap_(cap) {}

  // Nothing for a node that holds itself, or whose count only conversion can tell.
  std::optional<Extent> measure(const YAML::Node& node) {
    if (!node.IsSequence() && !node.IsMap()) return Extent{1, 0};
    std::vector<Measured>& same_place = measured_[node.Mark().pos];
    for (const Measured& earlier : same_place) {
      if (earlier.node.is(node)) return earlier.extent;  // nothing yet while it is measured
    }
    same_place.push_back({node, std::nullopt});
    std::optional<Extent> extent = measure_children(node);
    for (Measured& earlier : measured_[node.Mark().pos]) {
      if (earlier.node.is(node)) earlier.extent = extent;
    }
    return extent;
  }

 private:
  struct Measured {
    YAML::Node node;
    std::optional<Extent> extent;
  };

  std::optional<Extent> measure_children(const YAML::Node& node) {
    std::optional<std::vector<Child>> children = counted_children(node);
    if (!children) return std::nullopt;
    Extent extent{1, 0};
    for (const Child& child : *children) {
      std::optional<Extent> inner = measure(child.node);
      if (!inner) return std::nullopt;
      extent.values = std::min(cap_, extent.values + inner->values);
      extent.depth = std::max(extent.depth, inner->depth + (child.path_step ? 1 : 0));
    }
    return extent;
  }

  std::uint64_t cap_;
  std::map<int, std::vector<Measured>> measured_;  // by the node's offset in the text
};

}  // namespace

std::vector<YAML::Node> merged_mappings(const YAML::Node& merge_value) {
  std::vector<YAML::Node> sources;
  if (merge_value.IsMap()) sources.push_back(merge_value);
  if (merge_value.IsSequence()) {
    for (const YAML::Node& item : merge_value)
      sources.push_back(item);
  }
  bool all_maps = !sources.empty() && std::all_of(sources.begin(), sources.end(),
                                                  [](const YAML::Node& n) { return n.IsMap(); });
  if (!all_maps) sources.clear();
  return sources;
}

std::optional<YamlPlace> first_value_past_limit(const YAML::Node& document,
                                                const YamlLimits& limits) {
  std::uint64_t cap = std::uint64_t{limits.max_values} + 1;
  ExpansionMeter meter(cap);
  std::optional<Extent> extent = meter.measure(document);
  if (!extent || extent->depth > limits.max_depth || extent->values < cap) return std::nullopt;
  // Walk down to the value with `limits.max_values` values before it in conversion order: the
  // measure of a node that holds one past the cap is known, so are its children's.
  YamlPlace place{document, std::nullopt, ""};
  for (std::uint64_t before = limits.max_values; before > 0;) {
    --before;  // the node itself
    std::vector<Child> children = counted_children(place.node).value();
    for (Child& child : children) {
      std::uint64_t values = meter.measure(child.node)->values;
      if (before >= values) {
        before -= values;
        continue;
      }
      std::string path = child.path_step ? join_path(place.path, *child.path_step) : place.path;
      place = {std::move(child.node), child.key_mark, std::move(path)};
      break;
    }
  }
  return place;
}

}  // namespace csrun::config
