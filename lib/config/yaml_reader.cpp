#include "yaml_reader.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "plain_scalar.hpp"
#include "yaml_expansion.hpp"

namespace csrun::config {

namespace {

constexpr std::string_view kStandardTagPrefix = "tag:yaml.org,2002:";

SourceMark to_mark(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return SourceMark{origin, 1, 1};
  return SourceMark{origin, mark.line + 1, mark.column + 1};
}

SourceMark position_of_offset(const std::string& origin, std::string_view text,
                              std::size_t offset) {
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return SourceMark{origin, line, column};
}

// Length of the UTF-8 sequence starting at text[i], or 0 when it is malformed.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  auto byte = static_cast<unsigned char>(text[i]);
  std::size_t length = byte < 0x80           ? 1
                       : (byte >> 5) == 0x6  ? 2
                       : (byte >> 4) == 0xE  ? 3
                       : (byte >> 3) == 0x1E ? 4
                                             : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return 0;
  }
  return length;
}

// A params file is UTF-8 text; anything else is reported before YAML parsing starts.
bool check_text(std::string_view text, const std::string& origin, Diagnostics& diagnostics) {
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\0') {
      diagnostics.error(position_of_offset(origin, text, i), "",
                        "the file holds binary data (a NUL byte); a params file is YAML text");
      return false;
    }
    std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      diagnostics.error(position_of_offset(origin, text, i), "",
                        "the file is not valid UTF-8 text; a params file is YAML text");
      return false;
    }
    i += length;
  }
  return true;
}

// A ',' outside any flow collection that comes first on its line (after blanks and node
// properties: an &anchor or a !tag) or right after a quoted scalar ("'a', b"), and its line
// (1-based; 0: none). yaml-cpp 0.7 never returns from many such files (", b", "&a, b", "'a', b",
// or an indented ", b" in a mapping loop allocating without end), so they are reported here,
// before yaml-cpp sees them; the only valid YAML this refuses is a plain scalar continued on a
// line that starts with a comma. Quoted scalars and comments are skipped; a quote counts only
// where a scalar can start or right after a quoted scalar ("a""b", c), and a bracket outside a
// flow collection only where a scalar can start ("a[b" is a plain scalar in block context).
struct StrayComma {
  std::size_t line = 0;
  bool after_quoted = false;
};

StrayComma stray_flow_entry(std::string_view text) {
  int depth = 0;
  std::size_t line = 1;
  char quote = 0;
  char previous = '\n';
  bool line_content = false;  // anything but blanks and node properties on this line
  bool after_quoted = false;  // only blanks since a quoted scalar ended outside a collection
  auto name_ends = [](char c) {
    return std::string_view(" \t\r\n,[]{}").find(c) != std::string_view::npos;
  };
  for (std::size_t i = 0; i < text.size(); previous = text[i], ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      line_content = false;
      after_quoted = false;
    }
    if (quote) {
      if ((c == '\\' && quote == '"') ||
          (c == '\'' && quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'')) {
        ++i;  // an escape: \x in double quotes, '' (one quote) in single quotes
      } else if (c == quote) {
        quote = 0;
        after_quoted = depth == 0;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    if (c == ',' && depth == 0 && after_quoted) return {line, true};
    // "a""b", c loops yaml-cpp as "a", c does: a quote right after a quoted value starts another.
    bool follows_quoted = after_quoted && (previous == '"' || previous == '\'');
    after_quoted = false;
    bool token_start = std::string_view(" \t\n:,[{-").find(previous) != std::string_view::npos;
    if (c == '#' && (previous == ' ' || previous == '\t' || previous == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
    } else if ((c == '&' || c == '!') && token_start && depth == 0) {
      while (i + 1 < text.size() && !name_ends(text[i + 1]))
        ++i;
    } else if (c == ',' && depth == 0 && !line_content) {
      return {line, false};
    } else {
      line_content = true;
      if ((c == '"' || c == '\'') && (token_start || follows_quoted)) {
        quote = c;
      } else if ((c == '[' || c == '{') && (token_start || depth > 0)) {
        ++depth;
      } else if ((c == ']' || c == '}') && depth > 0) {
        --depth;
      }
    }
  }
  return {};
}

// Collections and nulls are reported at their key, which is where a reader looks.
SourceMark value_mark(const std::string& origin, const YAML::Node& yaml,
                      const SourceMark* key_mark) {
  if (key_mark && (yaml.IsNull() || !yaml.IsScalar())) return *key_mark;
  return to_mark(origin, yaml.Mark());
}

// The path of something nested too deep is itself too long to read: a limit names the section.
std::string section_of(const std::string& path) {
  return path.substr(0, path.find('.'));
}

std::string too_many_values_message(const YamlLimits& limits) {
  return "the file expands to more than " + std::to_string(limits.max_values) +
         " values (anchors and aliases are expanded); is this an alias bomb?";
}

class Converter {
 public:
  Converter(const std::string& origin, Diagnostics& diagnostics, const YamlLimits& limits)
      : origin_(origin), diagnostics_(diagnostics), limits_(limits) {}

  Node convert(const YAML::Node& yaml, const std::string& path, int depth,
               const SourceMark* key_mark) {
    // The first limit met ends the conversion: what is left of the tree is discarded, and
    // converting it could take long (a list that holds itself, expanded to the depth limit
    // along every path until the value limit: 1.7 s, half a minute under ASan).
    if (limit_reported_) return Node::make_null();
    SourceMark mark = value_mark(origin_, yaml, key_mark);
    if (!within_limits(mark, path, depth)) return Node::make_null(mark, path);
    switch (yaml.Type()) {
      case YAML::NodeType::Scalar:
        return convert_scalar(yaml, std::move(mark), path);
      case YAML::NodeType::Sequence:
        return convert_sequence(yaml, std::move(mark), path, depth);
      case YAML::NodeType::Map:
        return convert_map(yaml, std::move(mark), path, depth);
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return Node::make_null(std::move(mark), path);
    }
    return Node::make_null(std::move(mark), path);
  }

  bool exceeded_limits() const { return limit_reported_; }

 private:
  bool within_limits(const SourceMark& mark, const std::string& path, int depth) {
    if (depth > limits_.max_depth) {
      report_limit(mark, path,
                   "values are nested more than " + std::to_string(limits_.max_depth) +
                       " levels deep; params files are a few levels deep");
      return false;
    }
    if (++values_ > limits_.max_values) {
      report_limit(mark, path, too_many_values_message(limits_));
      return false;
    }
    return true;
  }

  void report_limit(const SourceMark& mark, const std::string& path, std::string message) {
    limit_reported_ = true;
    diagnostics_.error(mark, section_of(path), std::move(message));
  }

  bool check_collection_tag(const YAML::Node& yaml, const SourceMark& mark, const std::string& path,
                            std::string_view expected) {
    const std::string& tag = yaml.Tag();
    if (tag.empty() || tag == "?" || tag == "!" ||
        tag == std::string(kStandardTagPrefix) + std::string(expected)) {
      return true;
    }
    diagnostics_.error(mark, path,
                       "unsupported YAML tag '" + tag +
                           "'; params files hold plain "
                           "mappings, lists and scalars");
    return false;
  }

  Node convert_scalar(const YAML::Node& yaml, SourceMark mark, const std::string& path) {
    const std::string& tag = yaml.Tag();
    const std::string& text = yaml.Scalar();
    if (tag == "!") return Node::make_string(text, std::move(mark), path);
    if (tag == "?" || tag.empty()) return resolve_plain_scalar(text, std::move(mark), path);
    if (tag.rfind(kStandardTagPrefix, 0) != 0) {
      diagnostics_.error(mark, path,
                         "unsupported YAML tag '" + tag +
                             "'; params files hold "
                             "plain mappings, lists and scalars");
      return Node::make_string(text, std::move(mark), path);
    }
    std::string type = tag.substr(kStandardTagPrefix.size());
    if (type == "str") return Node::make_string(text, std::move(mark), path);
    if (type != "int" && type != "float" && type != "bool" && type != "null") {
      diagnostics_.error(mark, path,
                         "unsupported YAML tag '" + tag +
                             "'; params files hold "
                             "plain mappings, lists and scalars");
      return Node::make_string(text, std::move(mark), path);
    }
    Node resolved = resolve_plain_scalar(text, mark, path);
    bool matches = (type == "int" && resolved.is_int()) ||
                   (type == "float" && resolved.is_number()) ||
                   (type == "bool" && resolved.is_bool()) || (type == "null" && resolved.is_null());
    if (type == "float" && resolved.is_int()) {
      return Node::make_number(resolved.as_number(), std::move(mark), path);
    }
    if (!matches) {
      diagnostics_.error(mark, path, "the value '" + text + "' does not fit its tag !!" + type);
    }
    return resolved;
  }

  Node convert_sequence(const YAML::Node& yaml, SourceMark mark, const std::string& path,
                        int depth) {
    check_collection_tag(yaml, mark, path, "seq");
    Node list = Node::make_list(std::move(mark), path);
    list.items().reserve(yaml.size());
    std::size_t index = 0;
    for (const YAML::Node& item : yaml) {
      list.push_back(convert(item, join_path(path, std::to_string(index++)), depth + 1, nullptr));
    }
    return list;
  }

  std::string key_text(const YAML::Node& key, const SourceMark& mark, const std::string& path) {
    if (key.IsScalar()) return key.Scalar();
    diagnostics_.error(
        mark, path,
        std::string("a mapping key must be a plain name; found ") + (key.IsMap() ? "a mapping"
                                                                     : key.IsSequence() ? "a list"
                                                                                        : "null"));
    return {};
  }

  Node convert_map(const YAML::Node& yaml, SourceMark mark, const std::string& path, int depth) {
    check_collection_tag(yaml, mark, path, "map");
    open_maps_.push_back(yaml);
    Node map = Node::make_map(std::move(mark), path);
    map.entries().reserve(yaml.size());
    std::set<std::string> explicit_keys;
    for (auto it = yaml.begin(); it != yaml.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() != kYamlMergeKey) {
        explicit_keys.insert(it->first.Scalar());
      }
    }
    for (auto it = yaml.begin(); it != yaml.end(); ++it) {
      SourceMark key_mark = to_mark(origin_, it->first.Mark());
      std::string key = key_text(it->first, key_mark, path);
      if (key.empty() && !it->first.IsScalar()) continue;
      std::string child_path = join_path(path, key);
      if (key == kYamlMergeKey && it->first.Tag() == "?") {
        merge_into(map, it->second, key_mark, path, depth, explicit_keys);
        continue;
      }
      // Merged keys never collide here: merging skips keys the mapping writes itself.
      if (const Node::Entry* first = map.find_entry(key)) {
        diagnostics_.error(key_mark, child_path,
                           "Found duplicate YAML key: '" + key + "' (first defined at line " +
                               std::to_string(first->key_mark.line) + ", column " +
                               std::to_string(first->key_mark.column) + ")");
        continue;
      }
      Node value = convert(it->second, child_path, depth + 1, &key_mark);
      map.set(key, std::move(value), key_mark);
    }
    open_maps_.pop_back();
    return map;
  }

  // YAML merge key: `<<: *anchor` or `<<: [*a, *b]`. Keys written in the mapping itself win,
  // and among several merged mappings the earlier one wins.
  void merge_into(Node& map, const YAML::Node& source, const SourceMark& key_mark,
                  const std::string& path, int depth, const std::set<std::string>& explicit_keys) {
    std::vector<YAML::Node> sources = merged_mappings(source);
    if (sources.empty()) {
      diagnostics_.error(key_mark, path, "a merge key (<<) takes a mapping or a list of mappings");
      return;
    }
    for (const YAML::Node& item : sources) {
      // A merge nests nothing, so the depth limit would never stop a mapping merging itself.
      if (std::any_of(open_maps_.begin(), open_maps_.end(),
                      [&](const YAML::Node& open) { return open.is(item); })) {
        diagnostics_.error(key_mark, path,
                           "a merge key (<<) merges a mapping that holds it; the merge would "
                           "never end");
        continue;
      }
      Node merged = convert(item, path, depth, &key_mark);
      for (Node::Entry& entry : merged.entries()) {
        if (explicit_keys.count(entry.key) || map.contains(entry.key)) continue;
        map.set(entry.key, std::move(entry.value), entry.key_mark);
      }
    }
  }

  const std::string& origin_;
  Diagnostics& diagnostics_;
  const YamlLimits& limits_;
  std::vector<YAML::Node> open_maps_;  // the mappings being converted, outermost first
  std::size_t values_ = 0;
  bool limit_reported_ = false;
};

// YAML indents with spaces only; a tab there makes yaml-cpp report something cryptic later.
std::optional<SourceMark> first_tab_indent(std::string_view text, const std::string& origin,
                                           int up_to_line) {
  int line = 1;
  for (std::size_t start = 0; start < text.size() && line <= up_to_line; ++line) {
    std::size_t end = std::min(text.find('\n', start), text.size());
    std::size_t indent = text.find_first_not_of(' ', start);
    if (indent < end && text[indent] == '\t') {
      return SourceMark{origin, line, static_cast<int>(indent - start) + 1};
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string too_large_message(const YamlLimits& limits) {
  return "the file is larger than " + std::to_string(limits.max_bytes) +
         " bytes; a params file is a few kilobytes of YAML";
}

std::string describe_parser_error(const YAML::ParserException& error) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&error)) {
    return "YAML syntax error: values are nested too deeply (" +
           std::to_string(dynamic_cast<const YAML::DeepRecursion&>(error).depth()) +
           " levels); params files are a few levels deep";
  }
  return "YAML syntax error: " + error.msg;
}

}  // namespace

Node read_yaml_text(std::string_view text, const std::string& origin, Diagnostics& diagnostics,
                    const YamlLimits& limits) {
  SourceMark start{origin, 1, 1};
  if (text.size() > limits.max_bytes) {
    diagnostics.error(start, "", too_large_message(limits));
    return Node::make_null(start);
  }
  if (!check_text(text, origin, diagnostics)) return Node::make_null(start);
  if (StrayComma comma = stray_flow_entry(text); comma.line > 0) {
    diagnostics.error(SourceMark{origin, static_cast<int>(comma.line), 1}, "",
                      comma.after_quoted
                          ? "YAML syntax error: a ',' follows a quoted value outside any flow "
                            "collection; write a list as [a, b] or as '- ' items"
                          : "YAML syntax error: a ',' begins a node outside any flow collection "
                            "([...] or {...}); quote a value that begins with a comma");
    return Node::make_null(start);
  }
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(text));
  } catch (const YAML::ParserException& error) {
    SourceMark at = to_mark(origin, error.mark);
    if (auto tab = first_tab_indent(text, origin, at.line)) {
      diagnostics.error(*tab, "",
                        "YAML syntax error: this line is indented with a tab; YAML "
                        "indentation takes spaces only");
    } else {
      diagnostics.error(at, "", describe_parser_error(error));
    }
    return Node::make_null(start);
  } catch (const YAML::Exception& error) {
    diagnostics.error(to_mark(origin, error.mark), "", "YAML error: " + error.msg);
    return Node::make_null(start);
  }
  if (documents.empty()) return Node::make_null(start);
  if (documents.size() > 1) {
    diagnostics.error(to_mark(origin, documents[1].Mark()), "",
                      "expected a single document in the stream; but found another document "
                      "(a params file holds one YAML document)");
  }
  // An alias bomb is refused before its expansion is converted up to the limit.
  if (std::optional<YamlPlace> past = first_value_past_limit(documents.front(), limits)) {
    std::optional<SourceMark> key_mark;
    if (past->key_mark) key_mark = to_mark(origin, *past->key_mark);
    diagnostics.error(value_mark(origin, past->node, key_mark ? &*key_mark : nullptr),
                      section_of(past->path), too_many_values_message(limits));
    return Node::make_null(start);
  }
  Converter converter(origin, diagnostics, limits);
  Node root = converter.convert(documents.front(), "", 0, nullptr);
  // Past a limit the tree is cut short: checking what is left would only add noise.
  if (converter.exceeded_limits()) return Node::make_null(start);
  return root;
}

Node read_yaml_file(const std::string& path, Diagnostics& diagnostics, const YamlLimits& limits) {
  SourceMark origin{path};
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    diagnostics.error(origin, "", "cannot read the params file: it is a directory");
    return Node::make_null(origin);
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    diagnostics.error(origin, "",
                      std::string("cannot read the params file: ") + std::strerror(errno));
    return Node::make_null(origin);
  }
  std::string text;
  char buffer[65536];
  while (file.read(buffer, sizeof buffer) || file.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(file.gcount()));
    if (text.size() > limits.max_bytes) {
      diagnostics.error(SourceMark{path, 1, 1}, "", too_large_message(limits));
      return Node::make_null(origin);
    }
  }
  return read_yaml_text(text, path, diagnostics, limits);
}

}  // namespace csrun::config
