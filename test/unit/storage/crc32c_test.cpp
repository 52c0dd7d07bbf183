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
