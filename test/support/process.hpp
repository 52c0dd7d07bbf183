#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace csrun::test {

struct ProcessResult {
  int exit_code = -1;  // 124: killed by the time limit
  std::string out;
  std::string err;
  std::int64_t peak_rss_kib = 0;  // the process's, or one of its descendants' if larger
};

// Runs `arguments` (no shell) in `directory`, with a time limit, capturing both streams.
ProcessResult run_process(const std::vector<std::string>& arguments,
                          const std::string& directory = ".", int timeout_seconds = 60);

// Runs the csrun binary under test.
ProcessResult run_csrun(const std::vector<std::string>& arguments,
                        const std::string& directory = ".");

// Runs `work` in a forked child whose files may grow to at most `bytes` (RLIMIT_FSIZE, SIGXFSZ
// ignored), as a full disk would stop it: the limit stays in the child. Returns what the
// exception `work` threw says, or nothing when it threw none.
std::optional<std::string> error_under_file_size_limit(std::uint64_t bytes,
                                                       const std::function<void()>& work);

}  // namespace csrun::test
