#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

namespace csrun::graph {

// The model code that built a node: a file name (without directories, so the same on every
// machine) and a line. A plain value, unlike std::source_location: a saved plan restores it.
class SourceLine {
 public:
  SourceLine() = default;
  // Implicit, so `SourceLine location = std::source_location::current()` records the caller.
  SourceLine(const std::source_location& location);  // NOLINT(google-explicit-constructor)
  SourceLine(std::string_view file, std::uint32_t line);

  std::string_view file() const { return file_; }
  std::uint32_t line() const { return line_; }
  std::string to_string() const;  // "gpt.cpp:88"

  friend bool operator==(const SourceLine& a, const SourceLine& b) {
    return a.line_ == b.line_ && a.file() == b.file();
  }

 private:
  // Points at a string literal of the program or at a name interned for the process's life.
  const char* file_ = "";
  std::uint32_t line_ = 0;
};

}  // namespace csrun::graph
