#include "scratch_directory.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace csrun::fuzz {

namespace fs = std::filesystem;

ScratchDirectory::ScratchDirectory() {
  fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  path_ = (base / ("csrun-fuzz-" + std::to_string(::getpid()))).string();
  fs::create_directories(path_);
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::string ScratchDirectory::write(const std::string& name, std::string_view bytes) const {
  std::string path = path_ + "/" + name;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw std::logic_error("fuzz harness: cannot write " + path);
  return path;
}

const ScratchDirectory& scratch() {
  static const ScratchDirectory directory;
  return directory;
}

}  // namespace csrun::fuzz
