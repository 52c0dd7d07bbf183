#include "frame_memory.hpp"

#include <malloc.h>

namespace csrun::stream {

namespace {

// glibc's largest mmap threshold on 64-bit: blocks up to this size come from the heap.
constexpr int kHeapBlockLimit = 32 << 20;
// Freed heap memory kept before any is returned: frames in flight (credits x workers x frame).
constexpr int kKeptFreeMemory = 256 << 20;

}  // namespace

void keep_frame_memory() {
  static const bool kept = [] {
    mallopt(M_MMAP_THRESHOLD, kHeapBlockLimit);
    mallopt(M_TRIM_THRESHOLD, kKeptFreeMemory);
    return true;
  }();
  (void)kept;
}

}  // namespace csrun::stream
