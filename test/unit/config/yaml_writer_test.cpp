#include <catch2/catch.hpp>

#include <cmath>

#include "config/diagnostics.hpp"
#include "config/yaml_reader.hpp"
#include "config/yaml_writer.hpp"

using namespace csrun::config;

namespace {

const char* const kTree = R"(trainer:
  init:
    model: {name: gpt2, vocab_size: 50257, dropout_rate: 0.1, layer_norm_epsilon: 1.0e-5}
    optimizer: {AdamW: {lr: 3.0e-4, betas: [0.9, 0.999], weight_decay: 0.0}}
    "key: with colon": "#not a comment"
    "true": "true"
    strings: ["1e-3", "~", "", "null", "yes", "a\nb", "tab\there", "ünïcode"]
    nothing: ~
    empty_map: {}
    empty_list: []
    flags: [true, false]
    large: 9007199254740993
    negative: -7
    infinite: [.inf, -.inf]
    nested: [{a: 1, b: [2, {c: x}]}, [3, 4]]
)";

Node parsed(const std::string& text) {
  Diagnostics diagnostics;
  Node node = read_yaml_text(text, "t.yaml", diagnostics);
  INFO(text);
  REQUIRE_FALSE(diagnostics.has_errors());
  return node;
}

}  // namespace

TEST_CASE("a params tree written as YAML reads back as the same tree") {
  Node tree = parsed(kTree);
  std::string written = to_yaml(tree);
  INFO(written);
  Node again = parsed(written);
  CHECK(again.same_value(tree));
  CHECK(to_yaml(again) == written);
  const Node& strings = *again.find("trainer")->find("init")->find("strings");
  CHECK(strings.items()[0].as_string() == "1e-3");
  CHECK(strings.items()[1].as_string() == "~");
  CHECK(std::isinf(again.find("trainer")->find("init")->find("infinite")->items()[1].as_number()));
}

TEST_CASE("numbers are written in their shortest exact form, strings quoted, keys plain") {
  std::string written = to_yaml(parsed("lr: 0.1\nsteps: 10\nname: \"gpt2\"\n"));
  CHECK(written.find("lr: 0.1\n") != std::string::npos);
  CHECK(written.find("steps: 10\n") != std::string::npos);
  CHECK(written.find("name: \"gpt2\"\n") != std::string::npos);
  CHECK(to_yaml(parsed("eps: 1.0e-5\n")) == "eps: 1.0e-05\n");  // "1e-05" would read as a string
  CHECK(to_yaml(parsed("x: .nan\n")) == "x: .nan\n");
}
