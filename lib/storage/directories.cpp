#include "directories.hpp"

#include <stdexcept>
#include <string>

namespace csrun::storage {

namespace fs = std::filesystem;

void make_directories(const fs::path& directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (!error) return;
  std::string problem = error.message();
  fs::path part;
  for (const fs::path& name : directory) {
    part /= name;
    std::error_code ignored;
    if (fs::exists(part, ignored) && !fs::is_directory(part, ignored)) {
      problem = "'" + part.string() + "' is a file, not a directory";
      break;
    }
  }
  throw std::runtime_error("cannot create the directory '" + directory.string() + "': " + problem);
}

}  // namespace csrun::storage
