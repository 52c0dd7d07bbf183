#include "source_line.hpp"

#include <mutex>
#include <set>

namespace csrun::graph {

namespace {

const char* base_name(const char* path) {
  std::string_view text(path);
  std::size_t slash = text.find_last_of('/');
  return slash == std::string_view::npos ? path : path + slash + 1;
}

// File names read back from saved plans. Few (one per model source file) and never freed, so a
// SourceLine can hold a plain pointer to them.
const char* interned(std::string_view file) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;
  std::lock_guard lock(mutex);
  auto found = names.find(file);
  if (found == names.end()) found = names.emplace(file).first;
  return found->c_str();
}

}  // namespace

SourceLine::SourceLine(const std::source_location& location)
    : file_(base_name(location.file_name())), line_(location.line()) {}

SourceLine::SourceLine(std::string_view file, std::uint32_t line)
    : file_(interned(file)), line_(line) {}

std::string SourceLine::to_string() const {
  return std::string(file_) + ":" + std::to_string(line_);
}

}  // namespace csrun::graph
