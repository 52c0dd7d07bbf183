#include "checkpoint.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <thread>

#include "checkpoint_seal.hpp"
#include "data/data_paths.hpp"
#include "data/hdf5_file.hpp"
#include "storage/atomic_file.hpp"
#include "storage/crc32c.hpp"
#include "storage/uncached_file.hpp"

namespace csrun::runner {

namespace {

namespace fs = std::filesystem;

constexpr char kChecksum[] = "csrun_crc32c";

// Over the bytes a dataset holds as csrun stores it: little-endian int32 or float32.
std::uint32_t checksum(std::span<const std::byte> stored) {
  return storage::crc32c(
      std::string_view(reinterpret_cast<const char*>(stored.data()), stored.size()));
}

// Tensors of this size and more are written and read by csrun itself, past the page cache
// (storage::UncachedFile), at offsets HDF5 places them at; smaller ones go through HDF5.
constexpr std::uint64_t kUncachedBytes = std::uint64_t{64} << 10;

bool written_uncached(const CheckpointTensor& tensor) {
  return tensor.bytes() >= kUncachedBytes;
}

// The file's size, a little more: the tensors, HDF5's superblock and object headers, names and
// checksum attributes, the groups of the keys' dotted names, and the 4 KiB alignment of datasets
// of 64 KiB and more (Hdf5Writer). A reservation much larger than the file would make a write
// fail on a disk with room for it.
std::uint64_t file_bytes(const Checkpoint& checkpoint) {
  constexpr std::uint64_t kFileOverhead = 64 << 10;
  constexpr std::uint64_t kObjectOverhead = 2048;  // a dataset's or a group's
  constexpr std::uint64_t kAlignment = 4096;
  std::uint64_t bytes = kFileOverhead + checkpoint.metadata.size();
  std::set<std::string_view> groups;
  for (const auto& [key, tensor] : checkpoint.tensors) {
    bytes += tensor.bytes() + key.size() + kObjectOverhead;
    if (tensor.bytes() >= kUncachedBytes) bytes += kAlignment;
    for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      groups.insert(std::string_view(key).substr(0, dot));
  }
  return bytes + groups.size() * kObjectOverhead;
}

std::span<const std::byte> stored_bytes(const CheckpointTensor& tensor) {
  return std::visit([](const auto& stored) { return std::as_bytes(std::span(stored)); },
                    tensor.values);
}

std::uint32_t checksum(const CheckpointTensor& tensor) {
  return checksum(stored_bytes(tensor));
}

// The bytes a tensor read from a file is read into.
std::span<std::byte> stored_bytes(CheckpointTensor& tensor) {
  if (auto* floats = std::get_if<CheckpointTensor::Floats>(&tensor.values))
    return std::as_writable_bytes(std::span(*floats));
  return std::as_writable_bytes(std::span(std::get<CheckpointTensor::Integers>(tensor.values)));
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
    if (tensor.size() != 1) {
      throw CheckpointError("checkpoint " + path + ": '" + key + "' holds " +
                            std::to_string(tensor.size()) + " values, not one");
    }
    double value = tensor.value(0);
    if (tensor.integer() && value >= 0 && value <= static_cast<double>(limit)) return;
    char shown[32];
    std::snprintf(shown, sizeof shown, "%.17g", value);
    throw CheckpointError("checkpoint " + path + ": '" + key + "' is " + shown +
                          (tensor.integer() ? "" : ", stored as a float") +
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

// A large tensor whose elements csrun reads itself, past HDF5 and the page cache.
struct LargeRead {
  std::string key;
  std::uint64_t offset = 0;
  std::span<std::byte> into;
  std::uint32_t checksum = 0;  // of what was read
};

// Where the elements of a large contiguous float32/int32 dataset lie, and how many there are;
// nothing for another dataset. The dims are checked against the file's size before anything is
// allocated or overwritten for them.
struct LargeExtent {
  std::uint64_t offset = 0;
  std::uint64_t elements = 0;
};

std::optional<LargeExtent> large_extent(const data::Hdf5File& file, const std::string& key,
                                        const data::Hdf5File::DatasetInfo& info,
                                        std::uint64_t file_size, const std::string& path) {
  auto offset = file.contiguous_offset(key);
  if (!offset) return std::nullopt;
  std::uint64_t elements = 1;
  for (std::uint64_t extent : info.dims) {
    if (extent != 0 && elements > file_size / 4 / extent) {
      throw CheckpointError("checkpoint " + path + ": the entry '" + key +
                            "' has more elements than the file holds (truncated or damaged)");
    }
    elements *= extent;
  }
  if (elements * 4 < kUncachedBytes) return std::nullopt;
  return LargeExtent{*offset, elements};
}

// The loop state: always read and checked, whoever asks for the checkpoint.
bool is_loop_state(const std::string& key) {
  return key == "global_step" || key == "lr_scheduler.last_epoch" || key == "dataloader.epoch" ||
         key == "dataloader.samples_in_epoch";
}

// The caller's memory for an entry of `elements` float32 values.
std::span<float> checked_memory(const EntryPlacement& placement, std::uint64_t elements,
                                bool integer, const std::string& key) {
  if (integer || placement.into.size() != elements) {
    throw std::invalid_argument("checkpoint entry '" + key + "' holds " + std::to_string(elements) +
                                (integer ? " integers" : " floats") +
                                "; the memory given for it, " +
                                std::to_string(placement.into.size()) + " floats");
  }
  return placement.into;
}

// Threads that read the large tensors at once, whatever the number of cores: each mostly waits
// for the disk, and while the kernel faults in fresh pages for one (most of a read's CPU time
// when it lands in a resumed run's new arena) or it checksums what it read, the others keep
// the disk busy. On a 2-core host 4 read a GPT-2 small checkpoint 15-30 % faster than 2 did;
// 8 no faster than 4.
constexpr std::size_t kReadingThreads = 4;

void read_large(const std::string& path, std::vector<LargeRead>& reads) {
  std::size_t threads = std::min(reads.size(), kReadingThreads);
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(threads);
  auto work = [&](std::size_t thread) {
    try {
      storage::UncachedFile raw(path, storage::UncachedFile::Access::read, path);
      for (std::size_t i = next++; i < reads.size(); i = next++) {
        LargeRead& read = reads[i];
        try {
          raw.read_at(read.offset, read.into);
        } catch (const std::runtime_error& error) {
          throw CheckpointError("checkpoint " + path + ": the entry '" + read.key +
                                "': " + error.what());
        }
        read.checksum = checksum(read.into);
      }
    } catch (...) {
      errors[thread] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> team;
    for (std::size_t thread = 1; thread < threads; ++thread)
      team.emplace_back(work, thread);
    if (threads > 0) work(0);
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

// An integer dataset reads as int32, any other as float32 (HDF5 converts what the Model Zoo or
// PyTorch stored in other types).
CheckpointTensor read_entry(const data::Hdf5File& file, const std::string& key,
                            const std::string& path) {
  auto info = file.dataset(key);
  if (info && info->is_integer) {
    if (auto integers = file.read_int32(key))
      return {info->dims, CheckpointTensor::Integers(integers->begin(), integers->end())};
  } else if (info) {
    if (auto floats = file.read_floats(key))
      return {info->dims, CheckpointTensor::Floats(floats->begin(), floats->end())};
  }
  throw CheckpointError("checkpoint " + path + ": the entry '" + key +
                        "' cannot be read as numbers (damaged file?)");
}

// A large entry's memory of its own, for the reading threads to fill.
CheckpointTensor sized_entry(const data::Hdf5File::DatasetInfo& info, std::uint64_t elements) {
  if (info.is_integer) return {info.dims, CheckpointTensor::Integers(elements)};
  return {info.dims, CheckpointTensor::Floats(elements)};
}

// An entry the caller placed in its memory, which the entry borrows: a large one is queued for
// the reading threads, another read through HDF5 and copied there.
CheckpointTensor entry_in_place(const data::Hdf5File& file, const std::string& key,
                                const data::Hdf5File::DatasetInfo& info,
                                const std::optional<LargeExtent>& extent,
                                const EntryPlacement& placement, const std::string& path,
                                std::vector<LargeRead>& large) {
  if (extent) {
    std::span<float> memory = checked_memory(placement, extent->elements, info.is_integer, key);
    large.push_back({key, extent->offset, std::as_writable_bytes(memory)});
    return {info.dims, CheckpointTensor::Borrowed(memory)};
  }
  CheckpointTensor read = read_entry(file, key, path);
  std::span<float> memory = checked_memory(placement, read.size(), read.integer(), key);
  const auto& floats = std::get<CheckpointTensor::Floats>(read.values);
  std::copy(floats.begin(), floats.end(), memory.begin());
  return {info.dims, CheckpointTensor::Borrowed(memory)};
}

}  // namespace

std::size_t CheckpointTensor::size() const {
  return std::visit([](const auto& stored) { return stored.size(); }, values);
}

double CheckpointTensor::value(std::size_t index) const {
  if (index >= size()) throw std::out_of_range("checkpoint tensor index out of range");
  return std::visit([index](const auto& stored) { return static_cast<double>(stored[index]); },
                    values);
}

bool operator==(const CheckpointTensor& a, const CheckpointTensor& b) {
  if (a.dims != b.dims || a.integer() != b.integer() || a.size() != b.size()) return false;
  return std::visit(
      [](const auto& left, const auto& right) { return std::ranges::equal(left, right); }, a.values,
      b.values);
}

std::int64_t Checkpoint::global_step() const {
  auto found = tensors.find("global_step");
  if (found == tensors.end() || found->second.size() == 0) return 0;
  return static_cast<std::int64_t>(found->second.value(0));
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  storage::AtomicFile file(path);
  std::vector<std::pair<std::uint64_t, const CheckpointTensor*>> placed;
  std::uint64_t seal_bytes = seal_block_bytes(static_cast<std::size_t>(std::ranges::count_if(
      checkpoint.tensors, [](const auto& entry) { return written_uncached(entry.second); })));
  {
    data::Hdf5Writer writer(file.temporary().string(), path, seal_bytes);
    file.reserve(seal_bytes + file_bytes(checkpoint));
    for (const auto& [key, tensor] : checkpoint.tensors) {
      if (written_uncached(tensor)) {
        placed.emplace_back(writer.place(key, tensor.dims, tensor.integer()), &tensor);
      } else {
        std::visit([&](const auto& stored) { writer.write(key, tensor.dims, stored); },
                   tensor.values);
      }
      writer.set_dataset_attribute(key, kChecksum, checksum(tensor));
    }
    writer.set_attribute("__metadata__", checkpoint.metadata);
    writer.close();
  }
  std::vector<ByteRange> left_out;
  {
    storage::UncachedFile data(file.temporary(), storage::UncachedFile::Access::write, path);
    for (const auto& [offset, tensor] : placed) {
      data.write_at(offset, stored_bytes(*tensor));
      left_out.push_back({offset, tensor->bytes()});
    }
  }
  seal_checkpoint(file.temporary(), seal_bytes, std::move(left_out), path);
  file.commit();
}

Checkpoint load_checkpoint(const std::string& path, const PlaceEntry& place) {
  check_is_a_file(path);
  check_seal(path);
  data::Hdf5File file(path);
  if (!file.is_open()) {
    throw CheckpointError("checkpoint " + path + " " + file.error() +
                          ": truncated, corrupt, or not written by csrun or the Model Zoo");
  }
  Checkpoint checkpoint;
  checkpoint.metadata = file.string_attribute("__metadata__").value_or("");
  std::uint64_t file_size = fs::file_size(path);
  std::vector<LargeRead> large;
  for (const std::string& key : file.dataset_names()) {
    auto info = file.dataset(key);
    if (!info) {
      checkpoint.tensors[key] = read_entry(file, key, path);
      continue;
    }
    EntryPlacement placement = place && !is_loop_state(key)
                                   ? place(key, info->dims, info->is_integer)
                                   : EntryPlacement::owned();
    if (placement.where == EntryPlacement::Where::left_out) continue;
    CheckpointTensor& tensor = checkpoint.tensors[key];
    auto extent = large_extent(file, key, *info, file_size, path);
    if (placement.where == EntryPlacement::Where::into) {
      tensor = entry_in_place(file, key, *info, extent, placement, path, large);
    } else if (extent) {
      tensor = sized_entry(*info, extent->elements);
      large.push_back({key, extent->offset, stored_bytes(tensor)});
    } else {
      tensor = read_entry(file, key, path);
    }
  }
  read_large(path, large);
  std::map<std::string, std::uint32_t> read_checksums;
  for (const LargeRead& read : large)
    read_checksums[read.key] = read.checksum;
  for (const auto& [key, tensor] : checkpoint.tensors) {
    auto expected = file.integer_attribute(kChecksum, key);
    auto found = read_checksums.find(key);
    std::uint32_t actual = found == read_checksums.end() ? checksum(tensor) : found->second;
    if (expected && static_cast<std::uint32_t>(*expected) != actual) {
      throw CheckpointError("checkpoint " + path + ": the entry '" + key +
                            "' does not match its checksum: the file is corrupt");
    }
  }
  if (!checkpoint.tensors.contains("global_step"))
    throw CheckpointError("checkpoint " + path + " has no global_step: not a training checkpoint");
  check_loop_state(checkpoint, path);
  return checkpoint;
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
