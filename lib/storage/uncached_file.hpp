#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace csrun::storage {

// Large reads and writes at given offsets of an existing file that bypass the page cache
// (O_DIRECT) where the file system allows it: a checkpoint's gigabytes then move at the disk's
// speed instead of the page cache's copy (several times slower on virtual machines), and do not
// fill the page cache, which counts against a cgroup's memory (a SLURM job's --mem). Data goes
// through an aligned staging buffer, so callers' memory needs no alignment; what O_DIRECT
// cannot take (an unaligned offset, the last partial block, a file system without it) goes
// through the page cache. Errors are std::runtime_error naming `shown_as` and the reason.
class UncachedFile {
 public:
  enum class Access { read, write };
  UncachedFile(const std::filesystem::path& path, Access access, std::filesystem::path shown_as);
  ~UncachedFile();
  UncachedFile(const UncachedFile&) = delete;
  UncachedFile& operator=(const UncachedFile&) = delete;

  void write_at(std::uint64_t offset, std::span<const std::byte> bytes);
  // Throws when the file ends before offset + bytes.size().
  void read_at(std::uint64_t offset, std::span<std::byte> bytes);
  std::uint64_t size() const;

  // Offsets that are multiples of this go to the disk directly (with their whole blocks).
  static constexpr std::uint64_t kBlock = 4096;

 private:
  void write_buffered(std::uint64_t offset, std::span<const std::byte> bytes);
  void read_buffered(std::uint64_t offset, std::span<std::byte> bytes);
  std::size_t write_direct(std::uint64_t offset, std::span<const std::byte> bytes);
  std::size_t read_direct(std::uint64_t offset, std::span<std::byte> bytes);
  void stop_direct();
  [[noreturn]] void fail(const char* action) const;

  std::filesystem::path shown_as_;
  int buffered_ = -1;
  int direct_ = -1;
  struct Free {
    void operator()(std::byte* bytes) const;
  };
  std::unique_ptr<std::byte, Free> staging_;
};

}  // namespace csrun::storage
