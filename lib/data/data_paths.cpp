#include "data_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace csrun::data {

namespace fs = std::filesystem;

namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

std::optional<std::string> expand_path(const config::Node& value,
                                       config::Diagnostics& diagnostics) {
  if (!value.is_string()) return std::nullopt;
  const std::string& text = value.as_string();
  std::string result;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] != '$') {
      result += text[i++];
      continue;
    }
    bool braced = i + 1 < text.size() && text[i + 1] == '{';
    std::size_t start = i + (braced ? 2 : 1);
    std::size_t end = start;
    while (end < text.size() && is_name_char(text[end]))
      ++end;
    if (end == start || (braced && (end >= text.size() || text[end] != '}'))) {
      result += text[i++];
      continue;
    }
    std::string name = text.substr(start, end - start);
    const char* variable = std::getenv(name.c_str());
    if (!variable) {
      diagnostics.error(value.mark(), value.path(),
                        "the environment variable " + name + " used in '" + text +
                            "' is not set; set it or write the path out");
      return std::nullopt;
    }
    result += variable;
    i = end + (braced ? 1 : 0);
  }
  return result;
}

std::vector<std::string> expand_paths(const config::Node& value, config::Diagnostics& diagnostics) {
  std::vector<std::string> paths;
  if (value.is_string()) {
    if (auto path = expand_path(value, diagnostics)) paths.push_back(*path);
  }
  for (const config::Node& item : value.items()) {
    if (auto path = expand_path(item, diagnostics)) paths.push_back(*path);
  }
  return paths;
}

std::vector<std::string> files_with_suffix(const std::string& directory,
                                           const std::string& suffix) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file(error) && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string regular_file_problem(const std::string& path) {
  std::error_code error;
  switch (fs::status(path, error).type()) {
    case fs::file_type::regular:
      return {};
    case fs::file_type::not_found:
      return "does not exist";
    case fs::file_type::directory:
      return "is a directory, not a file";
    case fs::file_type::none:
      return "cannot be examined (" + error.message() + ")";
    default:
      return "is not a regular file (a FIFO, socket or device?)";
  }
}

bool require_directory(const std::string& path, const config::Node& value,
                       config::Diagnostics& diagnostics) {
  std::error_code error;
  if (fs::is_directory(path, error)) return true;
  bool exists = fs::exists(path, error);
  diagnostics.error(value.mark(), value.path(),
                    exists ? "'" + path + "' is not a directory"
                           : "the directory '" + path +
                                 "' does not exist (relative paths start "
                                 "from the current directory, " +
                                 fs::current_path(error).string() +
                                 "); use --fake_data to validate without the dataset");
  return false;
}

std::vector<std::string> require_files(const std::string& directory, const std::string& suffix,
                                       const config::Node& value,
                                       config::Diagnostics& diagnostics) {
  if (!require_directory(directory, value, diagnostics)) return {};
  std::vector<std::string> files = files_with_suffix(directory, suffix);
  if (files.empty()) {
    diagnostics.error(value.mark(), value.path(), "no " + suffix + " files in '" + directory + "'");
  }
  return files;
}

bool require_file(const std::string& path, const config::Node& value,
                  config::Diagnostics& diagnostics) {
  std::error_code error;
  std::string problem = regular_file_problem(path);
  if (problem.empty()) return true;
  bool exists = fs::exists(path, error);
  diagnostics.error(value.mark(), value.path(),
                    exists ? "'" + path + "' " + problem
                           : "the file '" + path +
                                 "' does not exist (relative paths start from "
                                 "the current directory, " +
                                 fs::current_path(error).string() + ")");
  return false;
}

}  // namespace csrun::data
