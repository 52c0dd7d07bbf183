#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "source_mark.hpp"

namespace csrun::config {

// A params value, independent of the YAML library: null, bool, integer, float, string, list
// or (ordered) mapping. Every value remembers where it was written (mark) and under which
// dotted key path (path), so a finding can name both even after the legacy format has been
// rearranged into the trainer format.
class Node {
 public:
  enum class Kind { null, boolean, integer, number, string, list, map };
  struct Entry;

  Node() = default;
  static Node make_null(SourceMark mark = {}, std::string path = {});
  static Node make_bool(bool value, SourceMark mark = {}, std::string path = {});
  static Node make_int(std::int64_t value, SourceMark mark = {}, std::string path = {});
  static Node make_number(double value, SourceMark mark = {}, std::string path = {});
  static Node make_string(std::string value, SourceMark mark = {}, std::string path = {});
  static Node make_list(SourceMark mark = {}, std::string path = {});
  static Node make_map(SourceMark mark = {}, std::string path = {});

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_int() const { return kind_ == Kind::integer; }
  bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_map() const { return kind_ == Kind::map; }
  bool is_scalar() const { return kind_ != Kind::list && kind_ != Kind::map; }

  bool as_bool() const { return bool_; }
  std::int64_t as_int() const { return int_; }
  double as_number() const { return kind_ == Kind::integer ? static_cast<double>(int_) : number_; }
  const std::string& as_string() const { return text_; }

  // The scalar as written in the file (before type resolution).
  const std::string& text() const { return text_; }
  void set_text(std::string text) { text_ = std::move(text); }
  // A plain (unquoted) scalar that YAML 1.2 reads as a number but PyYAML, the Model Zoo's
  // loader, reads as a string (for example 1e-5).
  bool looks_numeric() const { return looks_numeric_; }
  void set_looks_numeric(bool value) { looks_numeric_ = value; }
  // An integer literal too large for 64 bits.
  bool out_of_range() const { return out_of_range_; }
  void set_out_of_range(bool value) { out_of_range_ = value; }

  const SourceMark& mark() const { return mark_; }
  void set_mark(SourceMark mark) { mark_ = std::move(mark); }
  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }

  const std::vector<Node>& items() const { return items_; }
  std::vector<Node>& items() { return items_; }
  void push_back(Node item);

  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }
  const Node* find(std::string_view key) const;
  Node* find(std::string_view key);
  const Entry* find_entry(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // A mapping's value under `key` when it has the type asked for, else `fallback`.
  double number_or(std::string_view key, double fallback) const;
  bool flag_or(std::string_view key, bool fallback) const;
  std::string text_or(std::string_view key, std::string_view fallback) const;
  // Replaces the value of an existing key (keeping its position) or appends a new entry.
  Node& set(std::string key, Node value, SourceMark key_mark = {});
  std::optional<Node> take(std::string_view key);
  // The mapping under `key`, created (with `mark` and `path`) when absent or not a mapping.
  Node& ensure_map(const std::string& key, SourceMark mark = {}, std::string path = {});
  std::vector<std::string> keys() const;

  // "the integer 5", "the string 'abc'", "a list of 2 items", "a mapping", "null".
  std::string describe() const;
  // A short YAML flow rendering for messages: 5, 'abc', [0.9, 0.95], {a: 1}.
  std::string render() const;
  // Structural equality of values (marks and paths are ignored; mappings compare as sets).
  bool same_value(const Node& other) const;

 private:
  Kind kind_ = Kind::null;
  bool bool_ = false;
  std::int64_t int_ = 0;
  double number_ = 0.0;
  std::string text_;
  bool looks_numeric_ = false;
  bool out_of_range_ = false;
  std::vector<Node> items_;
  std::vector<Entry> entries_;
  SourceMark mark_;
  std::string path_;
};

struct Node::Entry {
  std::string key;
  SourceMark key_mark;
  Node value;
};

// "a.b" + "c" -> "a.b.c"; handles an empty prefix.
std::string join_path(std::string_view prefix, std::string_view key);

}  // namespace csrun::config
