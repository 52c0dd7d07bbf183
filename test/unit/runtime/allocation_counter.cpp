#include "allocation_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

#include <malloc.h>

// glibc's allocator under its internal names; defining the public ones here makes every
// allocation in this executable (its libraries included) pass through a counter.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* pointer);
}

namespace {
std::atomic<std::int64_t> allocations{0};
std::atomic<std::int64_t> bytes_in_use{0};

std::int64_t usable_bytes(void* memory) {
  return memory == nullptr ? 0 : static_cast<std::int64_t>(malloc_usable_size(memory));
}

void* counted(void* memory) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  bytes_in_use.fetch_add(usable_bytes(memory), std::memory_order_relaxed);
  return memory;
}
}  // namespace

extern "C" {

void* malloc(std::size_t size) {
  return counted(__libc_malloc(size));
}

void* calloc(std::size_t count, std::size_t size) {
  return counted(__libc_calloc(count, size));
}

void* realloc(void* pointer, std::size_t size) {
  std::int64_t released = usable_bytes(pointer);
  void* moved = __libc_realloc(pointer, size);
  // A failed realloc keeps the old block.
  if (moved != nullptr || size == 0) bytes_in_use.fetch_sub(released, std::memory_order_relaxed);
  return moved == nullptr ? nullptr : counted(moved);
}

void* aligned_alloc(std::size_t alignment, std::size_t size) {
  return counted(__libc_memalign(alignment, size));
}

int posix_memalign(void** pointer, std::size_t alignment, std::size_t size) {
  void* memory = counted(__libc_memalign(alignment, size));
  if (memory == nullptr) return ENOMEM;
  *pointer = memory;
  return 0;
}

void free(void* pointer) {
  bytes_in_use.fetch_sub(usable_bytes(pointer), std::memory_order_relaxed);
  __libc_free(pointer);
}

}  // extern "C"

namespace csrun::test {

std::int64_t heap_allocations() {
  return allocations.load(std::memory_order_relaxed);
}

std::int64_t heap_bytes_in_use() {
  return bytes_in_use.load(std::memory_order_relaxed);
}

}  // namespace csrun::test
