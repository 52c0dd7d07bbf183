#include "read_only_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace csrun::data {

ReadOnlyFile::ReadOnlyFile(std::string path)
    : path_(std::move(path)), descriptor_(::open(path_.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (descriptor_ < 0)
    throw std::runtime_error(path_ + " cannot be opened: " + std::strerror(errno));
}

ReadOnlyFile::~ReadOnlyFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : path_(std::move(other.path_)), descriptor_(other.descriptor_) {
  other.descriptor_ = -1;
}

void ReadOnlyFile::read_at(std::uint64_t offset, std::span<std::byte> bytes, std::string_view item,
                           std::uint64_t index) const {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::pread(descriptor_, bytes.data() + done, bytes.size() - done,
                          static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw std::runtime_error(path_ + ": " + std::string(item) + " " + std::to_string(index) +
                               " cannot be read (" +
                               (got == 0 ? std::string("the file ended: truncated?")
                                         : std::string(std::strerror(errno))) +
                               ")");
    }
    done += static_cast<std::size_t>(got);
  }
}

}  // namespace csrun::data
