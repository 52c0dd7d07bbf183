// Mutation test: every value of every shipped Model Zoo config is replaced, one at a time, by
// values of the wrong type, out of range or absurd. Validation must report an error (or accept
// a harmless change) and never throw or crash.
//
// Each file is compiled once first (a broken one fails, which other tests check), into a model_dir
// of the test's own that every mutated run then names (--model_dir): a mutation that leaves the
// traced step and its plan settings as they were finds the plan in the compile cache, as validate
// does after compile; one that changes them compiles its own step.

#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "config/yaml_reader.hpp"
#include "modes/validation_stage.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using csrun::config::Node;

void collect_paths(const Node& node, std::vector<std::string>& paths) {
  if (!node.path().empty()) paths.push_back(node.path());
  for (const Node& item : node.items())
    collect_paths(item, paths);
  for (const Node::Entry& entry : node.entries())
    collect_paths(entry.value, paths);
}

const std::vector<std::string> kMutations = {
    "null",     "-1",           "0",    "99999999999999999999999",
    "1.0e+999", "'text'",       "[]",   "[1, [2, {a: 3}]]",
    "{}",       "{unknown: 1}", "true", ".nan"};

}  // namespace

TEST_CASE("validation survives every mutation of every value of the Model Zoo configs") {
  std::size_t runs = 0;
  csrun::test::TempDir model_dirs;
  for (const auto& entry : fs::directory_iterator(CSRUN_MODELZOO_CONFIGS)) {
    if (entry.path().extension() != ".yaml") continue;
    std::string model_dir = (model_dirs.path() / entry.path().stem()).string();
    csrun::test::run_csrun({"compile", entry.path().string(), "--fake_data", "-o", model_dir});
    csrun::config::Diagnostics ignored;
    Node root = csrun::config::read_yaml_file(entry.path().string(), ignored);
    std::vector<std::string> paths;
    collect_paths(root, paths);
    for (const std::string& path : paths) {
      for (const std::string& mutation : kMutations) {
        csrun::modes::RunOptions options;
        options.params_path = entry.path().string();
        options.fake_data = true;
        options.load.set_overrides.push_back({path, mutation});
        // --model_dir would replace a mutated model_dir.
        if (!path.ends_with("model_dir"))
          options.load.runconfig_overrides.push_back({"model_dir", Node::make_string(model_dir)});
        INFO(entry.path().filename().string() << " --set " << path << "=" << mutation);
        csrun::modes::CheckedRun checked;
        REQUIRE_NOTHROW(checked = csrun::modes::check_run(options));
        for (const csrun::config::Diagnostic& d : checked.diagnostics.all()) {
          CHECK_FALSE(d.message.empty());
        }
        ++runs;
      }
    }
  }
  CHECK(runs > 10000);
}
