#include "overrides.hpp"

#include <charconv>
#include <stdexcept>

#include "yaml_reader.hpp"

namespace csrun::config {

namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::string joined(const std::vector<std::string>& parts, std::size_t first, std::size_t last) {
  std::string text;
  for (std::size_t i = first; i < last; ++i)
    text = join_path(text, parts[i]);
  return text;
}

std::optional<std::size_t> parse_index(const std::string& text) {
  std::size_t index = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return index;
}

}  // namespace

SetOverride parse_set_override(std::string_view assignment) {
  std::size_t equals = assignment.find('=');
  if (equals == std::string_view::npos) {
    throw std::invalid_argument(
        "--set expects KEY=VALUE (for example --set runconfig.max_steps=10);"
        " got '" +
        std::string(assignment) + "'");
  }
  std::string key(assignment.substr(0, equals));
  if (key.empty() || key.front() == '.' || key.back() == '.' ||
      key.find("..") != std::string::npos) {
    throw std::invalid_argument(
        "--set needs a dotted key path before '=' (for example "
        "train_input.batch_size=32); got '" +
        std::string(assignment) + "'");
  }
  return SetOverride{key, std::string(assignment.substr(equals + 1))};
}

void relocate(Node& value, const SourceMark& mark, const std::string& path) {
  value.set_mark(mark);
  value.set_path(path);
  for (std::size_t i = 0; i < value.items().size(); ++i) {
    relocate(value.items()[i], mark, join_path(path, std::to_string(i)));
  }
  for (Node::Entry& entry : value.entries()) {
    entry.key_mark = mark;
    relocate(entry.value, mark, join_path(path, entry.key));
  }
}

void apply_set_override(Node& params, const SetOverride& override_, Diagnostics& diagnostics) {
  SourceMark mark{override_.origin()};
  Diagnostics value_findings;
  Node value = read_yaml_text(override_.value_text, override_.origin(), value_findings);
  if (value_findings.has_errors()) {
    diagnostics.error(mark, override_.key_path,
                      "the value is not valid YAML: " + value_findings.all().front().message);
    return;
  }
  relocate(value, mark, override_.key_path);
  if (params.is_null()) params = Node::make_map(SourceMark{override_.origin()});
  std::vector<std::string> parts = split_path(override_.key_path);
  Node* current = &params;
  std::size_t i = 0;
  while (i < parts.size()) {
    if (current->is_list()) {
      auto index = parse_index(parts[i]);
      if (!index || *index >= current->items().size()) {
        diagnostics.error(mark, joined(parts, 0, i + 1),
                          "no item " + parts[i] + " in " +
                              (i ? joined(parts, 0, i) : "the params") + ", which is " +
                              current->describe() + " (items are numbered from 0)");
        return;
      }
      if (i + 1 == parts.size()) {
        current->items()[*index] = std::move(value);
        return;
      }
      current = &current->items()[*index];
      ++i;
      continue;
    }
    if (!current->is_map() && !current->is_null()) {
      diagnostics.error(
          mark, joined(parts, 0, i + 1),
          "cannot set a key inside " + joined(parts, 0, i) + ", which is " + current->describe());
      return;
    }
    if (current->is_null()) *current = Node::make_map(mark, joined(parts, 0, i));
    // Keys may hold dots themselves (csx.performance.micro_batch_size): prefer the longest
    // existing key.
    std::size_t last = parts.size();
    while (last > i + 1 && !current->contains(joined(parts, i, last)))
      --last;
    std::string key = joined(parts, i, last);
    if (last == parts.size()) {
      current->set(key, std::move(value), mark);
      return;
    }
    if (!current->contains(key))
      current->set(key, Node::make_map(mark, joined(parts, 0, last)), mark);
    current = current->find(key);
    i = last;
  }
}

}  // namespace csrun::config
