// The bad-input suite: every file in test/data/bad_params is a malformed params file with a
// .expect beside it giving the exit status and the exact findings (location and message)
// `csrun validate` must print. None may crash or hang.

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kCases = CSRUN_TEST_DATA "/bad_params";

struct Expectation {
  std::vector<std::string> arguments = {"--fake_data"};
  int exit_code = 1;
  std::vector<std::string> stderr_lines;
};

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream words(text);
  std::vector<std::string> result;
  for (std::string word; words >> word;)
    result.push_back(word);
  return result;
}

// Lines: "args: ..." (replaces --fake_data), "exit: N", "err: <text stderr must contain>".
// "\t" in an err line stands for a tab.
Expectation read_expectation(const fs::path& path) {
  Expectation expectation;
  std::ifstream file(path);
  REQUIRE(file);
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t colon = line.find(':');
    REQUIRE(colon != std::string::npos);
    std::string key = line.substr(0, colon);
    std::string value = line.substr(std::min(line.size(), colon + 2));
    if (key == "args") {
      expectation.arguments = split_words(value);
    } else if (key == "exit") {
      expectation.exit_code = std::stoi(value);
    } else if (key == "err") {
      for (std::size_t tab = value.find("\\t"); tab != std::string::npos; tab = value.find("\\t")) {
        value.replace(tab, 2, "\t");
      }
      expectation.stderr_lines.push_back(value);
    } else {
      FAIL("unknown key '" << key << "' in " << path);
    }
  }
  return expectation;
}

std::vector<fs::path> cases() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kCases)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("the bad-input suite has at least 40 cases, each with its expectation") {
  std::vector<fs::path> files = cases();
  CHECK(files.size() >= 40);
  for (const fs::path& file : files) {
    INFO(file);
    CHECK(fs::exists(fs::path(file).replace_extension(".expect")));
  }
}

TEST_CASE("every malformed params file gets its exact findings, without a crash or hang") {
  for (const fs::path& file : cases()) {
    Expectation expectation = read_expectation(fs::path(file).replace_extension(".expect"));
    std::vector<std::string> arguments = {"validate", file.filename().string()};
    arguments.insert(arguments.end(), expectation.arguments.begin(), expectation.arguments.end());
    auto result = csrun::test::run_csrun(arguments, kCases.string());
    INFO(file.filename().string() << "\n--- stderr ---\n" << result.err);
    CHECK(result.exit_code == expectation.exit_code);
    for (const std::string& line : expectation.stderr_lines) {
      INFO("expected: " << line);
      CHECK(result.err.find(line) != std::string::npos);
    }
  }
}
