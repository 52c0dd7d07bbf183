#pragma once

#include <cstdint>
#include <string>

namespace csrun::storage {

// This machine's physical memory in bytes (0 when the system does not say).
std::uint64_t physical_memory_bytes();

// Whether `bytes` exceed `share` of this machine's physical memory (never when it does not say):
// what csrun refuses to allocate rather than fail midway.
bool exceeds_physical_memory(double bytes, double share = 1.0);

// Bytes as "12.3 GiB", for messages about memory; this machine's physical memory so.
std::string gibibytes(double bytes);
std::string physical_memory_text();

}  // namespace csrun::storage
