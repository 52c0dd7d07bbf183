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
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

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

// Lines in front of which yaml-cpp 0.7 never returns (", b", "&a, b", "'a', b", or an
// indented ", b" in a mapping loop allocating without end; '"a"&""b,' and " [], b" grow without
// end), found before yaml-cpp sees them. Outside any flow collection these are refused: a ','
// that comes first on its line (after blanks and node properties: an &anchor or a !tag), and
// anything but blanks, a ':' or a comment after a quoted scalar or a flow collection on its line.
// The only valid YAML this refuses is a plain scalar continued on a line that starts with a comma
// or a quote. Quoted scalars, comments and block scalars' contents are skipped; a quote or a
// bracket counts only where a node can start (`say "hi", now` and "a[b" are plain scalars in
// block context) or, for a quote, right after a quoted scalar ("a""b", c).
struct YamlTrap {
  enum class Kind {
    none,
    comma_begins_node,
    comma_after_quoted,
    text_after_quoted,
    comma_after_collection,
    text_after_collection
  };
  Kind kind = Kind::none;
  std::size_t line = 0;
};

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// Where the block scalar whose header ('|' or '>') is text[i] ends: the line break before its
// first line that is not blank and not more indented than the header's line (indent spaces).
// Returns i when text[i] does not begin a header.
std::size_t block_scalar_end(std::string_view text, std::size_t i, std::size_t indent) {
  std::size_t k = i + 1;
  while (k < text.size() &&
         std::string_view("0123456789+-").find(text[k]) != std::string_view::npos)
    ++k;
  while (k < text.size() && is_blank(text[k]))
    ++k;
  if (k < text.size() && text[k] == '#' && is_blank(text[k - 1]))
    k = std::min(text.find('\n', k), text.size());
  if (k < text.size() && text[k] != '\n') return i;
  std::size_t end = k;
  while (end < text.size()) {
    std::size_t next = end + 1;
    std::size_t line_end = std::min(text.find('\n', next), text.size());
    std::size_t content = next;
    while (content < line_end && text[content] == ' ')
      ++content;
    bool blank = std::all_of(text.begin() + content, text.begin() + line_end, is_blank);
    if (!blank && content - next <= indent) break;
    end = line_end;
  }
  return end;
}

// Whether text[i] is followed by a blank, a line break or the end of the text.
bool blank_follows(std::string_view text, std::size_t i) {
  return i + 1 >= text.size() || is_blank(text[i + 1]) || text[i + 1] == '\n';
}

// The scan for yaml-cpp's traps. A quote first on a line after a line that ends inside a plain
// scalar may continue that scalar (yaml-cpp reads `i` then `' #` as the plain scalar "i '", ended
// by a comment) or begin a quoted scalar, as the indentation decides: both readings are scanned,
// and a trap in either is one. Where the readings meet again, at the start of a line outside any
// quoted scalar in the same state (flow depth, and whether a plain scalar may continue), the
// later one stops: each such state is scanned once, so the readings cost about two scans. The
// other readings wait in a list rather than on the stack: a file of many such lines nests none.
class TrapScan {
 public:
  explicit TrapScan(std::string_view text) : text_(text) {}

  YamlTrap find() {
    pending_.push_back({{0, 1, 0, false}, false});
    while (!pending_.empty()) {
      auto [start, quote_is_plain] = pending_.back();
      pending_.pop_back();
      if (YamlTrap trap = from(start, quote_is_plain); trap.kind != YamlTrap::Kind::none)
        return trap;
    }
    return {};
  }

 private:
  struct LineStart {
    std::size_t offset;
    std::size_t line;
    int depth;
    bool continues_plain;  // the line before ended inside a plain scalar
  };

  // Scans one reading from a line start; with `quote_is_plain`, a quote first on that line is
  // plain text.
  YamlTrap from(LineStart start, bool quote_is_plain);

  std::string_view text_;
  std::set<std::tuple<std::size_t, int, bool>> scanned_;
  std::vector<std::pair<LineStart, bool>> pending_;
};

YamlTrap TrapScan::from(LineStart start, bool quote_is_plain) {
  using Kind = YamlTrap::Kind;
  std::string_view text = text_;
  LineStart line = start;
  int depth = start.depth;
  char quote = 0;
  char previous = '\n';
  bool node_start = true;     // a node (a scalar, a collection) may begin here
  bool line_content = false;  // anything but blanks and node properties on this line
  bool in_plain = false;      // inside a plain scalar
  // Only blanks since a node ended outside any collection: a quoted scalar (its quote) or a
  // flow collection (its closing bracket); 0: none.
  char ended_by = 0;
  auto name_ends = [](char c) {
    return std::string_view(" \t\r\n,[]{}").find(c) != std::string_view::npos;
  };
  for (std::size_t i = start.offset; i < text.size(); previous = text[i], ++i) {
    char c = text[i];
    if (c == '\n') {
      line = {i + 1, line.line + 1, depth, quote == 0 && in_plain};
      if (quote == 0 && !scanned_.emplace(line.offset, depth, line.continues_plain).second)
        return {};
      quote_is_plain = false;
      line_content = false;
      ended_by = 0;
      node_start = true;
    }
    if (quote) {
      if ((c == '\\' && quote == '"') ||
          (c == '\'' && quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'')) {
        ++i;  // an escape: \x in double quotes, '' (one quote) in single quotes
      } else if (c == quote) {
        quote = 0;
        ended_by = depth == 0 ? c : 0;
      }
      continue;
    }
    if (is_blank(c) || c == '\n') continue;
    // "a""b", c loops yaml-cpp as "a", c does: a quote right after a quoted value starts another.
    bool after_quoted = ended_by == '"' || ended_by == '\'';
    bool follows_quoted =
        after_quoted && (c == '"' || c == '\'') && (previous == '"' || previous == '\'');
    if (ended_by && c == ',')
      return {after_quoted ? Kind::comma_after_quoted : Kind::comma_after_collection, line.line};
    if (ended_by && c != ':' && c != '#' && !follows_quoted)
      return {after_quoted ? Kind::text_after_quoted : Kind::text_after_collection, line.line};
    bool comment = c == '#' && (ended_by || is_blank(previous) || previous == '\n');
    bool starts_node = node_start || follows_quoted;
    ended_by = 0;
    node_start = false;
    in_plain = false;
    if (comment) {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
      continue;
    }
    // A header after a key or a '- ' on its line: first on a line, '>' may continue a plain scalar
    // (yaml-cpp reads it so), and what follows is then no block scalar.
    if ((c == '|' || c == '>') && starts_node && line_content && depth == 0) {
      std::size_t indent = text.find_first_not_of(' ', line.offset) - line.offset;
      if (std::size_t end = block_scalar_end(text, i, indent); end != i) {
        line.line +=
            static_cast<std::size_t>(std::count(text.begin() + i, text.begin() + end, '\n'));
        i = end - 1;
        continue;
      }
    }
    if ((c == '&' || c == '!') && starts_node && depth == 0) {
      while (i + 1 < text.size() && !name_ends(text[i + 1]))
        ++i;
      node_start = true;
      continue;
    }
    if (c == ',' && depth == 0 && !line_content) return {Kind::comma_begins_node, line.line};
    bool opens_quote = (c == '"' || c == '\'') && starts_node;
    if (opens_quote && !line_content && line.continues_plain) {
      // Both readings: quoted in this scan, plain text in one from this line's start.
      if (!quote_is_plain) pending_.push_back({line, true});
      opens_quote = !quote_is_plain;
    }
    line_content = true;
    if (opens_quote) {
      quote = c;
    } else if ((c == '[' || c == '{') && (starts_node || depth > 0)) {
      ++depth;
      node_start = true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      if (--depth == 0) ended_by = c;
    } else if (c == ',' && depth > 0) {
      node_start = true;
    } else if (c == ':') {
      node_start = depth > 0 || blank_follows(text, i);
      in_plain = !node_start;
    } else if (c == '-' || c == '?') {
      node_start = starts_node && blank_follows(text, i);
      in_plain = !node_start;
    } else {
      in_plain = true;
    }
  }
  return {};
}

YamlTrap find_yaml_cpp_trap(std::string_view text) {
  return TrapScan(text).find();
}

std::string_view trap_message(YamlTrap::Kind kind) {
  switch (kind) {
    case YamlTrap::Kind::comma_begins_node:
      return "YAML syntax error: a ',' begins a node outside any flow collection ([...] or "
             "{...}); quote a value that begins with a comma";
    case YamlTrap::Kind::comma_after_quoted:
      return "YAML syntax error: a ',' follows a quoted value outside any flow collection; write "
             "a list as [a, b] or as '- ' items";
    case YamlTrap::Kind::comma_after_collection:
      return "YAML syntax error: a ',' follows a flow collection ([...] or {...}) outside any "
             "other; write a list as [a, b] or as '- ' items";
    case YamlTrap::Kind::text_after_collection:
      return "YAML syntax error: text follows a flow collection ([...] or {...}) on its line; a "
             "collection ends where its bracket closes (put the text inside the brackets, or "
             "write 'key: value')";
    case YamlTrap::Kind::text_after_quoted:
    case YamlTrap::Kind::none:
      break;
  }
  return "YAML syntax error: text follows a quoted value on its line; a quoted value ends where "
         "its quote closes (put the text inside the quotes, or write 'key: value')";
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
    std::unordered_map<std::string, SourceMark> written;
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
      // Merged keys never collide here: merging skips keys the mapping writes itself. (Looked
      // up in `written`, not the map's entries: a mapping of many keys reads in linear time.)
      auto [first, added] = written.emplace(key, key_mark);
      if (!added) {
        diagnostics_.error(key_mark, child_path,
                           "Found duplicate YAML key: '" + key + "' (first defined at line " +
                               std::to_string(first->second.line) + ", column " +
                               std::to_string(first->second.column) + ")");
        continue;
      }
      Node value = convert(it->second, child_path, depth + 1, &key_mark);
      map.entries().push_back(Node::Entry{std::move(key), std::move(key_mark), std::move(value)});
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
  if (YamlTrap trap = find_yaml_cpp_trap(text); trap.kind != YamlTrap::Kind::none) {
    diagnostics.error(SourceMark{origin, static_cast<int>(trap.line), 1}, "",
                      std::string(trap_message(trap.kind)));
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
