#include <catch2/catch.hpp>

#include "config/param_types.hpp"
#include "config/schema.hpp"
#include "config/spelling.hpp"

using namespace csrun::config;
using T = ValueType;

namespace {

Node at(Node value, int line = 3, int column = 7) {
  value.set_mark(SourceMark{"p.yaml", line, column});
  value.set_path("section.key");
  return value;
}

std::string only_error(const Diagnostics& diagnostics) {
  REQUIRE(diagnostics.error_count() == 1);
  for (const Diagnostic& d : diagnostics.all()) {
    if (d.severity == Severity::error) return d.to_string();
  }
  return {};
}

}  // namespace

TEST_CASE("integers: range and widening of integral floats") {
  Diagnostics diagnostics;
  CHECK(positive_integer().check(at(Node::make_int(3)), diagnostics)->as_int() == 3);
  CHECK(positive_integer().check(at(Node::make_number(4.0)), diagnostics)->as_int() == 4);
  CHECK_FALSE(diagnostics.has_errors());
  Diagnostics zero;
  CHECK_FALSE(positive_integer().check(at(Node::make_int(0)), zero));
  CHECK(only_error(zero) ==
        "p.yaml:3:7: error: section.key: expected an integer ≥ 1; found the integer 0");
  Diagnostics fraction;
  CHECK_FALSE(T::integer().check(at(Node::make_number(2.5)), fraction));
  CHECK(only_error(fraction).find("expected an integer; found the number 2.5") !=
        std::string::npos);
  Diagnostics boolean;
  CHECK_FALSE(T::integer().check(at(Node::make_bool(true)), boolean));
  CHECK(only_error(boolean).find("found the boolean true") != std::string::npos);
}

TEST_CASE("numbers: ranges, finiteness and PyYAML's string-looking floats") {
  Diagnostics diagnostics;
  CHECK(unit_interval().check(at(Node::make_int(1)), diagnostics)->kind() == Node::Kind::number);
  Diagnostics out_of_range;
  CHECK_FALSE(unit_interval().check(at(Node::make_number(1.5)), out_of_range));
  CHECK(only_error(out_of_range).find("expected a number ≥ 0 and ≤ 1; found the number 1.5") !=
        std::string::npos);
  Diagnostics infinite;
  CHECK_FALSE(T::number().check(at(Node::make_number(INFINITY)), infinite));
  CHECK(only_error(infinite).find("expected a finite number") != std::string::npos);
  Node looks = at(Node::make_string("1e-5"));
  looks.set_looks_numeric(true);
  Diagnostics lenient;
  auto value = T::number().check(looks, lenient);
  REQUIRE(value);
  CHECK(value->as_number() == Approx(1e-5));
  REQUIRE(lenient.all().size() == 1);
  CHECK(lenient.all()[0].severity == Severity::warning);
  CHECK(lenient.all()[0].message.find("PyYAML") != std::string::npos);
}

TEST_CASE("choices: exact or case-insensitive, with a suggestion") {
  Diagnostics diagnostics;
  T levels = T::choice({"DEBUG", "INFO"}, true);
  CHECK(levels.check(at(Node::make_string("info")), diagnostics)->as_string() == "INFO");
  Diagnostics wrong;
  T::choice({"relu", "gelu"}).check(at(Node::make_string("gelo")), wrong);
  CHECK(
      only_error(wrong) ==
      "p.yaml:3:7: error: section.key: expected one of 'relu' or 'gelu'; found the string 'gelo'; "
      "did you mean 'gelu'?");
}

TEST_CASE("lists check size and every item") {
  Diagnostics diagnostics;
  Node betas = Node::make_list();
  betas.push_back(at(Node::make_number(0.9)));
  betas.push_back(at(Node::make_number(1.5)));
  CHECK_FALSE(beta_pair().check(at(betas), diagnostics));
  CHECK(only_error(diagnostics).find("expected a number ≥ 0 and < 1; found the number 1.5") !=
        std::string::npos);
  Diagnostics size;
  Node one = Node::make_list();
  one.push_back(Node::make_number(0.9));
  CHECK_FALSE(beta_pair().check(at(one), size));
  CHECK(only_error(size).find("a list of 2 items") != std::string::npos);
}

TEST_CASE("alternatives name every accepted form") {
  Diagnostics diagnostics;
  CHECK(micro_batch_size_type().check(at(Node::make_string("auto")), diagnostics));
  CHECK(micro_batch_size_type().check(at(Node::make_null()), diagnostics));
  CHECK_FALSE(diagnostics.has_errors());
  Diagnostics wrong;
  micro_batch_size_type().check(at(Node::make_string("atuo")), wrong);
  CHECK(only_error(wrong) ==
        "p.yaml:3:7: error: section.key: expected an integer ≥ 1, 'auto', 'explore' or null; "
        "found the string 'atuo'; did you mean 'auto'?");
}

TEST_CASE("schemas: defaults, unknown keys, required, no-effect and removed keys") {
  Schema schema("loop",
                {default_field("log_steps", positive_integer(), value(1)),
                 required_field("batch_size", positive_integer()),
                 no_effect_field("save_losses", "save_losses has no effect"),
                 removed_field("use_cs_grad_accum", "use_cs_grad_accum is no longer valid")},
                UnknownKeys::error_jsonschema);
  Node map = Node::make_map(SourceMark{"p.yaml", 1, 1}, "runconfig");
  map.set("log_stpes", at(Node::make_int(5)), SourceMark{"p.yaml", 2, 3});
  map.set("save_losses", at(Node::make_bool(true)), SourceMark{"p.yaml", 3, 3});
  map.set("use_cs_grad_accum", at(Node::make_bool(true)), SourceMark{"p.yaml", 4, 3});
  Diagnostics diagnostics;
  Node checked = schema.check(map, diagnostics);
  CHECK(checked.find("log_steps")->as_int() == 1);
  CHECK_FALSE(checked.contains("save_losses"));
  std::vector<std::string> lines;
  for (const Diagnostic& d : diagnostics.all())
    lines.push_back(d.to_string());
  CHECK(lines ==
        std::vector<std::string>{
            "p.yaml:2:3: error: runconfig.log_stpes: Additional properties are not allowed "
            "('log_stpes' was unexpected); did you mean 'log_steps'?",
            "p.yaml:3:3: warning: runconfig.save_losses: save_losses has no effect",
            "p.yaml:4:3: error: runconfig.use_cs_grad_accum: use_cs_grad_accum is no longer valid",
            "p.yaml:1:1: error: runconfig: Field required: 'batch_size' (an integer ≥ 1)"});
}

TEST_CASE("an invalid value falls back to the default so readers stay safe") {
  Schema schema("logging", {default_field("log_steps", positive_integer(), value(1))});
  Node map = Node::make_map();
  map.set("log_steps", at(Node::make_string("often")));
  Diagnostics diagnostics;
  Node checked = schema.check(map, diagnostics);
  CHECK(diagnostics.has_errors());
  CHECK(checked.find("log_steps")->as_int() == 1);
}

TEST_CASE("did-you-mean finds typos, not strangers") {
  std::vector<std::string> keys = {"max_steps", "num_steps", "batch_size", "hidden_size"};
  CHECK(closest_match("max_step", keys) == "max_steps");
  CHECK(closest_match("batchsize", keys) == "batch_size");
  CHECK(closest_match("hiddne_size", keys) == "hidden_size");
  CHECK(closest_match("learning_rate", keys) == std::nullopt);
  // Case does not count; the first of equally close candidates wins; a candidate whose length
  // differs by more than the tolerance is never a match.
  CHECK(closest_match("Hidden_Size", keys) == "hidden_size");
  CHECK(closest_match("nax_steps", keys) == "max_steps");
  CHECK(closest_match("xmax_stepsx", keys) == "max_steps");
  CHECK(closest_match("batch", keys) == std::nullopt);
  CHECK(quoted_list(keys, "and") == "'max_steps', 'num_steps', 'batch_size' and 'hidden_size'");
}

TEST_CASE("findings at one file position are reported once") {
  Diagnostics diagnostics;
  diagnostics.error({"p.yaml", 3, 4}, "fit.val_dataloader.batch_size", "bad");
  diagnostics.error({"p.yaml", 3, 4}, "validate.val_dataloader.batch_size", "bad");
  diagnostics.error({"command line"}, "a", "bad");
  diagnostics.error({"command line"}, "b", "bad");
  CHECK(diagnostics.error_count() == 3);
  CHECK_THROWS_AS(diagnostics.throw_if_errors(), ValidationError);
}

TEST_CASE("numbers render as Python prints them") {
  CHECK(Node::make_number(10000.0).render() == "10000.0");
  CHECK(Node::make_number(0.0006).render() == "0.0006");
  CHECK(Node::make_number(6e-05).render() == "6e-05");
  CHECK(Node::make_number(2147483648.0).render() == "2147483648.0");
  CHECK(Node::make_number(1e20).render() == "1e+20");
  CHECK(Node::make_number(0.1).render() == "0.1");
}
