// csrun-shapes-hdf5 OUTPUT.h5 EXAMPLES SIZE SEED: draws EXAMPLES grey images of SIZE x SIZE
// pixels, each holding one to three discs and up to two squares of the same brightness range on
// a noisy background, with the discs' mask as the label, in the Model Zoo UNet's HDF5 layout
// (attribute n_examples; groups example_<i> with `image` uint8 [1, SIZE, SIZE] and `label`
// float32 [1, SIZE, SIZE] of 0 and 1, as its create_hdf5_files.py writes a binary set). The
// network has to tell round from square, not bright from dark. The same arguments give the
// same file: std::mt19937's sequence is fixed by the C++ standard.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <iostream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/hdf5_file.hpp"

namespace {

std::uint64_t parse(const std::string& text, const char* what, std::uint64_t low,
                    std::uint64_t high) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    throw std::runtime_error(std::string(what) + " must be an integer in [" + std::to_string(low) +
                             ", " + std::to_string(high) + "], not '" + text + "'");
  }
  return value;
}

class Canvas {
 public:
  Canvas(int size, std::mt19937& random) : size_(size), random_(random) {
    pixels_.resize(static_cast<std::size_t>(size * size));
    mask_.resize(pixels_.size());
    for (std::uint8_t& pixel : pixels_)
      pixel = static_cast<std::uint8_t>(between(20, 70));
  }

  int between(int low, int high) {  // [low, high)
    return low + static_cast<int>(random_() % static_cast<std::uint32_t>(high - low));
  }

  void disc(int cx, int cy, int radius, int brightness) {
    for (int y = 0; y < size_; ++y) {
      for (int x = 0; x < size_; ++x) {
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) > radius * radius) continue;
        paint(x, y, brightness, 1.0f);
      }
    }
  }

  void square(int x0, int y0, int side, int brightness) {
    for (int y = y0; y < std::min(size_, y0 + side); ++y) {
      for (int x = x0; x < std::min(size_, x0 + side); ++x)
        paint(x, y, brightness, 0.0f);
    }
  }

  const std::vector<std::uint8_t>& pixels() const { return pixels_; }
  const std::vector<float>& mask() const { return mask_; }

 private:
  void paint(int x, int y, int brightness, float label) {
    auto at = static_cast<std::size_t>(y * size_ + x);
    pixels_[at] = static_cast<std::uint8_t>(std::min(255, brightness + between(-15, 16)));
    mask_[at] = label;
  }

  int size_;
  std::mt19937& random_;
  std::vector<std::uint8_t> pixels_;
  std::vector<float> mask_;
};

void draw(Canvas& canvas, int size) {
  int squares = canvas.between(0, 3);
  int discs = canvas.between(1, 4);
  for (int i = 0; i < squares; ++i) {
    int side = canvas.between(size / 8 + 2, size / 4 + 3);
    canvas.square(canvas.between(0, size - side), canvas.between(0, size - side), side,
                  canvas.between(140, 230));
  }
  for (int i = 0; i < discs; ++i) {
    int radius = canvas.between(size / 16 + 2, size / 6 + 3);
    canvas.disc(canvas.between(radius, size - radius), canvas.between(radius, size - radius),
                radius, canvas.between(140, 230));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: csrun-shapes-hdf5 OUTPUT.h5 EXAMPLES SIZE SEED\n";
    return 2;
  }
  try {
    std::uint64_t examples = parse(argv[2], "EXAMPLES", 1, 1000000);
    int size = static_cast<int>(parse(argv[3], "SIZE", 16, 4096));
    std::mt19937 random(static_cast<std::uint32_t>(parse(argv[4], "SEED", 0, 0xffffffffu)));
    csrun::data::Hdf5Writer writer(argv[1]);
    auto side = static_cast<std::uint64_t>(size);
    for (std::uint64_t e = 0; e < examples; ++e) {
      Canvas canvas(size, random);
      draw(canvas, size);
      std::string group = "example_" + std::to_string(e);
      writer.write(group + "/image", {1, side, side}, std::span(canvas.pixels()));
      writer.write(group + "/label", {1, side, side}, std::span(canvas.mask()));
    }
    writer.set_attribute("n_examples", static_cast<std::int64_t>(examples));
    writer.close();
  } catch (const std::exception& error) {
    std::cerr << "csrun-shapes-hdf5: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
