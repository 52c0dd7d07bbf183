// The checkpoint seal's check on arbitrary files, csrun's own parse of a checkpoint before libhdf5
// reads a byte of it: the file is sealed, has no seal, or gets a CheckpointError naming it. A file
// that passes goes no further: what libhdf5 makes of it is the `checkpoint` target's.

#include "runner/checkpoint.hpp"
#include "runner/checkpoint_seal.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path =
      csrun::fuzz::scratch().write("checkpoint_1.mdl", csrun::fuzz::as_text(data, size));
  try {
    csrun::runner::check_seal(path);
  } catch (const csrun::runner::CheckpointError&) {
  }
  return 0;
}
