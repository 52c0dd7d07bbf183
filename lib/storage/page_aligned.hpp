#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace csrun::storage {

// Zeroed, page-aligned memory straight from the kernel, for bulk data: the arena, tensors read
// from or written to disk (direct I/O moves page-aligned memory without a staging copy,
// storage::UncachedFile). Its pages are faulted in where they are first touched. From 2 MiB up
// the region is aligned to 2 MiB and advised as transparent huge pages (the kernel gives them
// where its setting is `madvise` or `always`): a first touch faults in 2 MiB at once instead of
// 512 pages one at a time. On the AMD EPYC VM of docs/benchmarks.md (2026-12-01) that made GPT-2
// small's initialization 4x faster; on an Intel VM (2026-11-28) a huge page's fault cost more
// than 512 small ones.
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
void* allocate_pages(std::size_t bytes);
// `bytes` as given to allocate_pages.
void free_pages(void* pages, std::size_t bytes) noexcept;
// Gives the whole pages within [start, start + bytes) of such memory back to the system: they read
// as zeros, and are faulted in again where they are next touched.
void release_pages(void* start, std::size_t bytes) noexcept;

// An allocator of such memory that leaves default-constructed elements uninitialized: a buffer
// about to be overwritten (by a read, by a copy) is not zeroed first.
template <class T>
struct PageAlignedAllocator {
  using value_type = T;

  PageAlignedAllocator() = default;
  template <class U>
  PageAlignedAllocator(const PageAlignedAllocator<U>&) noexcept {}

  T* allocate(std::size_t count) { return static_cast<T*>(allocate_pages(count * sizeof(T))); }
  void deallocate(T* pages, std::size_t count) noexcept { free_pages(pages, count * sizeof(T)); }

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
