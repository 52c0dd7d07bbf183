#pragma once

#include <cstdint>
#include <string_view>

namespace csrun::storage {

// CRC-32C (Castagnoli): TFRecord framing and checkpoint checksums. `crc` continues an earlier
// result, so a checksum can be computed piece by piece.
std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0);

}  // namespace csrun::storage
