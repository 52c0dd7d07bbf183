#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace csrun::runner {

// A checkpoint that cannot be read: the message names the file and what is wrong with it.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckpointTensor {
  std::vector<std::uint64_t> dims;
  bool integer = false;  // stored as int32, else float32
  std::vector<double> values;
};

// A checkpoint_<step>.mdl file: HDF5 with one dataset per flattened dotted key, as the Model
// Zoo's (model.*, optimizer.*, lr_scheduler.*, grad_scaler.*, dataloader.*, global_step), and a
// __metadata__ attribute (JSON: csrun version, model, device).
struct Checkpoint {
  std::map<std::string, CheckpointTensor> tensors;
  std::string metadata;

  std::int64_t global_step() const;  // the "global_step" entry, or 0
};

// Writes atomically: a temporary file in the same directory, flushed and fsync'ed, renamed over
// `path`, then the directory fsync'ed. A crash leaves the old file or the new one, never half.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Throws CheckpointError for a missing, truncated, corrupt or non-checkpoint file.
Checkpoint load_checkpoint(const std::string& path);

// checkpoint_<step>.mdl files of `directory`, by step (ascending).
std::vector<std::pair<std::int64_t, std::string>> find_checkpoints(const std::string& directory);

}  // namespace csrun::runner
