#pragma once

#include <filesystem>

namespace csrun::storage {

// Creates `directory` and its missing parents, as std::filesystem::create_directories does, but
// fails with a std::runtime_error a user can act on: the part of the path that is a file where a
// directory must be ("cannot create the directory 'run/events': 'run/events' is a file, not a
// directory"), or the system's reason ("Permission denied").
void make_directories(const std::filesystem::path& directory);

}  // namespace csrun::storage
