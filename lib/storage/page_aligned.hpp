#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace csrun::storage {

// Memory for bulk data read from or written to disk: page-aligned, so direct I/O moves it
// without a staging copy (storage::UncachedFile). (Transparent huge pages measured slower: the
// kernel zeroes each 2 MiB page as it is first touched, and compacts memory to find them.)
void* allocate_pages(std::size_t bytes);
void free_pages(void* pages) noexcept;

// An allocator of such memory that leaves default-constructed elements uninitialized: a buffer
// about to be overwritten (by a read, by a copy) is not zeroed first.
template <class T>
struct PageAlignedAllocator {
  using value_type = T;

  PageAlignedAllocator() = default;
  template <class U>
  PageAlignedAllocator(const PageAlignedAllocator<U>&) noexcept {}

  T* allocate(std::size_t count) { return static_cast<T*>(allocate_pages(count * sizeof(T))); }
  void deallocate(T* pages, std::size_t) noexcept { free_pages(pages); }

  template <class U>
  void construct(U* at) noexcept {
    ::new (static_cast<void*>(at)) U;
  }
  template <class U, class... Args>
  void construct(U* at, Args&&... args) {
    ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const PageAlignedAllocator&, const PageAlignedAllocator&) { return true; }
};

template <class T>
using PageAlignedVector = std::vector<T, PageAlignedAllocator<T>>;

}  // namespace csrun::storage
