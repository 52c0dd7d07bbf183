#include "node.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace csrun::config {

namespace {

Node located(SourceMark mark, std::string path) {
  Node node;
  node.set_mark(std::move(mark));
  node.set_path(std::move(path));
  return node;
}

// The shortest text that reads back to the same double, as Python prints floats (10000.0,
// 1e-05, 0.0006).
std::string format_number(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  char buffer[400];
  auto [end, error] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string scientific(buffer, error == std::errc() ? end : buffer);
  int exponent = std::atoi(scientific.c_str() + scientific.find('e') + 1);
  if (exponent < -4 || exponent >= 16) return scientific;
  auto [fixed_end, fixed_error] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  std::string text(buffer, fixed_error == std::errc() ? fixed_end : buffer);
  if (text.find('.') == std::string::npos) text += ".0";
  return text;
}

}  // namespace

Node Node::make_null(SourceMark mark, std::string path) {
  return located(std::move(mark), std::move(path));
}

Node Node::make_bool(bool value, SourceMark mark, std::string path) {
  Node node = located(std::move(mark), std::move(path));
  node.kind_ = Kind::boolean;
  node.bool_ = value;
  node.text_ = value ? "true" : "false";
  return node;
}

Node Node::make_int(std::int64_t value, SourceMark mark, std::string path) {
  Node node = located(std::move(mark), std::move(path));
  node.kind_ = Kind::integer;
  node.int_ = value;
  node.text_ = std::to_string(value);
  return node;
}

Node Node::make_number(double value, SourceMark mark, std::string path) {
  Node node = located(std::move(mark), std::move(path));
  node.kind_ = Kind::number;
  node.number_ = value;
  node.text_ = format_number(value);
  return node;
}

Node Node::make_string(std::string value, SourceMark mark, std::string path) {
  Node node = located(std::move(mark), std::move(path));
  node.kind_ = Kind::string;
  node.text_ = std::move(value);
  return node;
}

Node Node::make_list(SourceMark mark, std::string path) {
  Node node = located(std::move(mark), std::move(path));
  node.kind_ = Kind::list;
  return node;
}

Node Node::make_map(SourceMark mark, std::string path) {
  Node node = located(std::move(mark), std::move(path));
  node.kind_ = Kind::map;
  return node;
}

void Node::push_back(Node item) {
  items_.push_back(std::move(item));
}

const Node::Entry* Node::find_entry(std::string_view key) const {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& entry) { return entry.key == key; });
  return it == entries_.end() ? nullptr : &*it;
}

const Node* Node::find(std::string_view key) const {
  const Entry* entry = find_entry(key);
  return entry ? &entry->value : nullptr;
}

Node* Node::find(std::string_view key) {
  return const_cast<Node*>(static_cast<const Node*>(this)->find(key));
}

double Node::number_or(std::string_view key, double fallback) const {
  const Node* value = find(key);
  return value && value->is_number() ? value->as_number() : fallback;
}

bool Node::flag_or(std::string_view key, bool fallback) const {
  const Node* value = find(key);
  return value && value->is_bool() ? value->as_bool() : fallback;
}

std::string Node::text_or(std::string_view key, std::string_view fallback) const {
  const Node* value = find(key);
  return value && value->is_string() ? value->as_string() : std::string(fallback);
}

Node& Node::set(std::string key, Node value, SourceMark key_mark) {
  kind_ = Kind::map;
  for (Entry& entry : entries_) {
    if (entry.key != key) continue;
    entry.value = std::move(value);
    if (key_mark.has_position() || !key_mark.origin.empty()) entry.key_mark = std::move(key_mark);
    return entry.value;
  }
  entries_.push_back(Entry{std::move(key), std::move(key_mark), std::move(value)});
  return entries_.back().value;
}

std::optional<Node> Node::take(std::string_view key) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& entry) { return entry.key == key; });
  if (it == entries_.end()) return std::nullopt;
  Node value = std::move(it->value);
  entries_.erase(it);
  return value;
}

Node& Node::ensure_map(const std::string& key, SourceMark mark, std::string path) {
  if (Node* existing = find(key); existing && existing->is_map()) return *existing;
  return set(key, make_map(std::move(mark), std::move(path)));
}

std::vector<std::string> Node::keys() const {
  std::vector<std::string> result;
  result.reserve(entries_.size());
  for (const Entry& entry : entries_)
    result.push_back(entry.key);
  return result;
}

std::string Node::describe() const {
  switch (kind_) {
    case Kind::null:
      return "null";
    case Kind::boolean:
      return std::string("the boolean ") + (bool_ ? "true" : "false");
    case Kind::integer:
      return "the integer " + text_ + (out_of_range_ ? " (too large for 64 bits)" : "");
    case Kind::number:
      return "the number " + text_;
    case Kind::string:
      return "the string '" + text_ + "'";
    case Kind::list:
      return "a list of " + std::to_string(items_.size()) +
             (items_.size() == 1 ? " item" : " items");
    case Kind::map:
      return "a mapping";
  }
  return "a value";
}

std::string Node::render() const {
  switch (kind_) {
    case Kind::null:
      return "null";
    case Kind::boolean:
    case Kind::integer:
    case Kind::number:
      return text_;
    case Kind::string:
      return "'" + text_ + "'";
    case Kind::list: {
      std::string text = "[";
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (i > 0) text += ", ";
        text += items_[i].render();
      }
      return text + "]";
    }
    case Kind::map: {
      std::string text = "{";
      for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (i > 0) text += ", ";
        text += entries_[i].key + ": " + entries_[i].value.render();
      }
      return text + "}";
    }
  }
  return {};
}

bool Node::same_value(const Node& other) const {
  if (is_number() && other.is_number()) return as_number() == other.as_number();
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::null:
      return true;
    case Kind::boolean:
      return bool_ == other.bool_;
    case Kind::integer:
    case Kind::number:
      return as_number() == other.as_number();
    case Kind::string:
      return text_ == other.text_;
    case Kind::list:
      return std::equal(items_.begin(), items_.end(), other.items_.begin(), other.items_.end(),
                        [](const Node& a, const Node& b) { return a.same_value(b); });
    case Kind::map:
      if (entries_.size() != other.entries_.size()) return false;
      return std::all_of(entries_.begin(), entries_.end(), [&](const Entry& entry) {
        const Node* match = other.find(entry.key);
        return match && entry.value.same_value(*match);
      });
  }
  return false;
}

std::string join_path(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  std::string path(prefix);
  path += '.';
  path += key;
  return path;
}

}  // namespace csrun::config
