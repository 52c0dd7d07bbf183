#include "schema.hpp"

#include <algorithm>

#include "spelling.hpp"

namespace csrun::config {

namespace {

constexpr std::size_t kMaxListedKeys = 16;

std::string valid_keys_hint(const Schema& schema) {
  std::vector<std::string> names = schema.active_names();
  if (names.empty()) return "; " + schema.name() + " takes no keys";
  if (names.size() > kMaxListedKeys) {
    return "; " + schema.name() + " has " + std::to_string(names.size()) +
           " valid keys (see docs/params.md)";
  }
  return "; valid keys of " + schema.name() + ": " + quoted_list(names, "and");
}

}  // namespace

Schema::Schema(std::string name, std::vector<Field> fields, UnknownKeys unknown_keys)
    : name_(std::move(name)), fields_(std::move(fields)), unknown_keys_(unknown_keys) {}

const Field* Schema::find(std::string_view key) const {
  auto it = std::find_if(fields_.begin(), fields_.end(),
                         [&](const Field& field) { return field.name == key; });
  return it == fields_.end() ? nullptr : &*it;
}

std::vector<std::string> Schema::active_names() const {
  std::vector<std::string> names;
  for (const Field& field : fields_) {
    if (field.status == FieldStatus::active) names.push_back(field.name);
  }
  return names;
}

void Schema::report_unknown(const Node::Entry& entry, const Node& map,
                            Diagnostics& diagnostics) const {
  std::string path = join_path(map.path(), entry.key);
  std::vector<std::string> names = active_names();
  auto suggestion = closest_match(entry.key, names);
  std::string hint = suggestion ? "; did you mean '" + *suggestion + "'?" : valid_keys_hint(*this);
  switch (unknown_keys_) {
    case UnknownKeys::error_pydantic:
      diagnostics.error(entry.key_mark, path, "Extra inputs are not permitted" + hint);
      return;
    case UnknownKeys::error_jsonschema:
      diagnostics.error(
          entry.key_mark, path,
          "Additional properties are not allowed ('" + entry.key + "' was unexpected)" + hint);
      return;
    case UnknownKeys::error_plain:
      diagnostics.error(entry.key_mark, path, "unknown key of " + name_ + hint);
      return;
    case UnknownKeys::warn_unused:
      diagnostics.warning(entry.key_mark, path,
                          "'" + entry.key + "' is not a parameter of " + name_ + " and is ignored" +
                              (suggestion ? hint : std::string()));
      return;
    case UnknownKeys::unchecked:
      return;
  }
}

Node Schema::check(const Node& map, Diagnostics& diagnostics) const {
  Node result = Node::make_map(map.mark(), map.path());
  for (const Node::Entry& entry : map.entries()) {
    const Field* field = find(entry.key);
    if (!field && unknown_keys_ == UnknownKeys::unchecked) {
      result.set(entry.key, entry.value, entry.key_mark);
      continue;
    }
    if (!field) {
      report_unknown(entry, map, diagnostics);
      continue;
    }
    std::string path = join_path(map.path(), entry.key);
    if (field->status == FieldStatus::no_effect) {
      diagnostics.warning(entry.key_mark, path, field->note);
      continue;
    }
    if (field->status == FieldStatus::removed) {
      diagnostics.error(entry.key_mark, path, field->note);
      continue;
    }
    if (std::optional<Node> checked = field->type.check(entry.value, diagnostics)) {
      result.set(entry.key, std::move(*checked), entry.key_mark);
    } else if (field->default_value) {
      // The error is reported; readers downstream still find a value of the right type.
      Node fallback = *field->default_value;
      fallback.set_path(path);
      fallback.set_mark(entry.value.mark());
      result.set(entry.key, std::move(fallback), entry.key_mark);
    }
  }
  for (const Field& field : fields_) {
    if (map.contains(field.name)) continue;
    if (field.required) {
      diagnostics.error(map.mark(), map.path(),
                        "Field required: '" + field.name + "' (" + field.type.describe() + ")");
    } else if (field.default_value) {
      Node default_value = *field.default_value;
      default_value.set_path(join_path(map.path(), field.name));
      default_value.set_mark(map.mark());
      result.set(field.name, std::move(default_value));
    }
  }
  return result;
}

Field optional_field(std::string name, ValueType type) {
  return Field{std::move(name), std::move(type), std::nullopt, false, FieldStatus::active, {}};
}

Field default_field(std::string name, ValueType type, Node default_value) {
  return Field{std::move(name), std::move(type),     std::move(default_value),
               false,           FieldStatus::active, {}};
}

Field required_field(std::string name, ValueType type) {
  return Field{std::move(name), std::move(type), std::nullopt, true, FieldStatus::active, {}};
}

Field no_effect_field(std::string name, std::string note) {
  return Field{std::move(name), ValueType::any(),       std::nullopt,
               false,           FieldStatus::no_effect, std::move(note)};
}

Field removed_field(std::string name, std::string message) {
  return Field{std::move(name), ValueType::any(),     std::nullopt,
               false,           FieldStatus::removed, std::move(message)};
}

std::shared_ptr<const Schema> make_schema(std::string name, std::vector<Field> fields,
                                          UnknownKeys unknown_keys) {
  return std::make_shared<const Schema>(std::move(name), std::move(fields), unknown_keys);
}

}  // namespace csrun::config
