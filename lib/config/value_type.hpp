#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "node.hpp"

namespace csrun::config {

class Schema;

// A string PyYAML keeps as a string but that reads as a number (1e-5: no dot, an unsigned
// exponent), as the number, with a warning that says how to write it so both agree; nullopt for
// anything else.
std::optional<double> numeric_string(const Node& value, Diagnostics& diagnostics);

struct NumberRange {
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  bool max_exclusive = false;
};

// The type of a params value, with its constraints: what `check` accepts and how an error
// describes what would be valid ("an integer ≥ 1", "one of 'relu' or 'gelu'").
class ValueType {
 public:
  enum class Tag {
    any,
    null,
    boolean,
    integer,
    number,
    string,
    choice,
    list,
    mapping,
    record,
    any_of
  };

  static ValueType any();
  static ValueType null();
  static ValueType boolean();
  static ValueType integer(std::optional<std::int64_t> min = std::nullopt,
                           std::optional<std::int64_t> max = std::nullopt);
  static ValueType number(NumberRange range = {});
  static ValueType string();
  // One of fixed words; with `ignore_case` the canonical spelling is returned.
  static ValueType choice(std::vector<std::string> words, bool ignore_case = false);
  static ValueType list_of(ValueType item, std::size_t min_size = 0,
                           std::optional<std::size_t> max_size = std::nullopt);
  static ValueType mapping();
  static ValueType record(std::shared_ptr<const Schema> schema);
  static ValueType any_of(std::vector<ValueType> alternatives);
  ValueType or_null() const;

  Tag tag() const { return tag_; }
  std::string describe() const;
  // Whether `value` is of the kind this type checks (a mapping for a record, and so on),
  // before any constraint.
  bool matches_kind(const Node& value) const;
  // Checks `value`, adding what is wrong to `diagnostics`. On success returns the value in
  // normal form: integers widened for float fields, choices in canonical spelling, defaults
  // filled in records.
  std::optional<Node> check(const Node& value, Diagnostics& diagnostics) const;

 private:
  std::optional<Node> check_scalar(const Node& value, Diagnostics& diagnostics) const;
  std::optional<Node> check_number(const Node& value, Diagnostics& diagnostics) const;
  std::optional<Node> check_integer(const Node& value, Diagnostics& diagnostics) const;
  std::optional<Node> check_choice(const Node& value, Diagnostics& diagnostics) const;
  std::optional<Node> check_list(const Node& value, Diagnostics& diagnostics) const;
  std::optional<Node> check_any_of(const Node& value, Diagnostics& diagnostics) const;
  void mismatch(const Node& value, Diagnostics& diagnostics) const;

  Tag tag_ = Tag::any;
  std::optional<std::int64_t> int_min_;
  std::optional<std::int64_t> int_max_;
  NumberRange range_;
  std::vector<std::string> words_;
  bool ignore_case_ = false;
  std::vector<ValueType> children_;  // the list item type, or the alternatives
  std::size_t min_size_ = 0;
  std::optional<std::size_t> max_size_;
  std::shared_ptr<const Schema> schema_;
};

}  // namespace csrun::config
