#pragma once

#include <cstdint>

namespace csrun::test {

// Heap allocations (malloc, calloc, realloc, aligned and operator new, which all come through
// malloc's entry points) made by this process so far. allocation_counter.cpp interposes glibc's
// allocator for the runtime's test executable.
std::int64_t heap_allocations();

}  // namespace csrun::test
