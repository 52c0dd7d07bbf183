#include "uncached_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace csrun::storage {

namespace {

constexpr std::size_t kStaging = std::size_t{16} << 20;

std::uint64_t align_down(std::uint64_t value) {
  return value / UncachedFile::kBlock * UncachedFile::kBlock;
}

std::uint64_t align_up(std::uint64_t value) {
  return align_down(value + UncachedFile::kBlock - 1);
}

}  // namespace

void UncachedFile::Free::operator()(std::byte* bytes) const {
  std::free(bytes);
}

UncachedFile::UncachedFile(const std::filesystem::path& path, Access access,
                           std::filesystem::path shown_as)
    : shown_as_(std::move(shown_as)) {
  int flags = (access == Access::read ? O_RDONLY : O_WRONLY) | O_CLOEXEC;
  buffered_ = ::open(path.c_str(), flags);
  if (buffered_ < 0) fail("open");
  direct_ = ::open(path.c_str(), flags | O_DIRECT);  // refused by tmpfs and some others
  if (direct_ < 0) return;
  staging_.reset(static_cast<std::byte*>(std::aligned_alloc(kBlock, kStaging)));
  if (!staging_) stop_direct();
}

UncachedFile::~UncachedFile() {
  stop_direct();
  ::close(buffered_);
}

std::uint64_t UncachedFile::size() const {
  struct stat status {};
  if (::fstat(buffered_, &status) != 0) fail("examine");
  return static_cast<std::uint64_t>(status.st_size);
}

void UncachedFile::write_at(std::uint64_t offset, std::span<const std::byte> bytes) {
  std::size_t done = 0;
  if (direct_ >= 0 && offset % kBlock == 0)
    done = write_direct(offset, bytes.first(align_down(bytes.size())));
  write_buffered(offset + done, bytes.subspan(done));
}

void UncachedFile::read_at(std::uint64_t offset, std::span<std::byte> bytes) {
  std::uint64_t end = size();
  if (offset > end || bytes.size() > end - offset) {
    throw std::runtime_error(shown_as_.string() + " ends at byte " + std::to_string(end) +
                             ", before the " + std::to_string(bytes.size()) + " bytes at offset " +
                             std::to_string(offset) + " (truncated?)");
  }
  std::size_t done = direct_ >= 0 ? read_direct(offset, bytes) : 0;
  read_buffered(offset + done, bytes.subspan(done));
}

// Whole blocks from the staging buffer; returns how many bytes went to the disk this way.
std::size_t UncachedFile::write_direct(std::uint64_t offset, std::span<const std::byte> bytes) {
  bool aligned = reinterpret_cast<std::uintptr_t>(bytes.data()) % kBlock == 0;
  std::size_t done = 0;
  while (done < bytes.size()) {
    std::size_t chunk = std::min(kStaging, bytes.size() - done);
    const std::byte* source = bytes.data() + done;
    if (!aligned)
      source = static_cast<const std::byte*>(std::memcpy(staging_.get(), source, chunk));
    ssize_t written = ::pwrite(direct_, source, chunk, static_cast<off_t>(offset + done));
    if (written < 0 && errno == EINTR) continue;
    // A device that wants larger alignment than kBlock refuses with EINVAL: no more direct I/O.
    if (written < 0 && errno == EINVAL) {
      stop_direct();
      break;
    }
    if (written < 0) fail("write");
    done += align_down(static_cast<std::size_t>(written));
    if (static_cast<std::size_t>(written) != chunk) break;
  }
  return done;
}

// Block-aligned windows around the wanted bytes, read into the caller's memory where it and
// the offset are aligned, else through the staging buffer; returns how many bytes it read.
std::size_t UncachedFile::read_direct(std::uint64_t offset, std::span<std::byte> bytes) {
  bool aligned =
      offset % kBlock == 0 && reinterpret_cast<std::uintptr_t>(bytes.data()) % kBlock == 0;
  std::size_t done = 0;
  while (aligned && done + kBlock <= bytes.size()) {
    std::size_t chunk = std::min(kStaging, align_down(bytes.size() - done));
    ssize_t got = ::pread(direct_, bytes.data() + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EINVAL) {
      stop_direct();
      return done;
    }
    if (got < 0) fail("read");
    done += align_down(static_cast<std::size_t>(got));
    if (static_cast<std::size_t>(got) != chunk) return done;
  }
  while (done < bytes.size()) {
    std::uint64_t at = offset + done;
    std::uint64_t window = align_down(at);
    auto skip = static_cast<std::size_t>(at - window);
    auto wanted = static_cast<std::size_t>(
        std::min<std::uint64_t>(kStaging, align_up(skip + bytes.size() - done)));
    ssize_t got = ::pread(direct_, staging_.get(), wanted, static_cast<off_t>(window));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EINVAL) {
      stop_direct();
      break;
    }
    if (got < 0) fail("read");
    if (static_cast<std::size_t>(got) <= skip) break;
    std::size_t useful = std::min(static_cast<std::size_t>(got) - skip, bytes.size() - done);
    std::memcpy(bytes.data() + done, staging_.get() + skip, useful);
    done += useful;
  }
  return done;
}

void UncachedFile::write_buffered(std::uint64_t offset, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::pwrite(buffered_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) fail("write");
    bytes = bytes.subspan(static_cast<std::size_t>(written));
    offset += static_cast<std::uint64_t>(written);
  }
}

void UncachedFile::read_buffered(std::uint64_t offset, std::span<std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t got = ::pread(buffered_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("read");
    if (got == 0) {
      throw std::runtime_error(shown_as_.string() + " ended while it was read (truncated?)");
    }
    bytes = bytes.subspan(static_cast<std::size_t>(got));
    offset += static_cast<std::uint64_t>(got);
  }
}

void UncachedFile::stop_direct() {
  if (direct_ >= 0) ::close(direct_);
  direct_ = -1;
}

[[noreturn]] void UncachedFile::fail(const char* action) const {
  throw std::runtime_error(std::string("cannot ") + action + " " + shown_as_.string() + ": " +
                           std::strerror(errno));
}

}  // namespace csrun::storage
