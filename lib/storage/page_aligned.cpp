#include "page_aligned.hpp"

#include <algorithm>
#include <cstdlib>

namespace csrun::storage {

namespace {

constexpr std::size_t kPage = 4096;

}  // namespace

void* allocate_pages(std::size_t bytes) {
  std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  void* pages = std::aligned_alloc(kPage, rounded);
  if (!pages) throw std::bad_alloc();
  return pages;
}

void free_pages(void* pages) noexcept {
  std::free(pages);
}

}  // namespace csrun::storage
