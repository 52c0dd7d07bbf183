// Mutation test: every value of every shipped Model Zoo config is replaced, one at a time, by
// values of the wrong type, out of range or absurd. Validation must report an error (or accept
// a harmless change) and never throw or crash.

#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "config/yaml_reader.hpp"
#include "modes/validation_stage.hpp"

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
  for (const auto& entry : fs::directory_iterator(CSRUN_MODELZOO_CONFIGS)) {
    if (entry.path().extension() != ".yaml") continue;
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
