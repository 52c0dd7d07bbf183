#include "atomic_file.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

#include "process_liveness.hpp"

namespace csrun::storage {

namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

[[noreturn]] void fail(const fs::path& path, const std::string& action) {
  throw std::runtime_error("cannot " + action + " " + path.string() + ": " + std::strerror(errno));
}

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  // close(2) reports a delayed write error (NFS, a full disk) that write(2) did not.
  bool close() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

void write_all(const Descriptor& file, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    ssize_t written = ::write(file.get(), bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) fail(path, "write");
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
}

void sync_directory(const fs::path& directory) {
  Descriptor file(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (file.get() < 0) fail(directory, "open the directory");
  if (::fsync(file.get()) != 0) fail(directory, "sync the directory");
}

// Writes past the process's file-size limit would fail midway (and raise SIGXFSZ, which csrun
// ignores); fallocate does not check that limit, so it is checked here.
void check_file_size_limit(std::uint64_t bytes, const fs::path& path) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      bytes <= limit.rlim_cur)
    return;
  throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(EFBIG) + " (" +
                           std::to_string(bytes) + " bytes; this process may write files of at " +
                           "most " + std::to_string(limit.rlim_cur) + " bytes: ulimit -f)");
}

}  // namespace

// The temporary's name is this process's alone while it lives; one a crashed process of the
// same pid left is overwritten.
AtomicFile::AtomicFile(fs::path path) : path_(std::move(path)), temporary_(path_) {
  temporary_ += ".tmp." + host_name() + "." + std::to_string(::getpid());
}

AtomicFile::~AtomicFile() {
  if (!committed_) ::unlink(temporary_.c_str());
}

void AtomicFile::reserve(std::uint64_t bytes) {
  check_file_size_limit(bytes, path_);
  Descriptor file(::open(temporary_.c_str(), O_WRONLY | O_CLOEXEC));
  if (file.get() < 0) fail(path_, "open the temporary file of");
  if (::fallocate(file.get(), FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes)) == 0) {
    reserved_ = bytes;
    return;
  }
  if (errno != EOPNOTSUPP && errno != ENOSYS) fail(path_, "write");
}

void AtomicFile::commit() {
  Descriptor file(::open(temporary_.c_str(), O_WRONLY | O_CLOEXEC));
  if (file.get() < 0) fail(path_, "write");
  struct stat written {};
  // Blocks reserved beyond what was written go back to the file system when the file is
  // truncated to its own size (ext4, XFS); failing that costs only disk space: no error.
  if (reserved_ > 0 && ::fstat(file.get(), &written) == 0)
    (void)::ftruncate(file.get(), written.st_size);
  if (::fsync(file.get()) != 0) fail(path_, "sync");
  if (!file.close()) fail(path_, "write");
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) fail(path_, "rename a new file to");
  committed_ = true;
  sync_directory(path_.has_parent_path() ? path_.parent_path() : fs::path("."));
}

void write_file_atomically(const fs::path& path, std::string_view bytes, unsigned mode) {
  AtomicFile file(path);
  Descriptor temporary(
      ::open(file.temporary().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (temporary.get() < 0) fail(path, "create a temporary file for");
  write_all(temporary, bytes, path);
  if (!temporary.close()) fail(path, "write");
  file.commit();
}

std::vector<fs::path> remove_stale_temporaries(const fs::path& directory,
                                               std::string_view extension) {
  std::vector<fs::path> removed;
  std::error_code error;
  const std::string host = host_name();
  const std::string marker = std::string(extension) + ".tmp.";
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    std::string name = entry.path().filename().string();
    auto at = name.find(marker);
    if (at == std::string::npos || !entry.is_regular_file(error)) continue;
    // <host>.<pid>; earlier csrun versions wrote <pid> alone, always on this host.
    std::string owner = name.substr(at + marker.size());
    auto dot = owner.rfind('.');
    std::optional<int> pid = parse_pid(dot == std::string::npos ? owner : owner.substr(dot + 1));
    if (dot != std::string::npos && owner.substr(0, dot) != host) continue;
    if (!pid) continue;
    if (!process_alive(*pid) && fs::remove(entry.path(), error)) removed.push_back(entry.path());
  }
  return removed;
}

}  // namespace csrun::storage
