// The checkpoint reader on arbitrary files: a CheckpointError naming the file, or a checkpoint;
// read into memory of its own, and as a run restores one, its model's entries into memory the
// caller sized from their dims and the others left out.

#include <list>
#include <vector>

#include "runner/checkpoint.hpp"
#include "scratch_directory.hpp"

namespace {

using csrun::runner::EntryPlacement;

// As a model of these shapes would take them; a claimed size beyond this is left out.
constexpr std::uint64_t kLargestEntry = std::uint64_t{1} << 22;

EntryPlacement place_model_entries(std::list<std::vector<float>>& memory, const std::string& key,
                                   const std::vector<std::uint64_t>& dims, bool integer) {
  if (integer || !key.starts_with("model.")) return EntryPlacement::leave_out();
  std::uint64_t elements = 1;
  for (std::uint64_t extent : dims) {
    if (extent != 0 && elements > kLargestEntry / extent) return EntryPlacement::leave_out();
    elements *= extent;
  }
  return EntryPlacement::read_into(memory.emplace_back(elements));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path =
      csrun::fuzz::scratch().write("checkpoint_1.mdl", csrun::fuzz::as_text(data, size));
  try {
    csrun::runner::load_checkpoint(path);
  } catch (const csrun::runner::CheckpointError&) {
  }
  std::list<std::vector<float>> memory;
  try {
    csrun::runner::load_checkpoint(
        path, [&](const std::string& key, const std::vector<std::uint64_t>& dims, bool integer) {
          return place_model_entries(memory, key, dims, integer);
        });
  } catch (const csrun::runner::CheckpointError&) {
  }
  return 0;
}
