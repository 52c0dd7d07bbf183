#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace csrun::data {

// A read-only view of an HDF5 file's structure, enough to check a dataset layout without
// reading its data. Errors come back as messages, never as HDF5's own stderr output. Each call
// into libhdf5 is made inside a storage::FatalSignalNote naming the file: should libhdf5 crash
// on a damaged file, csrun (which installs the notes) says which.
class Hdf5File {
 public:
  // Opens `path`; on failure `error()` says why, as a predicate: "<path> <error()>".
  explicit Hdf5File(const std::string& path);
  ~Hdf5File();
  Hdf5File(const Hdf5File&) = delete;
  Hdf5File& operator=(const Hdf5File&) = delete;

  bool is_open() const { return file_ >= 0; }
  const std::string& error() const { return error_; }

  struct DatasetInfo {
    std::vector<std::uint64_t> dims;
    bool is_integer = false;
    std::size_t element_size = 0;
    bool is_signed = false;
  };
  bool has_dataset(const std::string& name) const;
  std::optional<DatasetInfo> dataset(const std::string& name) const;
  // An attribute of the file, or of the object (dataset) `object` names.
  std::optional<std::int64_t> integer_attribute(const std::string& name,
                                                const std::string& object = ".") const;
  std::optional<std::string> string_attribute(const std::string& name) const;
  // The datasets at the file's root, by name.
  std::vector<std::string> dataset_names() const;
  // A numeric dataset's elements as float32, converted by HDF5 where it holds another type;
  // nothing when it is missing, not numeric or unreadable.
  std::optional<std::vector<float>> read_floats(const std::string& name) const;
  // Where a dataset stored contiguously as little-endian float32 or int32 keeps its elements in
  // the file, for reading them without HDF5; nothing for any other storage or type.
  std::optional<std::uint64_t> contiguous_offset(const std::string& name) const;
  std::optional<std::vector<std::int32_t>> read_int32(const std::string& name) const;
  // Rows [first, first + count) of the dataset's leading dimension (fewer at its end).
  std::optional<std::vector<std::int32_t>> read_int32_rows(const std::string& name,
                                                           std::uint64_t first,
                                                           std::uint64_t count) const;

 private:
  std::string crash_note_;
  std::int64_t file_ = -1;
  std::string error_;
};

// A new HDF5 file, written dataset by dataset. Throws std::runtime_error naming the file, the
// dataset and the system's reason when HDF5 fails (a full disk, a directory that cannot be
// written).
class Hdf5Writer {
 public:
  // Creates or truncates `path`; messages name `shown_as` when given (the file a temporary one
  // becomes). A user block of `user_block_bytes` (0, or a power of two from 512) is left at the
  // start of the file for the caller, which HDF5 readers skip.
  explicit Hdf5Writer(const std::string& path, std::string shown_as = "",
                      std::uint64_t user_block_bytes = 0);
  // A writer not closed (an error on the way) gives its file up: what it holds is unfinished.
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  // Contiguous datasets, written from the caller's memory without conversion; a name with
  // slashes (example_0/image) creates the groups it names.
  void write(const std::string& name, const std::vector<std::uint64_t>& dims,
             std::span<const float> values);
  void write(const std::string& name, const std::vector<std::uint64_t>& dims,
             std::span<const std::uint8_t> values);
  void write(const std::string& name, const std::vector<std::uint64_t>& dims,
             std::span<const std::int32_t> values);
  // A contiguous little-endian float32 (or int32) dataset whose space is allocated now and left
  // for the caller to fill: returns the file offset its elements start at, from the start of the
  // file (a multiple of 4096 for datasets of 64 KiB and more).
  std::uint64_t place(const std::string& name, const std::vector<std::uint64_t>& dims,
                      bool integer);
  void set_attribute(const std::string& name, std::int64_t value);
  void set_attribute(const std::string& name, const std::string& value);
  void set_dataset_attribute(const std::string& dataset, const std::string& name,
                             std::int64_t value);
  // Flushes and closes; errors surface here rather than in the destructor.
  void close();

 private:
  void write_raw(const std::string& name, const std::vector<std::uint64_t>& dims,
                 std::int64_t file_type, std::int64_t memory_type, const void* data);
  void abandon();
  [[noreturn]] void fail(const std::string& what) const;
  std::string shown_as_;
  std::int64_t file_ = -1;
};

}  // namespace csrun::data
