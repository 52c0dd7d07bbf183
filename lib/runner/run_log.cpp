#include "run_log.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <stdexcept>

namespace csrun::runner {

namespace {

namespace fs = std::filesystem;

std::string local_time(const char* format, bool milliseconds) {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm parts{};
  localtime_r(&seconds, &parts);
  char text[64];
  std::strftime(text, sizeof text, format, &parts);
  std::string result = text;
  if (!milliseconds) return result;
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ",%03d", static_cast<int>(ms));
  return result + fraction;
}

}  // namespace

RunLog::RunLog(const std::string& model_dir)
    : progress_(std::cout, ProgressLine::stdout_is_terminal()) {
  fs::path logs = fs::path(model_dir) / "cerebras_logs";
  std::string stamp = local_time("%Y%m%d_%H%M%S", false);
  fs::path directory = logs / stamp;
  for (int suffix = 1; fs::exists(directory); ++suffix)
    directory = logs / (stamp + "_" + std::to_string(suffix));
  fs::create_directories(directory);
  directory_ = directory.string();
  file_.open(directory / "run.log", std::ios::app);
  if (!file_)
    throw std::runtime_error("cannot write " + (directory / "run.log").string() + ": " +
                             std::strerror(errno));
  fs::path latest = logs / "latest";
  std::error_code ignored;
  fs::remove(latest, ignored);
  fs::create_directory_symlink(directory.filename(), latest, ignored);
}

void RunLog::info(const std::string& message) {
  line("INFO", message);
}
void RunLog::warning(const std::string& message) {
  line("WARNING", message);
}

void RunLog::line(const char* level, const std::string& message) {
  std::string text = local_time("%Y-%m-%d %H:%M:%S", true) + " " + level + ":     " + message;
  progress_.hide();
  std::cout << text << std::endl;
  progress_.restore();
  file_ << text << '\n';
  file_.flush();
}

}  // namespace csrun::runner
