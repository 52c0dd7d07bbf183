#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "diagnostics.hpp"
#include "node.hpp"
#include "value_type.hpp"

namespace csrun::config {

enum class FieldStatus {
  active,     // a key csrun honours
  no_effect,  // accepted for compatibility (earlier releases, other back ends), with a warning
  removed,    // refused with a dedicated message (as the Model Zoo does for some keys)
};

struct Field {
  std::string name;
  ValueType type = ValueType::any();
  std::optional<Node> default_value;
  bool required = false;
  FieldStatus status = FieldStatus::active;
  std::string note;  // why a key has no effect, or the whole message of a removed key
};

// How a mapping's unknown keys are reported: each section uses the wording its Model Zoo
// counterpart uses, followed by csrun's did-you-mean.
enum class UnknownKeys {
  error_pydantic,    // "Extra inputs are not permitted"
  error_jsonschema,  // "Additional properties are not allowed ('k' was unexpected)"
  error_plain,       // "unknown key"
  warn_unused,       // accepted, with a warning that the key is not used
  unchecked,         // accepted as written: a section whose keys csrun does not know
};

// The keys of one params mapping: their types, defaults and status.
class Schema {
 public:
  Schema(std::string name, std::vector<Field> fields,
         UnknownKeys unknown_keys = UnknownKeys::error_pydantic);

  const std::string& name() const { return name_; }
  const std::vector<Field>& fields() const { return fields_; }
  const Field* find(std::string_view key) const;
  // The keys a user may write (active ones), for suggestions and listings.
  std::vector<std::string> active_names() const;

  // Checks every key of `map`; returns the mapping in normal form with defaults filled in and
  // no-effect keys dropped. An invalid value is reported and replaced by the field's default
  // (or left out when there is none), so readers always find well-typed values.
  Node check(const Node& map, Diagnostics& diagnostics) const;

  // Reports `key` (found in `map`) as unknown in this schema's wording.
  void report_unknown(const Node::Entry& entry, const Node& map, Diagnostics& diagnostics) const;

 private:
  std::string name_;
  std::vector<Field> fields_;
  UnknownKeys unknown_keys_;
};

// Builders that keep schema tables short.
template <class T>
Node value(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return Node::make_bool(v);
  } else if constexpr (std::is_integral_v<T>) {
    return Node::make_int(static_cast<std::int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return Node::make_number(static_cast<double>(v));
  } else {
    return Node::make_string(std::string(v));
  }
}
Field optional_field(std::string name, ValueType type);
Field default_field(std::string name, ValueType type, Node default_value);
Field required_field(std::string name, ValueType type);
Field no_effect_field(std::string name, std::string note);
Field removed_field(std::string name, std::string message);

std::shared_ptr<const Schema> make_schema(std::string name, std::vector<Field> fields,
                                          UnknownKeys unknown_keys = UnknownKeys::error_pydantic);

}  // namespace csrun::config
