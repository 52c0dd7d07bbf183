#include "model_dir.hpp"

#include <glob.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace csrun::runner {

namespace fs = std::filesystem;

namespace {

// The deepest part of `path` that exists (the directory a new model_dir would be created in).
fs::path existing_ancestor(fs::path path) {
  std::error_code error;
  path = fs::absolute(path, error);
  while (!path.empty() && !fs::exists(path, error)) {
    if (path == path.parent_path()) break;
    path = path.parent_path();
  }
  return path;
}

// The kernel's file system at `path` where it is one in which no directory can be made (root's
// access() grants writes there all the same), or empty.
std::string kernel_file_system(const fs::path& path) {
  struct statfs info {};
  if (statfs(path.c_str(), &info) != 0) return "";
  switch (info.f_type) {
    case PROC_SUPER_MAGIC:
      return "proc";
    case SYSFS_MAGIC:
      return "sysfs";
    default:
      return "";
  }
}

}  // namespace

void check_model_dir(const std::string& path, const config::SourceMark& mark,
                     const std::string& key_path, config::Diagnostics& diagnostics) {
  std::error_code error;
  if (path.empty()) {
    diagnostics.error(mark, key_path,
                      "model_dir is empty; give a directory for checkpoints and logs");
    return;
  }
  if (fs::exists(path, error)) {
    if (!fs::is_directory(path, error)) {
      diagnostics.error(mark, key_path, "model_dir '" + path + "' exists and is not a directory");
    } else if (access(path.c_str(), W_OK | X_OK) != 0) {
      diagnostics.error(mark, key_path, "model_dir '" + path + "' is not writable");
    }
    return;
  }
  fs::path ancestor = existing_ancestor(path);
  if (!fs::is_directory(ancestor, error)) {
    diagnostics.error(mark, key_path,
                      "model_dir '" + path + "' cannot be created: '" + ancestor.string() +
                          "' is not a directory");
  } else if (access(ancestor.c_str(), W_OK | X_OK) != 0) {
    diagnostics.error(
        mark, key_path,
        "model_dir '" + path + "' cannot be created: '" + ancestor.string() + "' is not writable");
  } else if (std::string system = kernel_file_system(ancestor); !system.empty()) {
    diagnostics.error(mark, key_path,
                      "model_dir '" + path + "' cannot be created: '" + ancestor.string() +
                          "' is in the kernel's " + system + " file system");
  }
}

void check_checkpoint_file(const std::string& path, const config::SourceMark& mark,
                           const std::string& key_path, config::Diagnostics& diagnostics) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    diagnostics.error(mark, key_path, "the checkpoint '" + path + "' does not exist");
  } else if (!fs::is_regular_file(path, error)) {
    diagnostics.error(mark, key_path, "the checkpoint '" + path + "' is not a regular file");
  } else if (access(path.c_str(), R_OK) != 0) {
    diagnostics.error(mark, key_path, "the checkpoint '" + path + "' is not readable");
  }
}

std::vector<std::string> expand_checkpoint_patterns(const std::vector<config::Node>& patterns,
                                                    config::Diagnostics& diagnostics) {
  std::vector<std::string> paths;
  for (const config::Node& pattern : patterns) {
    glob_t matches{};
    int status = glob(pattern.as_string().c_str(), GLOB_NOSORT | GLOB_ERR, nullptr, &matches);
    if (status != 0) {
      diagnostics.error(pattern.mark(), pattern.path(),
                        "no checkpoint matches '" + pattern.as_string() + "'");
    } else {
      // In the order of the numbers in their names: checkpoint_2.mdl before checkpoint_10.mdl.
      std::vector<std::string> matched(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
      std::sort(matched.begin(), matched.end(), [](const std::string& a, const std::string& b) {
        return strverscmp(a.c_str(), b.c_str()) < 0;
      });
      for (std::string& path : matched) {
        check_checkpoint_file(path, pattern.mark(), pattern.path(), diagnostics);
        paths.push_back(std::move(path));
      }
    }
    globfree(&matches);
  }
  return paths;
}

}  // namespace csrun::runner
