#include "hdf5_file.hpp"

#include <hdf5.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string_view>

#include "storage/fatal_signal_note.hpp"

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

Hdf5File::Hdf5File(const std::string& path)
    : crash_note_("while libhdf5 read '" + path +
                  "' (libhdf5 can crash on a damaged HDF5 file: check it with h5dump -H, or "
                  "write it again)") {
  storage::FatalSignalNote note(crash_note_);
  silence_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    error_ = "is not an HDF5 file";
    return;
  }
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) error_ = "cannot be opened as HDF5 (damaged or truncated?)";
}

Hdf5File::~Hdf5File() {
  storage::FatalSignalNote note(crash_note_);
  if (file_ >= 0) H5Fclose(file_);
}

bool Hdf5File::has_dataset(const std::string& name) const {
  storage::FatalSignalNote note(crash_note_);
  return is_open() && H5Lexists(file_, name.c_str(), H5P_DEFAULT) > 0;
}

std::optional<Hdf5File::DatasetInfo> Hdf5File::dataset(const std::string& name) const {
  storage::FatalSignalNote note(crash_note_);
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

std::optional<std::int64_t> Hdf5File::integer_attribute(const std::string& name,
                                                        const std::string& object) const {
  storage::FatalSignalNote note(crash_note_);
  if (!is_open() || H5Aexists_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT) <= 0)
    return std::nullopt;
  Handle attribute(H5Aopen_by_name(file_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose);
  if (!attribute.valid()) return std::nullopt;
  long long value = 0;
  if (H5Aread(attribute.get(), H5T_NATIVE_LLONG, &value) < 0) return std::nullopt;
  return value;
}

std::optional<std::string> Hdf5File::string_attribute(const std::string& name) const {
  storage::FatalSignalNote note(crash_note_);
  if (!is_open() || H5Aexists(file_, name.c_str()) <= 0) return std::nullopt;
  Handle attribute(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(attribute.get()), H5Tclose);
  if (!attribute.valid() || !type.valid() || H5Tget_class(type.get()) != H5T_STRING)
    return std::nullopt;
  if (H5Tis_variable_str(type.get()) > 0) return std::nullopt;
  std::string value(H5Tget_size(type.get()), '\0');
  if (H5Aread(attribute.get(), type.get(), value.data()) < 0) return std::nullopt;
  while (!value.empty() && value.back() == '\0')
    value.pop_back();
  return value;
}

std::vector<std::string> Hdf5File::dataset_names() const {
  storage::FatalSignalNote note(crash_note_);
  std::vector<std::string> names;
  if (!is_open()) return names;
  H5G_info_t info;
  if (H5Gget_info(file_, &info) < 0) return names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t length =
        H5Lget_name_by_idx(file_, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (length < 0) continue;
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    H5Lget_name_by_idx(file_, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.pop_back();
    names.push_back(std::move(name));
  }
  return names;
}

namespace {

template <class T>
std::optional<std::vector<T>> read_all(std::int64_t file, const std::string& name, hid_t memory) {
  Handle dataset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.valid()) return std::nullopt;
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  H5T_class_t kind = H5Tget_class(type.get());
  if (kind != H5T_INTEGER && kind != H5T_FLOAT) return std::nullopt;
  hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) return std::nullopt;
  std::vector<T> values(static_cast<std::size_t>(count));
  if (count > 0 && H5Dread(dataset.get(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    return std::nullopt;
  return values;
}

}  // namespace

std::optional<std::vector<float>> Hdf5File::read_floats(const std::string& name) const {
  storage::FatalSignalNote note(crash_note_);
  if (!has_dataset(name)) return std::nullopt;
  return read_all<float>(file_, name, H5T_NATIVE_FLOAT);
}

std::optional<std::uint64_t> Hdf5File::contiguous_offset(const std::string& name) const {
  storage::FatalSignalNote note(crash_note_);
  if (!has_dataset(name)) return std::nullopt;
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle type(dataset.valid() ? H5Dget_type(dataset.get()) : -1, H5Tclose);
  if (!type.valid() ||
      (H5Tequal(type.get(), H5T_IEEE_F32LE) <= 0 && H5Tequal(type.get(), H5T_STD_I32LE) <= 0))
    return std::nullopt;
  haddr_t offset = H5Dget_offset(dataset.get());
  if (offset == HADDR_UNDEF) return std::nullopt;
  return offset;
}

std::optional<std::vector<std::int32_t>> Hdf5File::read_int32(const std::string& name) const {
  storage::FatalSignalNote note(crash_note_);
  if (!has_dataset(name)) return std::nullopt;
  return read_all<std::int32_t>(file_, name, H5T_NATIVE_INT32);
}

std::optional<std::vector<std::int32_t>> Hdf5File::read_int32_rows(const std::string& name,
                                                                   std::uint64_t first,
                                                                   std::uint64_t count) const {
  storage::FatalSignalNote note(crash_note_);
  auto info = dataset(name);
  if (!info || info->dims.empty() || !info->is_integer || first > info->dims[0])
    return std::nullopt;
  std::vector<hsize_t> start(info->dims.size(), 0);
  std::vector<hsize_t> extent(info->dims.begin(), info->dims.end());
  start[0] = first;
  extent[0] = std::min<hsize_t>(count, info->dims[0] - first);
  Handle data(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle space(H5Dget_space(data.get()), H5Sclose);
  Handle memory(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr),
                H5Sclose);
  if (!data.valid() || !space.valid() || !memory.valid() ||
      H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, extent.data(),
                          nullptr) < 0)
    return std::nullopt;
  hssize_t elements = H5Sget_select_npoints(space.get());
  std::vector<std::int32_t> values(static_cast<std::size_t>(std::max<hssize_t>(elements, 0)));
  if (elements > 0 && H5Dread(data.get(), H5T_NATIVE_INT32, memory.get(), space.get(), H5P_DEFAULT,
                              values.data()) < 0)
    return std::nullopt;
  return values;
}

namespace {

// The system's reason for HDF5's last failure, as its POSIX driver records it ("..., errno =
// 28, error message = 'No space left on device', ..."); empty when the error stack has none.
std::string system_reason() {
  std::string reason;
  auto find = [](unsigned, const H5E_error2_t* error, void* found) -> herr_t {
    std::string_view text = error->desc ? error->desc : "";
    constexpr std::string_view kMarker = "error message = '";
    auto at = text.find(kMarker);
    if (at == std::string_view::npos) return 0;
    text.remove_prefix(at + kMarker.size());
    *static_cast<std::string*>(found) = std::string(text.substr(0, text.find('\'')));
    return 1;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find, &reason);
  return reason;
}

}  // namespace

Hdf5Writer::Hdf5Writer(const std::string& path, std::string shown_as,
                       std::uint64_t user_block_bytes)
    : shown_as_(shown_as.empty() ? path : std::move(shown_as)) {
  silence_hdf5();
  // Large datasets start on a 4 KiB boundary, where direct I/O can write them (place()).
  Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!access.valid() || H5Pset_alignment(access.get(), 64 * 1024, 4096) < 0)
    fail("cannot create the HDF5 file " + shown_as_);
  Handle creation(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  if (!creation.valid() || H5Pset_userblock(creation.get(), user_block_bytes) < 0)
    fail("cannot create the HDF5 file " + shown_as_);
  file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, creation.get(), access.get());
  if (file_ < 0) fail("cannot create the HDF5 file " + shown_as_);
}

Hdf5Writer::~Hdf5Writer() {
  if (file_ >= 0) abandon();
}

[[noreturn]] void Hdf5Writer::fail(const std::string& what) const {
  std::string reason = system_reason();
  throw std::runtime_error(what + (reason.empty() ? "" : ": " + reason));
}

// HDF5 1.10 cannot close a file whose closing writes fail (a full disk): H5Fclose reports the
// error but keeps the file's identifier, and the library's shutdown at exit closes it again,
// freed, and crashes. A file given up on is first pointed at an anonymous memory file, so its
// closing writes succeed; they are discarded with it.
void Hdf5Writer::abandon() {
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file_, H5P_DEFAULT, &handle) >= 0 && handle) {
    int scratch = ::memfd_create("csrun-abandoned-hdf5", MFD_CLOEXEC);
    if (scratch >= 0) {
      ::dup2(scratch, *static_cast<int*>(handle));
      ::close(scratch);
    }
  }
  H5Fclose(file_);
  file_ = -1;
}

std::uint64_t Hdf5Writer::place(const std::string& name, const std::vector<std::uint64_t>& dims,
                                bool integer) {
  std::vector<hsize_t> extent(dims.begin(), dims.end());
  Handle space(extent.empty()
                   ? H5Screate(H5S_SCALAR)
                   : H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr),
               H5Sclose);
  Handle creation(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (!space.valid() || !creation.valid() || H5Pset_obj_track_times(creation.get(), false) < 0 ||
      H5Pset_layout(creation.get(), H5D_CONTIGUOUS) < 0 ||
      H5Pset_alloc_time(creation.get(), H5D_ALLOC_TIME_EARLY) < 0 ||
      H5Pset_fill_time(creation.get(), H5D_FILL_TIME_NEVER) < 0)
    fail("cannot create dataset '" + name + "' in " + shown_as_);
  Handle dataset(H5Dcreate2(file_, name.c_str(), integer ? H5T_STD_I32LE : H5T_IEEE_F32LE,
                            space.get(), H5P_DEFAULT, creation.get(), H5P_DEFAULT),
                 H5Dclose);
  haddr_t offset = dataset.valid() ? H5Dget_offset(dataset.get()) : HADDR_UNDEF;
  if (offset == HADDR_UNDEF) fail("cannot create dataset '" + name + "' in " + shown_as_);
  return offset;
}

void Hdf5Writer::write_raw(const std::string& name, const std::vector<std::uint64_t>& dims,
                           std::int64_t file_type, std::int64_t memory_type, const void* data) {
  std::vector<hsize_t> extent(dims.begin(), dims.end());
  Handle space(extent.empty()
                   ? H5Screate(H5S_SCALAR)
                   : H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr),
               H5Sclose);
  // No modification times in object headers: the same values give the same file, byte for byte.
  Handle creation(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(creation.get(), false);
  // A name with slashes creates its groups (example_0/image).
  Handle links(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(links.get(), 1);
  Handle dataset(H5Dcreate2(file_, name.c_str(), file_type, space.get(), links.get(),
                            creation.get(), H5P_DEFAULT),
                 H5Dclose);
  if (!space.valid() || !creation.valid() || !links.valid() || !dataset.valid() ||
      H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    fail("cannot write dataset '" + name + "' to " + shown_as_);
  }
}

void Hdf5Writer::write(const std::string& name, const std::vector<std::uint64_t>& dims,
                       std::span<const float> values) {
  write_raw(name, dims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, values.data());
}

void Hdf5Writer::write(const std::string& name, const std::vector<std::uint64_t>& dims,
                       std::span<const std::int32_t> values) {
  write_raw(name, dims, H5T_STD_I32LE, H5T_NATIVE_INT32, values.data());
}

void Hdf5Writer::write(const std::string& name, const std::vector<std::uint64_t>& dims,
                       std::span<const std::uint8_t> values) {
  write_raw(name, dims, H5T_STD_U8LE, H5T_NATIVE_UINT8, values.data());
}

void Hdf5Writer::set_attribute(const std::string& name, std::int64_t value) {
  set_dataset_attribute(".", name, value);
}

void Hdf5Writer::set_attribute(const std::string& name, const std::string& value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1));
  Handle attribute(
      H5Acreate2(file_, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attribute.valid() || H5Awrite(attribute.get(), type.get(), value.c_str()) < 0)
    fail("cannot write attribute '" + name + "' to " + shown_as_);
}

void Hdf5Writer::set_dataset_attribute(const std::string& dataset, const std::string& name,
                                       std::int64_t value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attribute(H5Acreate_by_name(file_, dataset.c_str(), name.c_str(), H5T_STD_I64LE,
                                     space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose);
  long long stored = value;
  if (!attribute.valid() || H5Awrite(attribute.get(), H5T_NATIVE_LLONG, &stored) < 0)
    fail("cannot write attribute '" + name + "'" + (dataset == "." ? "" : " of '" + dataset + "'") +
         " to " + shown_as_);
}

void Hdf5Writer::close() {
  if (file_ < 0) return;
  // A flush that fails leaves the file to abandon(); once flushed, closing writes nothing more.
  if (H5Fflush(file_, H5F_SCOPE_GLOBAL) < 0) fail("cannot finish writing " + shown_as_);
  bool closed = H5Fclose(file_) >= 0;
  file_ = -1;
  if (!closed) fail("cannot finish writing " + shown_as_);
}

}  // namespace csrun::data
