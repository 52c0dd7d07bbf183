#include "diagnostics.hpp"

#include <algorithm>

namespace csrun::config {

std::string SourceMark::to_string() const {
  if (!has_position()) return origin;
  return origin + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::note:
      return "note";
    case Severity::warning:
      return "warning";
    case Severity::error:
      return "error";
  }
  return "error";
}

std::string Diagnostic::to_string() const {
  std::string text = mark.to_string();
  if (!text.empty()) text += ": ";
  text += severity_name(severity);
  text += ": ";
  if (!key_path.empty()) text += key_path + ": ";
  return text + message;
}

void Diagnostics::add(Severity severity, SourceMark mark, std::string key_path,
                      std::string message) {
  Diagnostic diagnostic{severity, std::move(mark), std::move(key_path), std::move(message)};
  // A value reached twice (an anchor used under several keys, a section checked by two
  // stages) is one finding: a file position belongs to one value, whatever path led there.
  bool positioned = diagnostic.mark.has_position();
  std::string identity = std::string(severity_name(severity)) + '\0' + diagnostic.mark.origin +
                         '\0' + std::to_string(diagnostic.mark.line) + ':' +
                         std::to_string(diagnostic.mark.column) + '\0' + diagnostic.message + '\0' +
                         (positioned ? std::string() : diagnostic.key_path);
  if (!seen_.insert(std::move(identity)).second) return;
  items_.push_back(std::move(diagnostic));
}

void Diagnostics::error(SourceMark mark, std::string key_path, std::string message) {
  add(Severity::error, std::move(mark), std::move(key_path), std::move(message));
}

void Diagnostics::warning(SourceMark mark, std::string key_path, std::string message) {
  add(Severity::warning, std::move(mark), std::move(key_path), std::move(message));
}

void Diagnostics::note(SourceMark mark, std::string key_path, std::string message) {
  add(Severity::note, std::move(mark), std::move(key_path), std::move(message));
}

void Diagnostics::append(const Diagnostics& other) {
  for (const Diagnostic& d : other.items_)
    add(d.severity, d.mark, d.key_path, d.message);
}

std::size_t Diagnostics::error_count() const {
  return static_cast<std::size_t>(std::count_if(
      items_.begin(), items_.end(), [](const auto& d) { return d.severity == Severity::error; }));
}

void Diagnostics::throw_if_errors() const {
  if (has_errors()) throw ValidationError(items_);
}

namespace {

std::string summarize(const std::vector<Diagnostic>& diagnostics) {
  std::string text;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity != Severity::error) continue;
    if (!text.empty()) text += '\n';
    text += d.to_string();
  }
  return text;
}

}  // namespace

ValidationError::ValidationError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(summarize(diagnostics)), diagnostics_(std::move(diagnostics)) {}

}  // namespace csrun::config
