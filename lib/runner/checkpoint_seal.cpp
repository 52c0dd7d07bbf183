#include "checkpoint_seal.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>

#include "checkpoint.hpp"
#include "data/read_only_file.hpp"
#include "storage/crc32c.hpp"
#include "storage/uncached_file.hpp"

namespace csrun::runner {

namespace {

// The user block: a header, then the ranges left out, then zeros. Integers are little-endian.
//   0  "csrun checkpoint"   16 bytes
//  16  format version       u32
//  20  CRC-32C              u32: of bytes 0-19, 24 to the end of the ranges, then the sealed bytes
//  24  user block bytes     u64
//  32  file bytes           u64
//  40  ranges left out      u64, then each range's offset and bytes (u64 each), ascending
constexpr std::string_view kMagic = "csrun checkpoint";
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 48;
constexpr std::size_t kRangeBytes = 16;
// HDF5 takes user blocks of a power of two from 512, and no smaller than the file's alignment
// (4096, Hdf5Writer's); 512 is where libhdf5 looks first for a superblock after one.
constexpr std::uint64_t kMinimumBlock = 4096;
constexpr std::uint64_t kFirstSuperblockAfterBlock = 512;
// A million ranges: checked before a block that claims to be larger is read.
constexpr std::uint64_t kMaximumBlock = std::uint64_t{16} << 20;
constexpr std::string_view kHdf5Signature = "\x89HDF\r\n\x1a\n";

void put(std::vector<std::byte>& block, std::size_t at, std::uint64_t value, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i)
    block[at + i] = static_cast<std::byte>(value >> (8 * i));
}

std::uint64_t get(std::span<const std::byte> block, std::size_t at, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    value |= std::to_integer<std::uint64_t>(block[at + i]) << (8 * i);
  return value;
}

std::string_view as_text(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The CRC-32C the header stores: of the header but its own field and of the ranges, then of
// every byte of the file from the end of the block on outside the ranges.
std::uint32_t seal_of(const data::ReadOnlyFile& file, std::span<const std::byte> block,
                      std::span<const ByteRange> left_out, std::uint64_t file_bytes) {
  std::size_t table_end = kHeaderBytes + kRangeBytes * left_out.size();
  std::uint32_t crc = storage::crc32c(as_text(block.first(20)));
  crc = storage::crc32c(as_text(block.subspan(24, table_end - 24)), crc);
  std::vector<std::byte> buffer(std::size_t{1} << 20);
  auto add = [&](std::uint64_t from, std::uint64_t to) {
    while (from < to) {
      std::size_t piece =
          static_cast<std::size_t>(std::min<std::uint64_t>(to - from, buffer.size()));
      file.read_at(from, std::span(buffer).first(piece), "bytes from offset", from);
      crc = storage::crc32c(as_text(std::span(buffer).first(piece)), crc);
      from += piece;
    }
  };
  std::uint64_t at = get(block, 24, 8);
  for (const ByteRange& range : left_out) {
    add(at, range.offset);
    at = range.offset + range.bytes;
  }
  add(at, file_bytes);
  return crc;
}

CheckpointError corrupt(const std::string& path, const std::string& what) {
  return CheckpointError("checkpoint " + path + " " + what + ": the file is corrupt");
}

// The ranges a seal's header lists, checked to lie in order between the block and the end.
std::vector<ByteRange> listed_ranges(std::span<const std::byte> block, std::uint64_t file_bytes,
                                     const std::string& path) {
  std::uint64_t count = get(block, 40, 8);
  if (count > (block.size() - kHeaderBytes) / kRangeBytes)
    throw corrupt(path, "has a seal that lists more ranges than its block holds");
  std::vector<ByteRange> ranges(static_cast<std::size_t>(count));
  std::uint64_t at = block.size();
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    std::size_t entry = kHeaderBytes + kRangeBytes * i;
    ranges[i] = {get(block, entry, 8), get(block, entry + 8, 8)};
    if (ranges[i].offset < at || ranges[i].offset > file_bytes ||
        ranges[i].bytes > file_bytes - ranges[i].offset)
      throw corrupt(path, "has a seal whose ranges are out of order or past the end");
    at = ranges[i].offset + ranges[i].bytes;
  }
  return ranges;
}

// Whether libhdf5 would find a superblock after a user block: at 512, 1024, 2048, ...
bool hdf5_further_on(const data::ReadOnlyFile& file, std::uint64_t file_bytes) {
  std::array<std::byte, kHdf5Signature.size()> signature;
  for (std::uint64_t at = kFirstSuperblockAfterBlock; at + signature.size() <= file_bytes;
       at *= 2) {
    file.read_at(at, signature, "bytes from offset", at);
    if (as_text(signature) == kHdf5Signature) return true;
  }
  return false;
}

}  // namespace

std::uint64_t seal_block_bytes(std::size_t left_out) {
  if (left_out > (kMaximumBlock - kHeaderBytes) / kRangeBytes) {
    throw std::runtime_error("a checkpoint of " + std::to_string(left_out) +
                             " large tensors is more than csrun seals");
  }
  return std::bit_ceil(
      std::max<std::uint64_t>(kMinimumBlock, kHeaderBytes + kRangeBytes * left_out));
}

void seal_checkpoint(const std::filesystem::path& file, std::uint64_t block_bytes,
                     std::vector<ByteRange> left_out, const std::string& shown_as) {
  std::sort(left_out.begin(), left_out.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  if (seal_block_bytes(left_out.size()) > block_bytes)
    throw std::logic_error("checkpoint seal: the user block is too small for its ranges");
  std::vector<std::byte> block(static_cast<std::size_t>(block_bytes));
  std::memcpy(block.data(), kMagic.data(), kMagic.size());
  put(block, 16, kVersion, 4);
  put(block, 24, block_bytes, 8);
  put(block, 40, left_out.size(), 8);
  for (std::size_t i = 0; i < left_out.size(); ++i) {
    put(block, kHeaderBytes + kRangeBytes * i, left_out[i].offset, 8);
    put(block, kHeaderBytes + kRangeBytes * i + 8, left_out[i].bytes, 8);
  }
  std::uint64_t file_bytes = std::filesystem::file_size(file);
  put(block, 32, file_bytes, 8);
  put(block, 20, seal_of(data::ReadOnlyFile(file.string()), block, left_out, file_bytes), 4);
  storage::UncachedFile(file, storage::UncachedFile::Access::write, shown_as).write_at(0, block);
}

namespace {

// check_seal, with the reader's errors as they come.
bool checked_seal(const std::string& path) {
  // Read through the page cache, where libhdf5 reads the same bytes next.
  data::ReadOnlyFile file(path);
  std::uint64_t file_bytes = std::filesystem::file_size(path);
  if (file_bytes < kHeaderBytes) return false;
  std::vector<std::byte> header(kHeaderBytes);
  file.read_at(0, header, "bytes from offset", 0);
  std::string_view start = as_text(header).substr(0, kMagic.size());
  if (start.starts_with(kHdf5Signature)) return false;
  if (start != kMagic) {
    if (hdf5_further_on(file, file_bytes))
      throw CheckpointError("checkpoint " + path +
                            " starts with a block that is not csrun's seal: the file is corrupt, "
                            "or another program wrote an HDF5 user block there (csrun reads "
                            "checkpoints with its seal or without a user block)");
    return false;
  }
  if (get(header, 16, 4) != kVersion) {
    throw CheckpointError("checkpoint " + path + " has a seal of format " +
                          std::to_string(get(header, 16, 4)) + "; this csrun reads format " +
                          std::to_string(kVersion) +
                          ": a newer csrun wrote it, or the file is corrupt");
  }
  std::uint64_t block_bytes = get(header, 24, 8);
  if (!std::has_single_bit(block_bytes) || block_bytes < kMinimumBlock ||
      block_bytes > kMaximumBlock || block_bytes > file_bytes)
    throw corrupt(path, "has a seal of an impossible size");
  if (get(header, 32, 8) != file_bytes) {
    throw corrupt(path, "is " + std::to_string(file_bytes) + " bytes; its seal says " +
                            std::to_string(get(header, 32, 8)) + " (truncated or extended?)");
  }
  std::vector<std::byte> block(static_cast<std::size_t>(block_bytes));
  file.read_at(0, block, "bytes from offset", 0);
  std::vector<ByteRange> ranges = listed_ranges(block, file_bytes, path);
  if (seal_of(file, block, ranges, file_bytes) != get(block, 20, 4))
    throw corrupt(path, "does not match its seal (the CRC-32C of all that HDF5 reads)");
  return true;
}

}  // namespace

bool check_seal(const std::string& path) {
  try {
    return checked_seal(path);
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::runtime_error& error) {
    throw CheckpointError("checkpoint " + std::string(error.what()));
  }
}

}  // namespace csrun::runner
