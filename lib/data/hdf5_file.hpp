#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace csrun::data {

// A read-only view of an HDF5 file's structure, enough to check a dataset layout without
// reading its data. Errors come back as messages, never as HDF5's own stderr output.
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
  // A numeric dataset's elements, converted by HDF5 (exactly, for integers and floats up to
  // 32 bits); nothing when it is missing, not numeric or unreadable.
  std::optional<std::vector<double>> read_numbers(const std::string& name) const;
  std::optional<std::vector<std::int32_t>> read_int32(const std::string& name) const;
  // Rows [first, first + count) of the dataset's leading dimension (fewer at its end).
  std::optional<std::vector<std::int32_t>> read_int32_rows(const std::string& name,
                                                           std::uint64_t first,
                                                           std::uint64_t count) const;

 private:
  std::int64_t file_ = -1;
  std::string error_;
};

// A new HDF5 file, written dataset by dataset. Throws std::runtime_error naming the file and
// dataset when HDF5 fails (a full disk, a directory that cannot be written).
class Hdf5Writer {
 public:
  // On disk: creates or truncates `path`. In memory: nothing touches the disk; image() returns
  // the file's bytes for the caller to store (a full disk then cannot leave HDF5 half-closed).
  enum class Target { disk, memory };
  explicit Hdf5Writer(const std::string& path, Target target = Target::disk);
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  void write(const std::string& name, const std::vector<std::uint64_t>& dims,
             const std::vector<float>& values);
  void write(const std::string& name, const std::vector<std::uint64_t>& dims,
             const std::vector<std::int32_t>& values);
  void set_attribute(const std::string& name, std::int64_t value);
  void set_attribute(const std::string& name, const std::string& value);
  void set_dataset_attribute(const std::string& dataset, const std::string& name,
                             std::int64_t value);
  // Flushes and closes; errors surface here rather than in the destructor.
  void close();
  // An in-memory file's bytes; closes it.
  std::string image();

 private:
  void write_raw(const std::string& name, const std::vector<std::uint64_t>& dims,
                 std::int64_t file_type, std::int64_t memory_type, const void* data);
  std::string path_;
  std::int64_t file_ = -1;
};

}  // namespace csrun::data
