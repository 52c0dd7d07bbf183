#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "storage/page_aligned.hpp"

namespace csrun::runner {

// A checkpoint that cannot be read: the message names the file and what is wrong with it.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One dataset: float32 values, or int32 for integer state (step counters, positions), kept as
// they are stored so that writing and reading copy them once and convert nothing. Borrowed
// float32 values stay where they are (a running executable's variables, valid while it does not
// run): a checkpoint written at once is written from them, without a copy.
struct CheckpointTensor {
  using Floats = storage::PageAlignedVector<float>;
  using Integers = storage::PageAlignedVector<std::int32_t>;
  using Borrowed = std::span<const float>;

  std::vector<std::uint64_t> dims;
  std::variant<Floats, Integers, Borrowed> values;

  bool integer() const { return std::holds_alternative<Integers>(values); }
  std::size_t size() const;
  double value(std::size_t index) const;
  std::size_t bytes() const { return size() * 4; }
  // The same dims, kind and elements, however they are held.
  friend bool operator==(const CheckpointTensor& a, const CheckpointTensor& b);
};

// A checkpoint_<step>.mdl file: HDF5 with one dataset per flattened dotted key, as the Model
// Zoo's (model.*, optimizer.*, lr_scheduler.*, grad_scaler.*, dataloader.*, global_step), and a
// __metadata__ attribute (JSON: csrun version, model, device). csrun gives each dataset a
// csrun_crc32c attribute: the CRC-32C of its stored bytes, verified on load; and seals the file
// (checkpoint_seal.hpp): all that libhdf5 parses is checked before it opens the file.
struct Checkpoint {
  std::map<std::string, CheckpointTensor> tensors;
  std::string metadata;

  std::int64_t global_step() const;  // the "global_step" entry, or 0
};

// Writes the file atomically (storage::AtomicFile) with the disk space it needs reserved first:
// a crash or a full disk leaves the old file or the new one, never half, and the error says
// why. The datasets are contiguous and written straight from the tensors' memory.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Where load_checkpoint puts an entry's values, decided from its dims and kind before any of
// them is read: memory of the checkpoint's own; the caller's float32 memory of exactly its
// elements (a running executable's variable: the entry then borrows it, and the values are never
// held twice); or nowhere (the entry is left out of the checkpoint, neither read nor checked).
struct EntryPlacement {
  enum class Where { own, into, left_out };
  Where where = Where::own;
  std::span<float> into;

  static EntryPlacement owned() { return {}; }
  static EntryPlacement read_into(std::span<float> memory) { return {Where::into, memory}; }
  static EntryPlacement leave_out() { return {Where::left_out, {}}; }
};
// Asked once for each entry but the loop state (global_step, lr_scheduler.last_epoch and the
// dataloader's position, always read and checked); it may throw to refuse the checkpoint.
using PlaceEntry = std::function<EntryPlacement(
    const std::string& key, const std::vector<std::uint64_t>& dims, bool integer)>;

// Throws CheckpointError for a missing, truncated, corrupt (a checksum that does not match) or
// non-checkpoint file, and for loop state out of range (global_step, dataloader position).
// Without `place`, every entry is read into memory of the checkpoint's own.
Checkpoint load_checkpoint(const std::string& path, const PlaceEntry& place = {});

// Removes the temporary files of checkpoint writes whose process was killed; returns them.
std::vector<std::string> remove_stale_checkpoint_files(const std::string& directory);

}  // namespace csrun::runner
