#pragma once

#include <fstream>
#include <string>

#include "progress_line.hpp"

namespace csrun::runner {

// The run's log: model_dir/cerebras_logs/<timestamp>/run.log with a `latest` link to its
// directory, as the Model Zoo keeps them. Each line goes to stdout and to the file, stamped
// "2026-11-22 10:00:00,123 INFO:     ". On a terminal a live progress line sits below them.
class RunLog {
 public:
  explicit RunLog(const std::string& model_dir);
  void info(const std::string& message);
  void warning(const std::string& message);
  const std::string& directory() const { return directory_; }
  // The live progress line (nothing when stdout is not a terminal).
  ProgressLine& progress() { return progress_; }

 private:
  void line(const char* level, const std::string& message);
  std::string directory_;
  std::ofstream file_;
  ProgressLine progress_;
};

}  // namespace csrun::runner
