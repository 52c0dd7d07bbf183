#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace csrun::fuzz {

// Readers take files: each input is written to a directory of this process in /dev/shm (memory,
// so fuzzing does not wear a disk), removed when the process exits.
class ScratchDirectory {
 public:
  ScratchDirectory();
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::string& path() const { return path_; }
  // Writes `bytes` to `name` in the directory; returns the file's path.
  std::string write(const std::string& name, std::string_view bytes) const;

 private:
  std::string path_;
};

const ScratchDirectory& scratch();

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace csrun::fuzz
