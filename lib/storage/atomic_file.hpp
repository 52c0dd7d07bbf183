#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace csrun::storage {

// Writes `bytes` to `path` so that a crash, a kill or a full disk leaves the old file or the new
// one, never half of one: a temporary file beside it (<name>.tmp.<host>.<pid>) is written and
// fsync'ed, renamed over `path`, and the directory fsync'ed. Throws std::runtime_error naming
// the path and the system's reason (for example "No space left on device"); the temporary file
// is removed then.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           unsigned mode = 0644);

// Temporary files that write_file_atomically left in `directory` for files ending in `extension`
// when its process was killed: written on this host by a process that no longer exists (a
// shared directory's files of other hosts are left alone). Removes them, returns their paths.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& directory,
                                                            std::string_view extension);

}  // namespace csrun::storage
