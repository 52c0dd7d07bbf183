// Loaded with LD_PRELOAD in front of libhdf5: opening any HDF5 file crashes, as libhdf5 can
// crash on a damaged file, so that a test sees what csrun says then.

#include <csignal>

extern "C" long long H5Fopen(const char*, unsigned, long long) {
  std::raise(SIGSEGV);
  return -1;
}
