#include "plain_scalar.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace csrun::config {

namespace {

bool is_one_of(std::string_view text, std::initializer_list<std::string_view> words) {
  for (std::string_view word : words) {
    if (text == word) return true;
  }
  return false;
}

bool is_digit(char c, int base) {
  if (base == 2) return c == '0' || c == '1';
  if (base == 8) return c >= '0' && c <= '7';
  if (base == 10) return c >= '0' && c <= '9';
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Digits of `base` and underscores, at least one digit.
bool all_digits(std::string_view text, int base) {
  bool any_digit = false;
  for (char c : text) {
    if (c == '_') continue;
    if (!is_digit(c, base)) return false;
    any_digit = true;
  }
  return any_digit;
}

std::string without_underscores(std::string_view text) {
  std::string result;
  for (char c : text) {
    if (c != '_') result += c;
  }
  return result;
}

struct IntegerSyntax {
  bool negative = false;
  int base = 10;
  std::string digits;
};

// PyYAML int: [-+]?0b[01_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+
std::optional<IntegerSyntax> parse_integer_syntax(std::string_view text) {
  IntegerSyntax syntax;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    syntax.negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'x')) {
    syntax.base = text[1] == 'b' ? 2 : 16;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    syntax.base = 8;
    text.remove_prefix(1);
  } else if (text[0] == '_') {
    return std::nullopt;
  }
  if (!all_digits(text, syntax.base)) return std::nullopt;
  syntax.digits = without_underscores(text);
  return syntax;
}

// PyYAML float: [-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)? | \.[0-9_]+([eE][-+][0-9]+)?
//               | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)
bool is_pyyaml_float(std::string_view text) {
  std::string_view rest = text;
  bool signed_form = !rest.empty() && (rest[0] == '-' || rest[0] == '+');
  if (signed_form) rest.remove_prefix(1);
  if (is_one_of(rest, {".inf", ".Inf", ".INF"})) return true;
  if (!signed_form && is_one_of(rest, {".nan", ".NaN", ".NAN"})) return true;
  std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return false;
  std::string_view whole = rest.substr(0, dot);
  std::string_view after = rest.substr(dot + 1);
  if (whole.empty()) {
    if (signed_form) return false;
  } else if (whole[0] < '0' || whole[0] > '9' || !all_digits(whole, 10)) {
    return false;
  }
  std::size_t exponent = after.find_first_of("eE");
  std::string_view fraction = after.substr(0, exponent);
  if (!fraction.empty() && !all_digits(fraction, 10)) return false;
  if (whole.empty() && fraction.empty()) return false;
  if (exponent == std::string_view::npos) return true;
  std::string_view power = after.substr(exponent + 1);
  if (power.size() < 2 || (power[0] != '-' && power[0] != '+')) return false;
  power.remove_prefix(1);
  for (char c : power) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

double parse_float(std::string_view text) {
  std::string clean = without_underscores(text);
  std::string_view body = clean;
  bool negative = !body.empty() && body[0] == '-';
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) body.remove_prefix(1);
  if (body.size() == 4 && (body[1] == 'i' || body[1] == 'I')) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (body.size() == 4 && (body[1] == 'n' || body[1] == 'N')) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return std::strtod(clean.c_str(), nullptr);
}

// YAML 1.2 / JSON numbers that PyYAML leaves as strings: 1e-5, 1E5, 1.0e5, 3e+2.
bool looks_like_yaml12_number(std::string_view text) {
  if (text.empty()) return false;
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return false;
  return copy.find_first_of("eE") != std::string::npos;
}

}  // namespace

Node resolve_plain_scalar(std::string_view text, SourceMark mark, std::string path) {
  if (is_one_of(text, {"", "~", "null", "Null", "NULL"})) {
    return Node::make_null(std::move(mark), std::move(path));
  }
  if (is_one_of(text, {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    Node node = Node::make_bool(true, std::move(mark), std::move(path));
    node.set_text(std::string(text));
    return node;
  }
  if (is_one_of(text, {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    Node node = Node::make_bool(false, std::move(mark), std::move(path));
    node.set_text(std::string(text));
    return node;
  }
  if (auto syntax = parse_integer_syntax(text)) {
    std::uint64_t magnitude = 0;
    const char* first = syntax->digits.data();
    const char* last = first + syntax->digits.size();
    auto [end, error] = std::from_chars(first, last, magnitude, syntax->base);
    constexpr auto max_positive =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    bool fits = error == std::errc() && end == last &&
                magnitude <= max_positive + (syntax->negative ? 1u : 0u);
    Node node = Node::make_int(0, std::move(mark), std::move(path));
    if (fits) {
      node = Node::make_int(syntax->negative ? static_cast<std::int64_t>(0 - magnitude)
                                             : static_cast<std::int64_t>(magnitude),
                            node.mark(), node.path());
    } else {
      node.set_out_of_range(true);
    }
    node.set_text(std::string(text));
    return node;
  }
  if (is_pyyaml_float(text)) {
    Node node = Node::make_number(parse_float(text), std::move(mark), std::move(path));
    node.set_text(std::string(text));
    return node;
  }
  Node node = Node::make_string(std::string(text), std::move(mark), std::move(path));
  node.set_looks_numeric(looks_like_yaml12_number(text));
  return node;
}

}  // namespace csrun::config
