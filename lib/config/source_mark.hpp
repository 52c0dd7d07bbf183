#pragma once

#include <string>

namespace csrun::config {

// Where a value came from: a params file position (1-based line and column) or, with
// line 0, another origin such as a command-line flag.
struct SourceMark {
  std::string origin;
  int line = 0;
  int column = 0;

  bool has_position() const { return line > 0; }
  // "file.yaml:12:5", or just the origin when there is no position.
  std::string to_string() const;

  friend bool operator==(const SourceMark&, const SourceMark&) = default;
};

}  // namespace csrun::config
