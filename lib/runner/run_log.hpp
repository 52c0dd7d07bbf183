#pragma once

#include <fstream>
#include <string>

namespace csrun::runner {

// The run's log: model_dir/cerebras_logs/<timestamp>/run.log with a `latest` link to its
// directory, as the Model Zoo keeps them. Each line goes to stdout and to the file, stamped
// "2026-11-22 10:00:00,123 INFO:     ".
class RunLog {
 public:
  explicit RunLog(const std::string& model_dir);
  void info(const std::string& message);
  void warning(const std::string& message);
  const std::string& directory() const { return directory_; }

 private:
  void line(const char* level, const std::string& message);
  std::string directory_;
  std::ofstream file_;
};

}  // namespace csrun::runner
