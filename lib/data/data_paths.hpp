#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/diagnostics.hpp"
#include "config/node.hpp"

namespace csrun::data {

// A path from a params value with $VAR / ${VAR} expanded (as Python's os.path.expandvars does
// for Model Zoo configs); an unset variable is reported and gives nothing.
std::optional<std::string> expand_path(const config::Node& value, config::Diagnostics& diagnostics);

// One or more paths: a string or a list of strings.
std::vector<std::string> expand_paths(const config::Node& value, config::Diagnostics& diagnostics);

// Files in `directory` whose names end with `suffix`, sorted.
std::vector<std::string> files_with_suffix(const std::string& directory, const std::string& suffix);

// Why `path` cannot be read as a data file, as a predicate ("<path> <problem>"), or empty when it
// is a regular file. Checked before opening: opening a FIFO would wait for a writer forever.
std::string regular_file_problem(const std::string& path);

// Reports (at `value`) a path that does not exist or is not a directory / regular file.
bool require_directory(const std::string& path, const config::Node& value,
                       config::Diagnostics& diagnostics);
bool require_file(const std::string& path, const config::Node& value,
                  config::Diagnostics& diagnostics);
// The files of `directory` whose names end with `suffix`, sorted; reports (at `value`) a
// directory that is missing or holds none, and gives nothing then.
std::vector<std::string> require_files(const std::string& directory, const std::string& suffix,
                                       const config::Node& value, config::Diagnostics& diagnostics);

}  // namespace csrun::data
