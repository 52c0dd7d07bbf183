#pragma once

#include <filesystem>
#include <string>

namespace csrun::test {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` inside the directory and returns the file's path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

// The whole content of a file, as bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

}  // namespace csrun::test
