#include "mnist_files.hpp"

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <stdexcept>

namespace csrun::test {

namespace {

void write_header(std::ofstream& out, std::initializer_list<std::uint32_t> words) {
  for (std::uint32_t word : words) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.put(static_cast<char>((word >> shift) & 0xFF));
  }
}

}  // namespace

void write_mnist_files(const std::filesystem::path& directory,
                       std::span<const unsigned char> pixels,
                       std::span<const unsigned char> labels) {
  if (pixels.size() != labels.size() * 28 * 28)
    throw std::invalid_argument("write_mnist_files: 784 pixels per label");
  std::filesystem::create_directories(directory);
  auto count = static_cast<std::uint32_t>(labels.size());
  std::ofstream images(directory / "train-images-idx3-ubyte", std::ios::binary);
  write_header(images, {0x803u, count, 28u, 28u});
  images.write(reinterpret_cast<const char*>(pixels.data()),
               static_cast<std::streamsize>(pixels.size()));
  std::ofstream label_file(directory / "train-labels-idx1-ubyte", std::ios::binary);
  write_header(label_file, {0x801u, count});
  label_file.write(reinterpret_cast<const char*>(labels.data()),
                   static_cast<std::streamsize>(labels.size()));
}

}  // namespace csrun::test
