#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include "config/diagnostics.hpp"
#include "config/plain_scalar.hpp"
#include "config/yaml_reader.hpp"
#include "support/temp_dir.hpp"

using namespace csrun::config;

namespace {

Node read(const std::string& text, Diagnostics& diagnostics) {
  return read_yaml_text(text, "t.yaml", diagnostics);
}

Node scalar(const std::string& text) {
  return resolve_plain_scalar(text, {}, "k");
}

bool has_error(const Diagnostics& diagnostics, const std::string& expected) {
  for (const Diagnostic& d : diagnostics.all()) {
    if (d.severity == Severity::error && d.to_string().find(expected) != std::string::npos)
      return true;
  }
  return false;
}

// Whether reading `text` reports an error that contains `expected`.
bool reading_reports(const std::string& text, const std::string& expected) {
  Diagnostics diagnostics;
  read(text, diagnostics);
  return has_error(diagnostics, expected);
}

}  // namespace

TEST_CASE("plain scalars are typed as PyYAML (YAML 1.1) types them") {
  CHECK(scalar("yes").is_bool());
  CHECK(scalar("Off").is_bool());
  CHECK_FALSE(scalar("Off").as_bool());
  CHECK(scalar("True").as_bool());
  CHECK(scalar("~").is_null());
  CHECK(scalar("null").is_null());
  CHECK(scalar("42").as_int() == 42);
  CHECK(scalar("-7").as_int() == -7);
  CHECK(scalar("010").as_int() == 8);
  CHECK(scalar("0x1f").as_int() == 31);
  CHECK(scalar("0b101").as_int() == 5);
  CHECK(scalar("1_000").as_int() == 1000);
  CHECK(scalar("1.0e-5").kind() == Node::Kind::number);
  CHECK(scalar("1.0e-5").as_number() == Approx(1e-5));
  CHECK(scalar("2147483648.0").as_number() == 2147483648.0);
  CHECK(scalar(".5").as_number() == 0.5);
  CHECK(std::isinf(scalar("-.inf").as_number()));
  CHECK(std::isnan(scalar(".nan").as_number()));
  // PyYAML wants a dot and a signed exponent: these stay strings, marked as number-like.
  for (const char* text : {"1e-5", "1E5", "1.0e5"}) {
    Node node = scalar(text);
    CHECK(node.is_string());
    CHECK(node.looks_numeric());
  }
  CHECK(scalar("abc").is_string());
  CHECK_FALSE(scalar("abc").looks_numeric());
  CHECK(scalar("99999999999999999999").out_of_range());
  CHECK(scalar("-9223372036854775808").as_int() == INT64_MIN);
}

TEST_CASE("quoted scalars are strings whatever they look like") {
  Diagnostics diagnostics;
  Node root = read("a: '5'\nb: \"true\"\nc: !!str 7\nd: !!float 3\n", diagnostics);
  CHECK(root.find("a")->is_string());
  CHECK(root.find("b")->is_string());
  CHECK(root.find("c")->is_string());
  CHECK(root.find("d")->kind() == Node::Kind::number);
  CHECK_FALSE(diagnostics.has_errors());
}

TEST_CASE("a quote written twice inside single quotes is one quote, not the value's end") {
  Diagnostics diagnostics;
  Node root = read("a: 'it''s'\nb: ['x''y', 'z']\nc: ''\n", diagnostics);
  CHECK_FALSE(diagnostics.has_errors());
  CHECK(root.find("a")->as_string() == "it's");
  CHECK(root.find("b")->items().front().as_string() == "x'y");
  CHECK(root.find("c")->as_string().empty());
  CHECK(reading_reports("'a''b', c\n",
                        "t.yaml:1:1: error: YAML syntax error: a ',' follows a quoted value"));
}

TEST_CASE("a ',' after quoted values written back to back is refused before yaml-cpp reads it") {
  // yaml-cpp 0.7 never returns from these (params_loader fuzz timeouts).
  for (const char* text : {"\"a\"\"b\", c\n", "\"\"\"\"\"\"\"\"\"\"\"\"\"\",\"#\"\"\"##:\n"}) {
    INFO(text);
    CHECK(reading_reports(text, "t.yaml:1:1: error: YAML syntax error: a ',' follows a quoted"));
  }
}

TEST_CASE("text after a quoted value on its line is refused before yaml-cpp reads it") {
  // yaml-cpp 0.7 allocated without end on the first (a params_loader fuzz finding).
  for (const char* text : {"\"\"\"\"\"\"\"\"&\"\"or,\n\n\n", "k: \"a\" b\n", "- 'a' &x b, c\n"}) {
    INFO(text);
    CHECK(reading_reports(
        text, "t.yaml:1:1: error: YAML syntax error: text follows a quoted value on its line"));
  }
}

TEST_CASE("a ',' or text after a flow collection on its line is refused before yaml-cpp reads it") {
  // yaml-cpp 0.7 allocated without end on the first (a params_loader fuzz timeout).
  const std::pair<const char*, const char*> cases[] = {
      {" [],t []\n", "a ',' follows a flow collection"},
      {"a: {x: 1}, b\n", "a ',' follows a flow collection"},
      {"a: [x] b\n", "text follows a flow collection ([...] or {...}) on its line"},
  };
  for (auto [text, message] : cases) {
    INFO(text);
    CHECK(reading_reports(text, std::string("t.yaml:1:1: error: YAML syntax error: ") + message));
  }
  Diagnostics valid;
  Node root = read("d: [e,\n  f]  # two\ng: {h: 1}\ni:\n  - [j]\n", valid);
  CHECK_FALSE(valid.has_errors());
  CHECK(root.find("d")->items().size() == 2);
  CHECK(root.find("g")->find("h") != nullptr);
}

TEST_CASE("quotes inside plain values and block scalars are text, not quoted values") {
  Diagnostics diagnostics;
  Node root = read(
      "a: say \"hi\", then go\n"
      "b: |\n  \"quoted\" text, here\n\n  'more', text\nc: >-  # folded\n  'x' y\nd: [\"a\" , b]\n"
      "\"e\": 'f'  # comment\n",
      diagnostics);
  CHECK_FALSE(diagnostics.has_errors());
  CHECK(root.find("a")->as_string() == "say \"hi\", then go");
  CHECK(root.find("b")->as_string() == "\"quoted\" text, here\n\n'more', text\n");
  CHECK(root.find("c")->as_string() == "'x' y");
  CHECK(root.find("d")->items().size() == 2);
  CHECK(root.find("e")->as_string() == "f");
}

TEST_CASE("a ',' is found on the line after a block scalar, counting the scalar's lines") {
  CHECK(reading_reports("a: |\n  x\n  y\n, b\n",
                        "t.yaml:4:1: error: YAML syntax error: a ',' begins a node"));
  // First on its line, '>' continues the plain scalar above (a params_loader fuzz timeout).
  CHECK(reading_reports("a\n>  # c\n , b\n",
                        "t.yaml:3:1: error: YAML syntax error: a ',' begins a node"));
}

TEST_CASE("a quote first on a line that may continue a plain scalar is read both ways") {
  // yaml-cpp reads `' #` after `i` as the plain scalar "i '" ended by a comment, so the ',' after
  // it begins a node (a params_loader fuzz out-of-memory); as a quoted scalar, there is no trap.
  CHECK(reading_reports("i\n' #\n, b\n",
                        "t.yaml:3:1: error: YAML syntax error: a ',' begins a node"));
  CHECK(reading_reports("a: x\n  \" c\n  ]\n, b\n",
                        "t.yaml:4:1: error: YAML syntax error: a ',' begins a node"));
  // Quoted, after a line that ends in a plain scalar: still a trap when its reading has one.
  CHECK(reading_reports("x: y\n'a', b\n",
                        "t.yaml:2:1: error: YAML syntax error: a ',' follows a quoted value"));
  Diagnostics valid;
  Node root = read("a: b\n'c': d\ne: 'f'\ng:\n  'h'\n", valid);
  CHECK_FALSE(valid.has_errors());
  CHECK(root.find("c")->as_string() == "d");
  CHECK(root.find("g")->as_string() == "h");
}

TEST_CASE("values keep their position and key path") {
  Diagnostics diagnostics;
  Node root = read("runconfig:\n  max_steps: 100\nlist:\n  - x: 1\n", diagnostics);
  const Node* steps = root.find("runconfig")->find("max_steps");
  CHECK(steps->mark().line == 2);
  CHECK(steps->mark().column == 14);
  CHECK(steps->path() == "runconfig.max_steps");
  CHECK(root.find("list")->items()[0].find("x")->path() == "list.0.x");
  // A mapping is reported where its key is written.
  CHECK(root.find("runconfig")->mark().line == 1);
}

TEST_CASE("a value read with a fallback is the fallback when absent or of another type") {
  Diagnostics diagnostics;
  Node root = read("lr: 0.5\nsteps: 3\nflag: true\nname: adam\nnothing: null\n", diagnostics);
  CHECK(root.number_or("lr", 1.0) == 0.5);
  CHECK(root.number_or("steps", 1.0) == 3.0);
  CHECK(root.number_or("name", 1.0) == 1.0);
  CHECK(root.number_or("missing", 2.0) == 2.0);
  CHECK(root.flag_or("flag", false));
  CHECK(root.flag_or("nothing", true));
  CHECK_FALSE(root.flag_or("lr", false));
  CHECK(root.text_or("name", "sgd") == "adam");
  CHECK(root.text_or("steps", "sgd") == "sgd");
  CHECK(root.text_or("missing", "").empty());
}

TEST_CASE("duplicate keys are errors with both positions") {
  CHECK(reading_reports(
      "a: 1\nb:\n  c: 1\n  c: 2\n",
      "t.yaml:4:3: error: b.c: Found duplicate YAML key: 'c' (first defined at line 3, column 3)"));
}

TEST_CASE("merge keys merge, and keys written in the mapping win") {
  Diagnostics diagnostics;
  Node root =
      read("base: &b\n  x: 1\n  y: 2\nother: &o\n  y: 9\n  z: 9\nm:\n  <<: [*b, *o]\n  y: 3\n",
           diagnostics);
  REQUIRE_FALSE(diagnostics.has_errors());
  const Node* m = root.find("m");
  CHECK(m->find("x")->as_int() == 1);
  CHECK(m->find("y")->as_int() == 3);
  CHECK(m->find("z")->as_int() == 9);
  CHECK_FALSE(m->contains("<<"));
}

TEST_CASE("a merge key needs mappings") {
  CHECK(reading_reports(
      "m:\n  <<: 5\n",
      "t.yaml:2:3: error: m: a merge key (<<) takes a mapping or a list of mappings"));
}

TEST_CASE("a merge key that merges a mapping holding it is an error, not endless") {
  for (const char* text : {"m: &m\n  a: 1\n  <<: *m\n", "m: &m\n  x:\n    <<: *m\n"}) {
    INFO(text);
    CHECK(reading_reports(text, "a merge key (<<) merges a mapping that holds it"));
  }
}

TEST_CASE("anchors and aliases resolve") {
  Diagnostics diagnostics;
  Node root = read("a: &x {k: 1}\nb: *x\n", diagnostics);
  CHECK(root.find("b")->find("k")->as_int() == 1);
}

// The place each limit is reported at was taken from the reader that converted every value up
// to the limit, before aliases were measured instead of expanded.
TEST_CASE("the value limit counts values as the reader converts them, aliases expanded") {
  struct Case {
    const char* text;
    std::size_t values;          // what the file expands to
    const char* one_past_limit;  // where a limit of one value fewer is reported
  };
  const Case cases[] = {
      {"a: [1, 2, 3]\nb: {c: 4, d: [5, 6]}\n", 10, "t.yaml:2:18: error: b: "},
      {"a: &x [1, {k: 2}]\nb: *x\nc: [*x, *x]\n", 18, "t.yaml:1:15: error: c: "},
      {"base: &b {p: 1, q: [2, 3]}\nm:\n  <<: [*b, *b]\n  p: 9\n", 18, "t.yaml:4:6: error: m: "},
      // A duplicate key, a merge of scalars and a key that is a list are refused, not counted.
      {"a: [1, 2]\na: [3, 4, 5]\nb: 1\n", 5, "t.yaml:3:4: error: b: "},
      {"s: &s 1\nm: {<<: *s, k: 2}\nn: {<<: [*s], j: 3}\n", 6, "t.yaml:3:18: error: n: "},
      {"? [1, 2]\n: 3\nb: 4\n", 2, "t.yaml:3:4: error: b: "},
      {"m: {'<<': [1, 2], k: 3}\n", 6, "t.yaml:1:22: error: m: "},
      {"a: &a {x: [1, 2], y: 3}\nb: &b {<<: *a, z: [*a, *a]}\nc:\n  - <<: [*b, *a]\n"
       "    w: *b\n  - *b\n",
       81, "t.yaml:1:22: error: c: "},
      {"- &q [a, b]\n- - *q\n  - [*q, *q]\n- {k: *q}\n", 19, "t.yaml:1:10: error: 2: "},
      {"a: &a [x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: &d !!seq [*c, *c]\ne: !foo [*d]\n", 66,
       "t.yaml:1:8: error: e: "},
      // A mapping that merges itself: only converting tells what it holds.
      {"m: &m\n  a: 1\n  <<: *m\nn: 2\n", 4, "t.yaml:4:4: error: n: "},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    YamlLimits limits;
    limits.max_values = c.values;
    Diagnostics within;
    read_yaml_text(c.text, "t.yaml", within, limits);
    CHECK_FALSE(has_error(within, "alias bomb"));
    limits.max_values = c.values - 1;
    Diagnostics past;
    read_yaml_text(c.text, "t.yaml", past, limits);
    CHECK(has_error(past, c.one_past_limit + std::string("the file expands to more than ") +
                              std::to_string(c.values - 1) + " values"));
  }
}

TEST_CASE("the first limit a file meets is reported, and ends the reading") {
  YamlLimits limits;
  limits.max_depth = 3;
  limits.max_values = 5;
  Diagnostics nested_first;
  read_yaml_text("a: &a [[[[1, 2]]]]\nb: [*a, *a]\n", "t.yaml", nested_first, limits);
  CHECK(has_error(nested_first, "t.yaml:1:10: error: a: values are nested more than 3 levels"));
  CHECK_FALSE(has_error(nested_first, "alias bomb"));
  Diagnostics values_first;
  read_yaml_text("b: [1, 2, 3, 4, 5]\na: [[[[1]]]]\n", "t.yaml", values_first, limits);
  CHECK(has_error(values_first, "t.yaml:1:14: error: b: the file expands to more than 5 values"));
  CHECK_FALSE(has_error(values_first, "nested more than"));
}

TEST_CASE("hostile input is refused quickly with a reason") {
  SECTION("alias bomb") {
    std::string text = "a: &a [x, x, x, x, x, x, x, x, x]\n";
    std::string previous = "a";
    for (char name = 'b'; name <= 'k'; ++name) {
      text += std::string(1, name) + ": &" + name + " [";
      for (int i = 0; i < 9; ++i)
        text += (i ? ", *" : "*") + previous;
      text += "]\n";
      previous = std::string(1, name);
    }
    CHECK(reading_reports(text, "is this an alias bomb?"));
  }
  SECTION("a list that holds itself") {
    // Expanded to the depth limit along every path, it once took half a minute under ASan.
    Diagnostics diagnostics;
    read("d: &d [x, *d, *d, *d, *d, *d, *d, *d, *d]\n", diagnostics);
    CHECK(has_error(diagnostics, "t.yaml:1:8: error: d: values are nested more than 64 levels"));
    CHECK(diagnostics.all().size() == 1);
  }
  SECTION("deep nesting") {
    CHECK(reading_reports("a: " + std::string(100, '[') + std::string(100, ']') + "\n",
                          "nested more than 64 levels"));
    CHECK(reading_reports("a: " + std::string(3000, '[') + std::string(3000, ']') + "\n",
                          "nested too deeply"));
  }
  SECTION("binary data") {
    CHECK(reading_reports(std::string("a: 1\nb: \0\x01", 10),
                          "t.yaml:2:4: error: the file holds binary data"));
  }
  SECTION("invalid UTF-8") {
    CHECK(reading_reports("a: \xff\xfe\n", "t.yaml:1:4: error: the file is not valid UTF-8 text"));
  }
  SECTION("several documents") {
    CHECK(reading_reports("a: 1\n---\nb: 2\n", "expected a single document in the stream"));
  }
  SECTION("foreign tags") {
    CHECK(reading_reports("a: !!python/object:os.system ls\n", "unsupported YAML tag"));
  }
  SECTION("syntax errors give the position") {
    CHECK(reading_reports("a: [1, 2\nb: 3\n", "YAML syntax error"));
  }
}

TEST_CASE("files: missing, directory, too large") {
  csrun::test::TempDir dir;
  Diagnostics missing;
  read_yaml_file((dir.path() / "none.yaml").string(), missing);
  CHECK(has_error(missing, "cannot read the params file: No such file or directory"));
  Diagnostics directory;
  read_yaml_file(dir.path().string(), directory);
  CHECK(has_error(directory, "it is a directory"));
  Diagnostics large;
  YamlLimits limits;
  limits.max_bytes = 100;
  read_yaml_file(dir.write("big.yaml", std::string(200, '#')), large, limits);
  CHECK(has_error(large, "larger than 100 bytes"));
}
