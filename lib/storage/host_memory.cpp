#include "host_memory.hpp"

#include <unistd.h>

#include <cstdio>

namespace csrun::storage {

std::uint64_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

bool exceeds_physical_memory(double bytes, double share) {
  auto machine = static_cast<double>(physical_memory_bytes());
  return machine > 0 && bytes > machine * share;
}

std::string gibibytes(double bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

std::string physical_memory_text() {
  return gibibytes(static_cast<double>(physical_memory_bytes()));
}

}  // namespace csrun::storage
