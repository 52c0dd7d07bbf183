#pragma once

#include <memory>
#include <string>

#include "progress_line.hpp"

namespace spdlog {
class logger;
}

namespace csrun::runner {

// The run's log: model_dir/cerebras_logs/<timestamp>/run.log with a `latest` link to its
// directory, as the Model Zoo keeps them. An spdlog logger writes each line to stdout (below it,
// on a terminal, a live progress line) and to the file, stamped "2026-11-22 10:00:00,123 INFO:
// " as the Model Zoo's are, at the trainer's logging.log_level (DEBUG, INFO, WARNING, ERROR or
// CRITICAL; --logging): lines below it are not written.
class RunLog {
 public:
  RunLog(const std::string& model_dir, const std::string& level);
  // A log on the terminal only, at `level` (another rank's: the first writes the run's log).
  explicit RunLog(const std::string& level);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  void info(const std::string& message);
  void warning(const std::string& message);
  const std::string& directory() const { return directory_; }
  // The live progress line (nothing when stdout is not a terminal).
  ProgressLine& progress() { return progress_; }

 private:
  std::string directory_;
  ProgressLine progress_;
  std::shared_ptr<spdlog::logger> logger_;
};

// The diagnostics of a process that writes no run log (a data worker, an srun task serving
// trainers, a trainer's data stream before its run log opens): lines on stderr in the run log's
// format, each naming its process ("2026-11-22 10:00:00,123 WARNING:     csrun worker: ...").
class ProcessLog {
 public:
  explicit ProcessLog(const std::string& process);

  void info(const std::string& message) const;
  void warning(const std::string& message) const;
  void error(const std::string& message) const;

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace csrun::runner
