#pragma once

#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "source_mark.hpp"

namespace csrun::config {

enum class Severity { note, warning, error };

// One finding about the user's input: where it is, which key, and what is wrong.
struct Diagnostic {
  Severity severity = Severity::error;
  SourceMark mark;
  std::string key_path;
  std::string message;

  // "file.yaml:3:5: error: runconfig.max_step: ..."
  std::string to_string() const;
};

const char* severity_name(Severity severity);

// Collects every finding of a run so that all errors are reported at once.
class Diagnostics {
 public:
  void add(Severity severity, SourceMark mark, std::string key_path, std::string message);
  void error(SourceMark mark, std::string key_path, std::string message);
  void warning(SourceMark mark, std::string key_path, std::string message);
  void note(SourceMark mark, std::string key_path, std::string message);
  void append(const Diagnostics& other);

  bool has_errors() const { return error_count() > 0; }
  std::size_t error_count() const;
  const std::vector<Diagnostic>& all() const { return items_; }

  // Throws ValidationError carrying every diagnostic when any of them is an error.
  void throw_if_errors() const;

 private:
  std::vector<Diagnostic> items_;
  std::unordered_set<std::string> seen_;  // each finding's identity, for add's check in O(1)
};

// A user-facing failure made of one or more diagnostics (errors and the warnings that
// came with them). The CLI prints them all and exits with status 1.
class ValidationError : public std::runtime_error {
 public:
  explicit ValidationError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

}  // namespace csrun::config
