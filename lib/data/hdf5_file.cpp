#include "hdf5_file.hpp"

#include <hdf5.h>

namespace csrun::data {

namespace {

// HDF5 prints its error stack to stderr by default; csrun reports errors itself.
void silence_hdf5() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

}  // namespace

Hdf5File::Hdf5File(const std::string& path) {
  silence_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    error_ = "not an HDF5 file";
    return;
  }
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) error_ = "cannot be opened as HDF5 (damaged or truncated?)";
}

Hdf5File::~Hdf5File() {
  if (file_ >= 0) H5Fclose(file_);
}

bool Hdf5File::has_dataset(const std::string& name) const {
  return is_open() && H5Lexists(file_, name.c_str(), H5P_DEFAULT) > 0;
}

std::optional<Hdf5File::DatasetInfo> Hdf5File::dataset(const std::string& name) const {
  if (!has_dataset(name)) return std::nullopt;
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid()) return std::nullopt;
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  if (!space.valid() || !type.valid()) return std::nullopt;
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) return std::nullopt;
  DatasetInfo info;
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  info.dims.assign(dims.begin(), dims.end());
  info.is_integer = H5Tget_class(type.get()) == H5T_INTEGER;
  info.element_size = H5Tget_size(type.get());
  info.is_signed = info.is_integer && H5Tget_sign(type.get()) == H5T_SGN_2;
  return info;
}

std::optional<std::int64_t> Hdf5File::integer_attribute(const std::string& name) const {
  if (!is_open() || H5Aexists(file_, name.c_str()) <= 0) return std::nullopt;
  Handle attribute(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attribute.valid()) return std::nullopt;
  long long value = 0;
  if (H5Aread(attribute.get(), H5T_NATIVE_LLONG, &value) < 0) return std::nullopt;
  return value;
}

}  // namespace csrun::data
