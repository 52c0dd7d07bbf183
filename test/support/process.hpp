#pragma once

#include <string>
#include <vector>

namespace csrun::test {

struct ProcessResult {
  int exit_code = -1;  // 124: killed by the time limit
  std::string out;
  std::string err;
};

// Runs `arguments` (no shell) in `directory`, with a time limit, capturing both streams.
ProcessResult run_process(const std::vector<std::string>& arguments,
                          const std::string& directory = ".", int timeout_seconds = 60);

// Runs the csrun binary under test.
ProcessResult run_csrun(const std::vector<std::string>& arguments,
                        const std::string& directory = ".");

}  // namespace csrun::test
