#include <catch2/catch.hpp>

#include <string>

#include "storage/crc32c.hpp"

using csrun::storage::crc32c;

namespace {

// The bit-serial definition the hardware instruction must agree with.
std::uint32_t crc32c_by_bits(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (char byte : bytes) {
    crc ^= static_cast<std::uint8_t>(byte);
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

}  // namespace

TEST_CASE("CRC-32C matches the standard check values") {
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
}

TEST_CASE("CRC-32C agrees with its definition at every length and continues piece by piece") {
  std::string bytes;
  for (int i = 0; i < 200; ++i)
    bytes.push_back(static_cast<char>(i * 37 + 11));
  for (std::size_t length = 0; length <= bytes.size(); ++length) {
    std::string_view prefix(bytes.data(), length);
    INFO("length " << length);
    CHECK(crc32c(prefix) == crc32c_by_bits(prefix));
    std::size_t half = length / 3;
    CHECK(crc32c(prefix.substr(half), crc32c(prefix.substr(0, half))) == crc32c(prefix));
  }
}

// Long inputs run as three streams joined by a shift of the register (rounds of 3 x 8 KiB, then
// of 3 x 256 bytes): every way a length falls across those rounds agrees with one stream.
TEST_CASE("CRC-32C of long inputs agrees with its definition across its three-stream rounds") {
  std::string bytes;
  std::uint32_t seed = 12345;
  for (int i = 0; i < 3 * 8192 * 2 + 3 * 256 * 3 + 13; ++i) {
    seed = seed * 1103515245u + 12345u;
    bytes.push_back(static_cast<char>(seed >> 24));
  }
  for (std::size_t length :
       {std::size_t{767}, std::size_t{768}, std::size_t{769}, std::size_t{3 * 8192 - 1},
        std::size_t{3 * 8192}, std::size_t{3 * 8192 + 3 * 256 + 5}, bytes.size()}) {
    std::string_view prefix(bytes.data(), length);
    INFO("length " << length);
    CHECK(crc32c(prefix) == crc32c_by_bits(prefix));
    std::size_t part = length / 3 + 1;
    CHECK(crc32c(prefix.substr(part), crc32c(prefix.substr(0, part))) == crc32c(prefix));
  }
  CHECK(crc32c(std::string(3 * 8192, '\0')) == crc32c_by_bits(std::string(3 * 8192, '\0')));
}
