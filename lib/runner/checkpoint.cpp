#include "checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <regex>

#include "data/data_paths.hpp"
#include "data/hdf5_file.hpp"
#include "storage/atomic_file.hpp"
#include "storage/crc32c.hpp"

namespace csrun::runner {

namespace {

namespace fs = std::filesystem;

constexpr char kChecksum[] = "csrun_crc32c";

// Over the bytes a dataset holds as csrun stores it: little-endian int32 or float32.
template <class Stored>
std::uint32_t checksum_of(const std::vector<Stored>& stored) {
  return storage::crc32c(std::string_view(reinterpret_cast<const char*>(stored.data()),
                                          stored.size() * sizeof(Stored)));
}

std::uint32_t checksum(const CheckpointTensor& tensor) {
  const std::vector<double>& values = tensor.values;
  return tensor.integer ? checksum_of(std::vector<std::int32_t>(values.begin(), values.end()))
                        : checksum_of(std::vector<float>(values.begin(), values.end()));
}

template <class Stored>
void write_entry(data::Hdf5Writer& writer, const std::string& key, const CheckpointTensor& tensor) {
  std::vector<Stored> stored(tensor.values.begin(), tensor.values.end());
  writer.write(key, tensor.dims, stored);
  writer.set_dataset_attribute(key, kChecksum, checksum_of(stored));
}

void check_is_a_file(const std::string& path) {
  std::string problem = data::regular_file_problem(path);
  if (!problem.empty()) throw CheckpointError("checkpoint " + path + " " + problem);
}

// The loop state a run resumes from: a step counter and a dataloader position.
void check_loop_state(const Checkpoint& checkpoint, const std::string& path) {
  auto counter = [&](const std::string& key, std::int64_t limit) {
    auto found = checkpoint.tensors.find(key);
    if (found == checkpoint.tensors.end()) return;
    const CheckpointTensor& tensor = found->second;
    if (tensor.values.size() != 1) {
      throw CheckpointError("checkpoint " + path + ": '" + key + "' holds " +
                            std::to_string(tensor.values.size()) + " values, not one");
    }
    double value = tensor.values[0];
    if (tensor.integer && value >= 0 && value <= static_cast<double>(limit)) return;
    char shown[32];
    std::snprintf(shown, sizeof shown, "%.17g", value);
    throw CheckpointError("checkpoint " + path + ": '" + key + "' is " + shown +
                          (tensor.integer ? "" : ", stored as a float") +
                          "; it must be an integer from 0 to " + std::to_string(limit) +
                          " (a damaged or hand-edited file?)");
  };
  // The step counter must still count up: the graph holds it as a 32-bit integer.
  constexpr std::int64_t kLastStep = std::numeric_limits<std::int32_t>::max() - 1;
  counter("global_step", kLastStep);
  counter("lr_scheduler.last_epoch", kLastStep);
  counter("dataloader.epoch", std::numeric_limits<std::int32_t>::max());
  counter("dataloader.samples_in_epoch", std::numeric_limits<std::int32_t>::max());
}

}  // namespace

std::int64_t Checkpoint::global_step() const {
  auto found = tensors.find("global_step");
  if (found == tensors.end() || found->second.values.empty()) return 0;
  return static_cast<std::int64_t>(found->second.values[0]);
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  data::Hdf5Writer writer(path, data::Hdf5Writer::Target::memory);
  for (const auto& [key, tensor] : checkpoint.tensors) {
    if (tensor.integer) {
      write_entry<std::int32_t>(writer, key, tensor);
    } else {
      write_entry<float>(writer, key, tensor);
    }
  }
  writer.set_attribute("__metadata__", checkpoint.metadata);
  storage::write_file_atomically(path, writer.image());
}

Checkpoint load_checkpoint(const std::string& path) {
  check_is_a_file(path);
  data::Hdf5File file(path);
  if (!file.is_open()) {
    throw CheckpointError("checkpoint " + path + " " + file.error() +
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
    CheckpointTensor tensor{info->dims, info->is_integer, std::move(*values)};
    auto expected = file.integer_attribute(kChecksum, key);
    if (expected && static_cast<std::uint32_t>(*expected) != checksum(tensor)) {
      throw CheckpointError("checkpoint " + path + ": the entry '" + key +
                            "' does not match its checksum: the file is corrupt");
    }
    checkpoint.tensors[key] = std::move(tensor);
  }
  if (!checkpoint.tensors.contains("global_step"))
    throw CheckpointError("checkpoint " + path + " has no global_step: not a training checkpoint");
  check_loop_state(checkpoint, path);
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
    if (!std::regex_match(file, match, name)) continue;
    std::int64_t step = 0;
    std::string digits = match[1].str();
    auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (parsed.ec == std::errc()) found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> remove_stale_checkpoint_files(const std::string& directory) {
  std::vector<std::string> removed;
  std::error_code error;
  if (!fs::is_directory(directory, error)) return removed;
  for (const fs::path& path : storage::remove_stale_temporaries(directory, ".mdl"))
    removed.push_back(path.string());
  return removed;
}

}  // namespace csrun::runner
