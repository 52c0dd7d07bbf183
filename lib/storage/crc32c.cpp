#include "crc32c.hpp"

#include <nmmintrin.h>

#include <cstring>

namespace csrun::storage {

// Every CPU csrun runs on (x86-64-v2) has SSE4.2's CRC-32C instruction: gigabytes per second,
// so checksumming a checkpoint costs little next to writing it.
std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc) {
  std::uint64_t state = ~crc;
  const char* at = bytes.data();
  std::size_t left = bytes.size();
  for (; left >= 8; left -= 8, at += 8) {
    std::uint64_t word;
    std::memcpy(&word, at, 8);
    state = _mm_crc32_u64(state, word);
  }
  auto narrow = static_cast<std::uint32_t>(state);
  for (; left > 0; --left, ++at)
    narrow = _mm_crc32_u8(narrow, static_cast<unsigned char>(*at));
  return ~narrow;
}

}  // namespace csrun::storage
