#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace csrun::data {

// A read-only view of an HDF5 file's structure, enough to check a dataset layout without
// reading its data. Errors come back as messages, never as HDF5's own stderr output.
class Hdf5File {
 public:
  // Opens `path`; on failure `error()` says why.
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
  std::optional<std::int64_t> integer_attribute(const std::string& name) const;

 private:
  std::int64_t file_ = -1;
  std::string error_;
};

}  // namespace csrun::data
