#include "checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "data/hdf5_file.hpp"

namespace csrun::runner {

namespace {

namespace fs = std::filesystem;

void fsync_path(const fs::path& path, int flags) {
  int descriptor = ::open(path.c_str(), flags);
  if (descriptor < 0) throw std::runtime_error("cannot open " + path.string() + " to sync it");
  int synced = ::fsync(descriptor);
  ::close(descriptor);
  if (synced != 0) throw std::runtime_error("cannot sync " + path.string() + " to disk");
}

}  // namespace

std::int64_t Checkpoint::global_step() const {
  auto found = tensors.find("global_step");
  if (found == tensors.end() || found->second.values.empty()) return 0;
  return static_cast<std::int64_t>(found->second.values[0]);
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  fs::path target(path);
  fs::path temporary = target;
  temporary += ".tmp." + std::to_string(::getpid());
  try {
    data::Hdf5Writer writer(temporary.string());
    for (const auto& [key, tensor] : checkpoint.tensors) {
      if (tensor.integer) {
        writer.write(key, tensor.dims,
                     std::vector<std::int32_t>(tensor.values.begin(), tensor.values.end()));
      } else {
        writer.write(key, tensor.dims,
                     std::vector<float>(tensor.values.begin(), tensor.values.end()));
      }
    }
    writer.set_attribute("__metadata__", checkpoint.metadata);
    writer.close();
    fsync_path(temporary, O_RDONLY);
    fs::rename(temporary, target);
    fsync_path(target.has_parent_path() ? target.parent_path() : fs::path("."),
               O_RDONLY | O_DIRECTORY);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  if (!fs::is_regular_file(path)) throw CheckpointError("checkpoint " + path + " does not exist");
  data::Hdf5File file(path);
  if (!file.is_open()) {
    throw CheckpointError("checkpoint " + path + " is " + file.error() +
                          ": truncated, corrupt, or not written by csrun or the Model Zoo");
  }
  Checkpoint checkpoint;
  checkpoint.metadata = file.string_attribute("__metadata__").value_or("");
  for (const std::string& key : file.dataset_names()) {
    auto info = file.dataset(key);
    auto values = file.read_numbers(key);
    if (!info || !values) {
      throw CheckpointError("checkpoint " + path + ": the entry '" + key +
                            "' cannot be read as numbers (damaged file?)");
    }
    checkpoint.tensors[key] = CheckpointTensor{info->dims, info->is_integer, std::move(*values)};
  }
  if (!checkpoint.tensors.contains("global_step"))
    throw CheckpointError("checkpoint " + path + " has no global_step: not a training checkpoint");
  return checkpoint;
}

std::vector<std::pair<std::int64_t, std::string>> find_checkpoints(const std::string& directory) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code error;
  if (!fs::is_directory(directory, error)) return found;
  static const std::regex name(R"(checkpoint_(\d+)(_\d{8}_\d{6})?\.mdl)");
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    std::smatch match;
    std::string file = entry.path().filename().string();
    if (std::regex_match(file, match, name))
      found.emplace_back(std::stoll(match[1].str()), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace csrun::runner
