#include <catch2/catch.hpp>

#include <filesystem>

#include "runner/model_dir.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

std::string errors_of(const std::string& path) {
  config::Diagnostics diagnostics;
  runner::check_model_dir(path, {"p.yaml", 3, 4}, "runconfig.model_dir", diagnostics);
  std::string text;
  for (const config::Diagnostic& d : diagnostics.all())
    text += d.to_string();
  return text;
}

}  // namespace

TEST_CASE("model_dir: existing, creatable, or clearly not") {
  test::TempDir dir;
  CHECK(errors_of(dir.path().string()).empty());
  CHECK(errors_of((dir.path() / "new" / "deeper").string()).empty());
  CHECK_FALSE(std::filesystem::exists(dir.path() / "new"));
  std::string file = dir.write("file", "x");
  CHECK(errors_of(file) == "p.yaml:3:4: error: runconfig.model_dir: model_dir '" + file +
                               "' exists and is not a directory");
  CHECK(errors_of(file + "/below").find("cannot be created") != std::string::npos);
  CHECK(errors_of("").find("model_dir is empty") != std::string::npos);
  // Root may write to /proc as far as access() tells, and still makes nothing there.
  if (std::filesystem::is_directory("/proc/self"))
    CHECK(errors_of("/proc/csrun-model").find("'/proc' is in the kernel's proc file system") !=
          std::string::npos);
}

TEST_CASE("checkpoint paths and patterns") {
  test::TempDir dir;
  std::string a = dir.write("checkpoint_10.mdl", "x");
  dir.write("checkpoint_20.mdl", "x");
  config::Diagnostics diagnostics;
  runner::check_checkpoint_file(a, {}, "fit.ckpt_path", diagnostics);
  CHECK_FALSE(diagnostics.has_errors());
  runner::check_checkpoint_file((dir.path() / "nope.mdl").string(), {}, "fit.ckpt_path",
                                diagnostics);
  CHECK(diagnostics.error_count() == 1);
  config::Diagnostics patterns;
  auto paths = runner::expand_checkpoint_patterns(
      {config::Node::make_string((dir.path() / "checkpoint_*.mdl").string()),
       config::Node::make_string((dir.path() / "none_*.mdl").string())},
      patterns);
  CHECK(paths.size() == 2);
  REQUIRE(patterns.error_count() == 1);
  CHECK(patterns.all()[0].message.find("no checkpoint matches") != std::string::npos);
}
