#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "storage/page_aligned.hpp"

using namespace csrun::storage;

namespace {

std::uintptr_t address_of(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer);
}

bool all_zero(const std::byte* bytes, std::size_t count) {
  return std::all_of(bytes, bytes + count, [](std::byte b) { return b == std::byte{0}; });
}

// The VmFlags line of /proc/self/smaps for the mapping that holds `pointer` ("rd wr mr ... hg").
std::string mapping_flags(const void* pointer) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start <= address_of(pointer) && address_of(pointer) < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

}  // namespace

TEST_CASE("pages come zeroed and page-aligned, and go back with their size") {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4096}, std::size_t{5000}}) {
    auto* pages = static_cast<std::byte*>(allocate_pages(bytes));
    CHECK(address_of(pages) % 4096 == 0);
    CHECK(all_zero(pages, bytes));
    std::fill(pages, pages + bytes, std::byte{7});
    free_pages(pages, bytes);
  }
}

TEST_CASE("a region of 2 MiB or more is aligned to 2 MiB and advised as transparent huge pages") {
  std::size_t bytes = 3 * kHugePage + 100;
  auto* pages = static_cast<std::byte*>(allocate_pages(bytes));
  CHECK(address_of(pages) % kHugePage == 0);
  CHECK(all_zero(pages, bytes));
  std::fill(pages, pages + bytes, std::byte{7});
  // The kernel marks a region advised MADV_HUGEPAGE "hg", where it has transparent huge pages.
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    std::string flags = mapping_flags(pages + bytes - 1);
    INFO(flags);
    CHECK(flags.find(" hg") != std::string::npos);
  }
  free_pages(pages, bytes);
  // The whole mapping went back: the same address can be mapped afresh.
  CHECK(mapping_flags(pages).empty());
}

TEST_CASE(
    "a large vector of page-aligned elements starts on a 2 MiB boundary and frees its pages") {
  PageAlignedVector<float> floats(std::size_t{1} << 20);
  CHECK(address_of(floats.data()) % kHugePage == 0);
  floats.assign(floats.size(), 1.5f);
  floats.resize(10);
  floats.shrink_to_fit();
  CHECK(floats.size() == 10);
  CHECK(floats[9] == 1.5f);
}
