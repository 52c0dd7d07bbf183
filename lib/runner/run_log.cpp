#include "run_log.hpp"

#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <stdexcept>

#include "storage/directories.hpp"

namespace csrun::runner {

namespace {

namespace fs = std::filesystem;

std::string local_time(const char* format) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm parts{};
  localtime_r(&seconds, &parts);
  char text[64];
  std::strftime(text, sizeof text, format, &parts);
  return text;
}

// spdlog's levels as the Model Zoo's logs and --logging spell them.
struct LevelName {
  spdlog::level::level_enum level;
  std::string_view name;
};
constexpr LevelName kLevelNames[] = {
    {spdlog::level::trace, "DEBUG"}, {spdlog::level::debug, "DEBUG"},
    {spdlog::level::info, "INFO"},   {spdlog::level::warn, "WARNING"},
    {spdlog::level::err, "ERROR"},   {spdlog::level::critical, "CRITICAL"}};

// The %* of the pattern: the level's Model Zoo name.
class ModelZooLevel : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& out) override {
    std::string_view name = "INFO";
    for (const LevelName& entry : kLevelNames) {
      if (entry.level == message.level) name = entry.name;
    }
    out.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<ModelZooLevel>();
  }
};

// The Model Zoo's stamp; a process log's lines name their process (the logger's name).
std::unique_ptr<spdlog::formatter> model_zoo_format(bool named = false) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<ModelZooLevel>('*').set_pattern(named ? "%Y-%m-%d %H:%M:%S,%e %*:     %n: %v"
                                                            : "%Y-%m-%d %H:%M:%S,%e %*:     %v");
  return formatter;
}

// stdout, with the progress line taken away while a line is written and put back after it.
class TerminalSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit TerminalSink(ProgressLine& progress) : progress_(progress) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t text;
    formatter_->format(message, text);
    progress_.hide();
    std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::cout.flush();
    progress_.restore();
  }
  void flush_() override { std::cout.flush(); }

 private:
  ProgressLine& progress_;
};

// The last match: DEBUG is spdlog's debug, not trace.
spdlog::level::level_enum level_of(std::string_view name) {
  spdlog::level::level_enum level = spdlog::level::info;
  for (const LevelName& entry : kLevelNames) {
    if (entry.name == name) level = entry.level;
  }
  return level;
}

std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file_sink(const fs::path& path) {
  try {
    return std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string());
  } catch (const spdlog::spdlog_ex&) {
    throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  }
}

}  // namespace

RunLog::RunLog(const std::string& model_dir, const std::string& level)
    : progress_(std::cout, ProgressLine::stdout_is_terminal()) {
  fs::path logs = fs::path(model_dir) / "cerebras_logs";
  std::string stamp = local_time("%Y%m%d_%H%M%S");
  fs::path directory = logs / stamp;
  for (int suffix = 1; fs::exists(directory); ++suffix)
    directory = logs / (stamp + "_" + std::to_string(suffix));
  storage::make_directories(directory);
  directory_ = directory.string();
  fs::path file = directory / "run.log";
  spdlog::sinks_init_list sinks{std::make_shared<TerminalSink>(progress_), file_sink(file)};
  logger_ = std::make_shared<spdlog::logger>("run", sinks);
  logger_->set_formatter(model_zoo_format());
  logger_->set_level(level_of(level));
  logger_->flush_on(spdlog::level::trace);
  // A line that cannot be written is an error of the run, not a note on stderr.
  logger_->set_error_handler([file](const std::string& problem) {
    throw std::runtime_error("cannot write " + file.string() + ": " + problem);
  });
  fs::path latest = logs / "latest";
  std::error_code ignored;
  fs::remove(latest, ignored);
  fs::create_directory_symlink(directory.filename(), latest, ignored);
}

RunLog::RunLog(const std::string& level)
    : progress_(std::cout, ProgressLine::stdout_is_terminal()) {
  spdlog::sinks_init_list sinks{std::make_shared<TerminalSink>(progress_)};
  logger_ = std::make_shared<spdlog::logger>("run", sinks);
  logger_->set_formatter(model_zoo_format());
  logger_->set_level(level_of(level));
}

RunLog::~RunLog() = default;

void RunLog::info(const std::string& message) {
  logger_->info(message);
}

void RunLog::warning(const std::string& message) {
  logger_->warn(message);
}

ProcessLog::ProcessLog(const std::string& process)
    : logger_(std::make_shared<spdlog::logger>(process,
                                               std::make_shared<spdlog::sinks::stderr_sink_mt>())) {
  logger_->set_formatter(model_zoo_format(true));
  logger_->flush_on(spdlog::level::trace);
  // A diagnostic that cannot be written is lost, as a failed write to stderr always is.
  logger_->set_error_handler([](const std::string&) {});
}

void ProcessLog::info(const std::string& message) const {
  logger_->info(message);
}

void ProcessLog::warning(const std::string& message) const {
  logger_->warn(message);
}

void ProcessLog::error(const std::string& message) const {
  logger_->error(message);
}

}  // namespace csrun::runner
