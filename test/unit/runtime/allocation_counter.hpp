#pragma once

#include <cstdint>

namespace csrun::test {

// Heap allocations (malloc, calloc, realloc, aligned and operator new, which all come through
// malloc's entry points) made by this process so far. allocation_counter.cpp interposes glibc's
// allocator for the runtime's test executable.
std::int64_t heap_allocations();

// The bytes of the heap blocks allocated and not yet freed (as malloc_usable_size counts them).
std::int64_t heap_bytes_in_use();

}  // namespace csrun::test
