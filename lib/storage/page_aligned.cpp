#include "page_aligned.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

namespace csrun::storage {

namespace {

constexpr std::size_t kPage = 4096;

std::size_t mapped_bytes(std::size_t bytes) {
  std::size_t unit = bytes >= kHugePage ? kHugePage : kPage;
  return (std::max<std::size_t>(bytes, 1) + unit - 1) / unit * unit;
}

// A mapping of `bytes` (a multiple of the huge page) that starts on a huge page boundary: a
// larger one with its ends cut off, since mmap aligns only to the page.
std::byte* map_huge_aligned(std::size_t bytes) {
  std::size_t padded = bytes + kHugePage;
  void* mapped =
      ::mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  auto* start = static_cast<std::byte*>(mapped);
  auto address = reinterpret_cast<std::uintptr_t>(start);
  std::size_t head = (kHugePage - address % kHugePage) % kHugePage;
  if (head > 0) ::munmap(start, head);
  ::munmap(start + head + bytes, kHugePage - head);
  ::madvise(start + head, bytes, MADV_HUGEPAGE);
  return start + head;
}

}  // namespace

void* allocate_pages(std::size_t bytes) {
  std::size_t mapped = mapped_bytes(bytes);
  if (mapped >= kHugePage) return map_huge_aligned(mapped);
  void* pages = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) throw std::bad_alloc();
  return pages;
}

void release_pages(void* start, std::size_t bytes) noexcept {
  auto first = (reinterpret_cast<std::uintptr_t>(start) + kPage - 1) / kPage * kPage;
  auto end = (reinterpret_cast<std::uintptr_t>(start) + bytes) / kPage * kPage;
  if (end > first) ::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
}

void free_pages(void* pages, std::size_t bytes) noexcept {
  if (pages) ::munmap(pages, mapped_bytes(bytes));
}

}  // namespace csrun::storage
