#include "allocation_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

// glibc's allocator under its internal names; defining the public ones here makes every
// allocation in this executable (its libraries included) pass through a counter.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
}

namespace {
std::atomic<std::int64_t> allocations{0};
}

extern "C" {

void* malloc(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}

void* calloc(std::size_t count, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(count, size);
}

void* realloc(void* pointer, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(pointer, size);
}

void* aligned_alloc(std::size_t alignment, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** pointer, std::size_t alignment, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  void* memory = __libc_memalign(alignment, size);
  if (memory == nullptr) return ENOMEM;
  *pointer = memory;
  return 0;
}

}  // extern "C"

namespace csrun::test {

std::int64_t heap_allocations() {
  return allocations.load(std::memory_order_relaxed);
}

}  // namespace csrun::test
