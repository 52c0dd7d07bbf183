// csrun-gpt-hdf5 ROWS MSL OUTPUT.h5: writes token rows into the Model Zoo's GPT HDF5 layout
// (dataset `data`, int32 [n, 3, MSL] of input_ids, attention_mask and labels; attribute
// n_examples). ROWS holds the same values as raw little-endian int32, example after example.

#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "data/hdf5_file.hpp"

namespace {

std::uint64_t parse_length(const std::string& text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0)
    throw std::runtime_error("MSL must be a positive integer, not '" + text + "'");
  return value;
}

std::vector<std::int32_t> read_rows(const std::string& path, std::uint64_t row_values) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::uint64_t example_bytes = row_values * sizeof(std::int32_t);
  if (bytes.empty() || bytes.size() % example_bytes != 0) {
    throw std::runtime_error(path + " holds " + std::to_string(bytes.size()) +
                             " bytes, not a positive multiple of one example (3 x MSL int32 = " +
                             std::to_string(example_bytes) + " bytes)");
  }
  std::vector<std::int32_t> values(bytes.size() / sizeof(std::int32_t));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: csrun-gpt-hdf5 ROWS MSL OUTPUT.h5\n";
    return 2;
  }
  try {
    std::uint64_t length = parse_length(argv[2]);
    std::vector<std::int32_t> values = read_rows(argv[1], 3 * length);
    std::uint64_t examples = values.size() / (3 * length);
    csrun::data::Hdf5Writer writer(argv[3]);
    writer.write("data", {examples, 3, length}, values);
    writer.set_attribute("n_examples", static_cast<std::int64_t>(examples));
    writer.close();
  } catch (const std::exception& error) {
    std::cerr << "csrun-gpt-hdf5: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
