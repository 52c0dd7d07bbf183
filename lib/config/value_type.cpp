#include "value_type.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "schema.hpp"
#include "spelling.hpp"

namespace csrun::config {

namespace {

std::string format_bound(double value) {
  std::ostringstream out;
  out << std::setprecision(15) << value;
  return out.str();
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

std::string range_text(const NumberRange& range) {
  std::string lower =
      range.min ? std::string(range.min_exclusive ? "> " : "≥ ") + format_bound(*range.min) : "";
  std::string upper =
      range.max ? std::string(range.max_exclusive ? "< " : "≤ ") + format_bound(*range.max) : "";
  if (!lower.empty() && !upper.empty()) return lower + " and " + upper;
  return lower + upper;
}

}  // namespace

ValueType ValueType::any() {
  return ValueType();
}

ValueType ValueType::null() {
  ValueType type;
  type.tag_ = Tag::null;
  return type;
}

ValueType ValueType::boolean() {
  ValueType type;
  type.tag_ = Tag::boolean;
  return type;
}

ValueType ValueType::integer(std::optional<std::int64_t> min, std::optional<std::int64_t> max) {
  ValueType type;
  type.tag_ = Tag::integer;
  type.int_min_ = min;
  type.int_max_ = max;
  return type;
}

ValueType ValueType::number(NumberRange range) {
  ValueType type;
  type.tag_ = Tag::number;
  type.range_ = range;
  return type;
}

ValueType ValueType::string() {
  ValueType type;
  type.tag_ = Tag::string;
  return type;
}

ValueType ValueType::choice(std::vector<std::string> words, bool ignore_case) {
  ValueType type;
  type.tag_ = Tag::choice;
  type.words_ = std::move(words);
  type.ignore_case_ = ignore_case;
  return type;
}

ValueType ValueType::list_of(ValueType item, std::size_t min_size,
                             std::optional<std::size_t> max_size) {
  ValueType type;
  type.tag_ = Tag::list;
  type.children_.push_back(std::move(item));
  type.min_size_ = min_size;
  type.max_size_ = max_size;
  return type;
}

ValueType ValueType::mapping() {
  ValueType type;
  type.tag_ = Tag::mapping;
  return type;
}

ValueType ValueType::record(std::shared_ptr<const Schema> schema) {
  ValueType type;
  type.tag_ = Tag::record;
  type.schema_ = std::move(schema);
  return type;
}

ValueType ValueType::any_of(std::vector<ValueType> alternatives) {
  ValueType type;
  type.tag_ = Tag::any_of;
  type.children_ = std::move(alternatives);
  return type;
}

ValueType ValueType::or_null() const {
  return any_of({*this, null()});
}

std::string ValueType::describe() const {
  switch (tag_) {
    case Tag::any:
      return "any value";
    case Tag::null:
      return "null";
    case Tag::boolean:
      return "a boolean (true or false)";
    case Tag::integer: {
      NumberRange range;
      if (int_min_) range.min = static_cast<double>(*int_min_);
      if (int_max_) range.max = static_cast<double>(*int_max_);
      std::string bounds = range_text(range);
      return bounds.empty() ? "an integer" : "an integer " + bounds;
    }
    case Tag::number: {
      std::string bounds = range_text(range_);
      return bounds.empty() ? "a number" : "a number " + bounds;
    }
    case Tag::string:
      return "a string";
    case Tag::choice:
      return words_.size() == 1 ? "'" + words_[0] + "'" : "one of " + quoted_list(words_);
    case Tag::list: {
      std::string each = " (each item " + children_[0].describe() + ")";
      if (max_size_ && *max_size_ == min_size_) {
        return "a list of " + std::to_string(min_size_) + " items" + each;
      }
      if (min_size_ > 1) return "a list of at least " + std::to_string(min_size_) + " items" + each;
      return std::string(min_size_ == 1 ? "a non-empty list" : "a list") + each;
    }
    case Tag::mapping:
      return "a mapping";
    case Tag::record:
      return "a mapping of " + schema_->name() + " keys";
    case Tag::any_of: {
      // One flat list of alternatives: "an integer ≥ 1, 'auto', 'explore' or null".
      std::vector<std::string> parts;
      bool only_words = true;
      for (const ValueType& child : children_) {
        if (child.tag_ == Tag::choice) {
          for (const std::string& word : child.words_)
            parts.push_back("'" + word + "'");
        } else {
          only_words = only_words && child.tag_ == Tag::null;
          parts.push_back(child.describe());
        }
      }
      std::string text = only_words && parts.size() > 2 ? "one of " : "";
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) text += i + 1 == parts.size() ? " or " : ", ";
        text += parts[i];
      }
      return text;
    }
  }
  return "a value";
}

bool ValueType::matches_kind(const Node& value) const {
  switch (tag_) {
    case Tag::any:
      return true;
    case Tag::null:
      return value.is_null();
    case Tag::boolean:
      return value.is_bool();
    case Tag::integer:
    case Tag::number:
      return value.is_number() || (value.is_string() && value.looks_numeric());
    case Tag::string:
    case Tag::choice:
      return value.is_string();
    case Tag::list:
      return value.is_list();
    case Tag::mapping:
    case Tag::record:
      return value.is_map();
    case Tag::any_of:
      return std::any_of(children_.begin(), children_.end(),
                         [&](const ValueType& t) { return t.matches_kind(value); });
  }
  return false;
}

void ValueType::mismatch(const Node& value, Diagnostics& diagnostics) const {
  diagnostics.error(value.mark(), value.path(),
                    "expected " + describe() + "; found " + value.describe());
}

std::optional<Node> ValueType::check(const Node& value, Diagnostics& diagnostics) const {
  switch (tag_) {
    case Tag::any:
      return value;
    case Tag::list:
      return check_list(value, diagnostics);
    case Tag::mapping:
      if (value.is_map()) return value;
      mismatch(value, diagnostics);
      return std::nullopt;
    case Tag::record:
      if (!value.is_map()) {
        mismatch(value, diagnostics);
        return std::nullopt;
      }
      return schema_->check(value, diagnostics);
    case Tag::any_of:
      return check_any_of(value, diagnostics);
    default:
      return check_scalar(value, diagnostics);
  }
}

std::optional<Node> ValueType::check_scalar(const Node& value, Diagnostics& diagnostics) const {
  switch (tag_) {
    case Tag::null:
      if (value.is_null()) return value;
      break;
    case Tag::boolean:
      if (value.is_bool()) return value;
      break;
    case Tag::integer:
      return check_integer(value, diagnostics);
    case Tag::number:
      return check_number(value, diagnostics);
    case Tag::string:
      if (value.is_string()) return value;
      break;
    case Tag::choice:
      return check_choice(value, diagnostics);
    default:
      break;
  }
  mismatch(value, diagnostics);
  return std::nullopt;
}

std::optional<Node> ValueType::check_integer(const Node& value, Diagnostics& diagnostics) const {
  std::optional<std::int64_t> integer;
  if (value.is_int() && !value.out_of_range()) {
    integer = value.as_int();
  } else if (value.kind() == Node::Kind::number && std::isfinite(value.as_number()) &&
             std::floor(value.as_number()) == value.as_number() &&
             std::fabs(value.as_number()) < 9.0e18) {
    integer = static_cast<std::int64_t>(value.as_number());
  }
  if (!integer) {
    mismatch(value, diagnostics);
    return std::nullopt;
  }
  if ((int_min_ && *integer < *int_min_) || (int_max_ && *integer > *int_max_)) {
    mismatch(value, diagnostics);
    return std::nullopt;
  }
  return Node::make_int(*integer, value.mark(), value.path());
}

std::optional<double> numeric_string(const Node& value, Diagnostics& diagnostics) {
  if (!value.is_string() || !value.looks_numeric()) return std::nullopt;
  diagnostics.warning(value.mark(), value.path(),
                      "PyYAML (the Model Zoo's YAML loader) reads " + value.text() +
                          " as a string, not a number; csrun reads it as a number. Write it "
                          "with a dot and a signed exponent (for example 1.0e-5) so both agree");
  return std::strtod(value.text().c_str(), nullptr);
}

std::optional<Node> ValueType::check_number(const Node& value, Diagnostics& diagnostics) const {
  std::optional<double> number;
  if (value.is_int() && !value.out_of_range()) {
    number = value.as_number();
  } else if (value.kind() == Node::Kind::number) {
    number = value.as_number();
  } else {
    number = numeric_string(value, diagnostics);
  }
  if (!number) {
    mismatch(value, diagnostics);
    return std::nullopt;
  }
  bool in_range =
      std::isfinite(*number) &&
      !(range_.min && (range_.min_exclusive ? *number <= *range_.min : *number < *range_.min)) &&
      !(range_.max && (range_.max_exclusive ? *number >= *range_.max : *number > *range_.max));
  if (!in_range) {
    std::string expected = describe();
    if (!std::isfinite(*number)) expected = "a finite number";
    diagnostics.error(value.mark(), value.path(),
                      "expected " + expected + "; found " + value.describe());
    return std::nullopt;
  }
  return Node::make_number(*number, value.mark(), value.path());
}

std::optional<Node> ValueType::check_choice(const Node& value, Diagnostics& diagnostics) const {
  if (value.is_string()) {
    for (const std::string& word : words_) {
      bool same =
          ignore_case_ ? equal_ignoring_case(word, value.as_string()) : word == value.as_string();
      if (same) return Node::make_string(word, value.mark(), value.path());
    }
  }
  std::string hint = value.is_string() ? did_you_mean(value.as_string(), words_) : "";
  diagnostics.error(value.mark(), value.path(),
                    "expected " + describe() + "; found " + value.describe() + hint);
  return std::nullopt;
}

std::optional<Node> ValueType::check_list(const Node& value, Diagnostics& diagnostics) const {
  if (!value.is_list()) {
    mismatch(value, diagnostics);
    return std::nullopt;
  }
  std::size_t size = value.items().size();
  if (size < min_size_ || (max_size_ && size > *max_size_)) {
    mismatch(value, diagnostics);
    return std::nullopt;
  }
  Node result = Node::make_list(value.mark(), value.path());
  bool ok = true;
  for (const Node& item : value.items()) {
    std::optional<Node> checked = children_[0].check(item, diagnostics);
    ok = ok && checked.has_value();
    if (checked) result.push_back(std::move(*checked));
  }
  if (!ok) return std::nullopt;
  return result;
}

std::optional<Node> ValueType::check_any_of(const Node& value, Diagnostics& diagnostics) const {
  std::vector<const ValueType*> candidates;
  for (const ValueType& alternative : children_) {
    if (alternative.matches_kind(value)) candidates.push_back(&alternative);
  }
  // A mapping or list that only one alternative takes gets that alternative's detailed findings.
  if (candidates.size() == 1 && !value.is_scalar()) return candidates[0]->check(value, diagnostics);
  for (const ValueType* candidate : candidates) {
    Diagnostics trial;
    std::optional<Node> checked = candidate->check(value, trial);
    if (checked) {
      diagnostics.append(trial);
      return checked;
    }
  }
  std::string hint;
  if (value.is_string()) {
    std::vector<std::string> words;
    for (const ValueType& alternative : children_) {
      words.insert(words.end(), alternative.words_.begin(), alternative.words_.end());
    }
    hint = did_you_mean(value.as_string(), words);
  }
  diagnostics.error(value.mark(), value.path(),
                    "expected " + describe() + "; found " + value.describe() + hint);
  return std::nullopt;
}

}  // namespace csrun::config
