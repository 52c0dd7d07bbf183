#include "class_catalog.hpp"

#include "spelling.hpp"

namespace csrun::config {

namespace {

std::string key_list(const Node& map) {
  return python_list(map.keys());
}

}  // namespace

ClassCatalog::ClassCatalog(std::string kind, std::vector<ClassEntry> entries,
                           std::string optional_suffix, bool null_disables)
    : kind_(std::move(kind)),
      entries_(std::move(entries)),
      optional_suffix_(std::move(optional_suffix)),
      null_disables_(null_disables) {}

const ClassEntry* ClassCatalog::find(std::string_view name) const {
  std::string wanted = lowercase(name);
  std::string suffix = lowercase(optional_suffix_);
  for (const ClassEntry& entry : entries_) {
    std::string candidate = lowercase(entry.name);
    if (candidate == wanted) return &entry;
    if (!suffix.empty() && candidate == wanted + suffix) return &entry;
  }
  return nullptr;
}

std::vector<std::string> ClassCatalog::names() const {
  std::vector<std::string> result;
  for (const ClassEntry& entry : entries_)
    result.push_back(entry.name);
  return result;
}

std::optional<ClassSpec> ClassCatalog::read(const Node& node, Diagnostics& diagnostics) const {
  if (!node.is_map()) {
    diagnostics.error(node.mark(), node.path(),
                      "Expected " + kind_ + " to be a dict. Got: " + node.render());
    return std::nullopt;
  }
  if (node.entries().size() != 1) {
    // At the class that is one too many (a --set that added one names the command line).
    const SourceMark& at = node.entries().size() > 1 ? node.entries()[1].key_mark : node.mark();
    diagnostics.error(at, node.path(),
                      "Expected " + kind_ + " to have a single key. Got: " + key_list(node) +
                          " (write {ClassName: {parameters}})");
    return std::nullopt;
  }
  const Node::Entry& entry = node.entries().front();
  Node name_node = Node::make_string(entry.key, entry.key_mark, join_path(node.path(), entry.key));
  return read(entry.key, name_node, entry.value, diagnostics);
}

std::optional<ClassSpec> ClassCatalog::read(const std::string& name, const Node& name_node,
                                            const Node& params, Diagnostics& diagnostics) const {
  const ClassEntry* entry = find(name);
  if (!entry) {
    std::vector<std::string> known = names();
    auto suggestion = closest_match(name, known);
    diagnostics.error(name_node.mark(), name_node.path(),
                      "unknown " + kind_ + " '" + name + "'" +
                          (suggestion ? "; did you mean '" + *suggestion + "'?"
                                      : "; known " + kind_ + "s: " + quoted_list(known, "and")));
    return std::nullopt;
  }
  ClassSpec spec{entry->name,
                 Node::make_map(params.mark(), params.path()),
                 name_node.mark(),
                 name_node.path(),
                 {},
                 false};
  if (params.is_null() && null_disables_) {
    spec.disabled = true;
    return spec;
  }
  const Node given = params.is_null() ? Node::make_map(params.mark(), params.path()) : params;
  if (!given.is_map()) {
    diagnostics.error(
        params.mark(), params.path(),
        "the parameters of " + entry->name + " must be a mapping; found " + params.describe());
    return std::nullopt;
  }
  if (!entry->no_effect_note.empty()) {
    diagnostics.warning(name_node.mark(), name_node.path(), entry->no_effect_note);
  }
  std::vector<std::string> missing;
  for (const std::string& key : entry->required) {
    if (!given.contains(key)) missing.push_back(key);
  }
  if (!missing.empty()) {
    diagnostics.error(given.mark(), given.path(),
                      "Missing required parameters " + python_list(missing) + " for " +
                          entry->name + ". Note, " + entry->name +
                          " requires the following parameters: " + python_list(entry->required));
  }
  spec.params = entry->params->check(given, diagnostics);
  return spec;
}

}  // namespace csrun::config
