#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace csrun::storage {

// A file that appears at `path` whole or not at all, for writers that need a path of their own
// (HDF5): they write temporary() (<name>.tmp.<host>.<pid>, beside `path`); commit() fsyncs it,
// renames it over `path` and fsyncs the directory. Destroyed uncommitted (an error on the way),
// it removes the temporary file, so a crash, a kill or a full disk leaves the old file or the
// new one, never half of one. Errors are std::runtime_error naming `path` and the system's
// reason (for example "No space left on device").
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporary() const { return temporary_; }

  // Claims the disk blocks for `bytes` of the temporary file, which must exist by now, so that
  // writes within them cannot fail for want of space: a full disk, a quota or the process's
  // file-size limit (ulimit -f) is an error here, before anything is written. File systems that
  // cannot reserve space (some network ones) are written without.
  void reserve(std::uint64_t bytes);
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  std::uint64_t reserved_ = 0;
  bool committed_ = false;
};

// Writes `bytes` to `path` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           unsigned mode = 0644);

// Temporary files that AtomicFile left in `directory` for files ending in `extension` when its
// process was killed: written on this host by a process that no longer exists (a shared
// directory's files of other hosts are left alone). Removes them, returns their paths.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& directory,
                                                            std::string_view extension);

}  // namespace csrun::storage
