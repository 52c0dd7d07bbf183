#include "crc32c.hpp"

#include <nmmintrin.h>

#include <array>
#include <cstring>

namespace csrun::storage {

namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli's, bit-reversed

// A linear map of the 32-bit CRC register over GF(2): column i is the image of bit i.
using RegisterMap = std::array<std::uint32_t, 32>;

std::uint32_t image_under(const RegisterMap& map, std::uint32_t value) {
  std::uint32_t image = 0;
  for (int bit = 0; value != 0; ++bit, value >>= 1) {
    if (value & 1u) image ^= map[static_cast<std::size_t>(bit)];
  }
  return image;
}

// `first` then `second`.
RegisterMap compose(const RegisterMap& first, const RegisterMap& second) {
  RegisterMap composed{};
  for (std::size_t bit = 0; bit < 32; ++bit)
    composed[bit] = image_under(second, first[bit]);
  return composed;
}

// One zero bit shifts the register right, folding the polynomial in where a one drops out.
RegisterMap zero_bit() {
  RegisterMap map{};
  map[0] = kPolynomial;
  for (std::size_t bit = 1; bit < 32; ++bit)
    map[bit] = 1u << (bit - 1);
  return map;
}

// `map` applied `times` times over, by repeated squaring.
RegisterMap repeated(RegisterMap map, std::size_t times) {
  RegisterMap result{};
  for (std::size_t bit = 0; bit < 32; ++bit)
    result[bit] = 1u << bit;
  for (; times != 0; times >>= 1) {
    if (times & 1u) result = compose(result, map);
    map = compose(map, map);
  }
  return result;
}

// What `bytes` zero bytes do to the register, as four tables of its bytes' images: a stream's
// CRC started at zero is then joined to the one before it by a shift of that one by the
// stream's length and an exclusive or.
class ZeroBytes {
 public:
  explicit ZeroBytes(std::size_t bytes) {
    RegisterMap shift = repeated(zero_bit(), 8 * bytes);
    for (std::size_t byte = 0; byte < 4; ++byte) {
      for (std::uint32_t value = 0; value < 256; ++value)
        images_[byte][value] = image_under(shift, value << (8 * byte));
    }
  }

  std::uint32_t shift(std::uint32_t crc) const {
    return images_[0][crc & 0xFFu] ^ images_[1][(crc >> 8) & 0xFFu] ^
           images_[2][(crc >> 16) & 0xFFu] ^ images_[3][crc >> 24];
  }

 private:
  std::array<std::array<std::uint32_t, 256>, 4> images_{};
};

std::uint64_t word_at(const char* at) {
  std::uint64_t word;
  std::memcpy(&word, at, 8);
  return word;
}

// The instruction's latency is three times its throughput: three independent streams of
// `block` bytes each keep it busy, joined after each round.
template <std::size_t Block>
std::uint64_t three_streams(std::uint64_t state, const char*& at, std::size_t& left) {
  static const ZeroBytes kShift(Block);
  for (; left >= 3 * Block; left -= 3 * Block, at += 3 * Block) {
    std::uint64_t second = 0;
    std::uint64_t third = 0;
    for (std::size_t offset = 0; offset < Block; offset += 8) {
      state = _mm_crc32_u64(state, word_at(at + offset));
      second = _mm_crc32_u64(second, word_at(at + Block + offset));
      third = _mm_crc32_u64(third, word_at(at + 2 * Block + offset));
    }
    state = kShift.shift(static_cast<std::uint32_t>(state)) ^ second;
    state = kShift.shift(static_cast<std::uint32_t>(state)) ^ third;
  }
  return state;
}

}  // namespace

// Every CPU csrun runs on (x86-64-v2) has SSE4.2's CRC-32C instruction: gigabytes per second
// and core, so checksumming a checkpoint costs little next to writing it.
std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc) {
  std::uint64_t state = ~crc;
  const char* at = bytes.data();
  std::size_t left = bytes.size();
  state = three_streams<8192>(state, at, left);
  state = three_streams<256>(state, at, left);
  for (; left >= 8; left -= 8, at += 8)
    state = _mm_crc32_u64(state, word_at(at));
  auto narrow = static_cast<std::uint32_t>(state);
  for (; left > 0; --left, ++at)
    narrow = _mm_crc32_u8(narrow, static_cast<unsigned char>(*at));
  return ~narrow;
}

}  // namespace csrun::storage
