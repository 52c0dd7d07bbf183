#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace csrun::runner {

// The seal of a checkpoint csrun writes: the CRC-32C of every byte of the file that libhdf5
// parses (all but the elements of the large datasets, which csrun reads itself and checks by
// their own checksums), kept in the file's HDF5 user block, which HDF5 readers (h5py, PyTorch)
// skip. It is checked before libhdf5 opens the file: libhdf5 1.10 is not safe on damaged files
// (one flipped bit in an object header can make it read past a buffer), so a damaged checkpoint
// must be refused before libhdf5 parses it.

// Bytes [offset, offset + bytes) of a file.
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

// The size of the user block a checkpoint with `left_out` large datasets reserves for its seal:
// a power of two from 4096, as HDF5 requires of a file aligned as Hdf5Writer aligns its own.
std::uint64_t seal_block_bytes(std::size_t left_out);

// Seals `file`, written and closed by HDF5 with a user block of `block_bytes` (from
// seal_block_bytes), whose large datasets' elements lie in `left_out`. Errors are
// std::runtime_error naming `shown_as`.
void seal_checkpoint(const std::filesystem::path& file, std::uint64_t block_bytes,
                     std::vector<ByteRange> left_out, const std::string& shown_as);

// Whether the checkpoint at `path` is sealed, its seal checked: CheckpointError when it does not
// match, and for a file that is not HDF5 at its start but is further on (a user block that is
// no seal: a damaged one). A file without a user block (the Model Zoo's, older csrun's) has no
// seal.
bool check_seal(const std::string& path);

}  // namespace csrun::runner
