// The checkpoint reader on arbitrary files: a CheckpointError naming the file, or a checkpoint.

#include "runner/checkpoint.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path =
      csrun::fuzz::scratch().write("checkpoint_1.mdl", csrun::fuzz::as_text(data, size));
  try {
    csrun::runner::load_checkpoint(path);
  } catch (const csrun::runner::CheckpointError&) {
  }
  return 0;
}
