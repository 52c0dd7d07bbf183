#pragma once

#include <cstdint>
#include <string>

namespace csrun::storage {

// This machine's physical memory in bytes (0 when the system does not say).
std::uint64_t physical_memory_bytes();

// Bytes as "12.3 GiB", for messages about memory.
std::string gibibytes(double bytes);

}  // namespace csrun::storage
