// csrun-gpt-hdf5 ROWS MSL OUTPUT.h5: writes token rows into the Model Zoo's GPT HDF5 layout
// (dataset `data`, int32 [n, 3, MSL] of input_ids, attention_mask and labels; attribute
// n_examples). ROWS holds the same values as raw little-endian int32, example after example.
// The rows are copied in pieces, so a corpus of any size is written in a few megabytes of
// memory.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <span>
#include <string>

#include "data/hdf5_file.hpp"
#include "storage/page_aligned.hpp"
#include "storage/uncached_file.hpp"

namespace {

std::uint64_t parse_length(const std::string& text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0)
    throw std::runtime_error("MSL must be a positive integer, not '" + text + "'");
  return value;
}

std::uint64_t count_examples(const std::string& path, std::uint64_t example_bytes) {
  std::error_code error;
  std::uint64_t bytes = std::filesystem::file_size(path, error);
  if (error) throw std::runtime_error("cannot read " + path + ": " + error.message());
  if (bytes == 0 || bytes % example_bytes != 0) {
    throw std::runtime_error(path + " holds " + std::to_string(bytes) +
                             " bytes, not a positive multiple of one example (3 x MSL int32 = " +
                             std::to_string(example_bytes) + " bytes)");
  }
  return bytes / example_bytes;
}

void copy_rows(const std::string& rows, const std::string& output, std::uint64_t offset,
               std::uint64_t bytes) {
  std::ifstream in(rows, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + rows);
  csrun::storage::UncachedFile out(output, csrun::storage::UncachedFile::Access::write, output);
  csrun::storage::PageAlignedVector<char> piece(std::size_t{16} << 20);
  for (std::uint64_t done = 0; done < bytes;) {
    auto size = static_cast<std::streamsize>(std::min<std::uint64_t>(piece.size(), bytes - done));
    if (!in.read(piece.data(), size)) throw std::runtime_error("cannot read " + rows);
    out.write_at(offset + done,
                 std::as_bytes(std::span(piece.data(), static_cast<std::size_t>(size))));
    done += static_cast<std::uint64_t>(size);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: csrun-gpt-hdf5 ROWS MSL OUTPUT.h5\n";
    return 2;
  }
  try {
    std::uint64_t length = parse_length(argv[2]);
    std::uint64_t example_bytes = 3 * length * sizeof(std::int32_t);
    std::uint64_t examples = count_examples(argv[1], example_bytes);
    std::uint64_t offset = 0;
    {
      csrun::data::Hdf5Writer writer(argv[3]);
      offset = writer.place("data", {examples, 3, length}, true);
      writer.set_attribute("n_examples", static_cast<std::int64_t>(examples));
      writer.close();
    }
    copy_rows(argv[1], argv[3], offset, examples * example_bytes);
  } catch (const std::exception& error) {
    std::cerr << "csrun-gpt-hdf5: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
