#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "config/run_spec.hpp"
#include "data/batch_source.hpp"
#include "runtime/executable.hpp"

namespace csrun::runner {

// Where a run stands besides its variables: what a checkpoint stores of the loop.
struct LoopPosition {
  std::optional<std::int64_t> global_step;
  std::optional<data::BatchPosition> dataloader;  // the training dataloader's
};

// Every variable of `executable` but those in `skip` from its initializer; the values depend on
// the seed and the variable's name only.
void initialize_variables(runtime::Executable& executable, std::uint64_t seed,
                          const std::set<std::string>& skip = {});

// The checkpoint of `executable`'s variables at `position`, with its JSON metadata; its float32
// tensors are borrowed from the executable (valid until it runs again).
Checkpoint snapshot(const runtime::Executable& executable, const LoopPosition& position,
                    std::string metadata);

// What restore() took from a checkpoint: the variables it wrote (the others keep their values)
// and the loop position, of what the settings want.
struct Restored {
  std::set<std::string> variables;
  LoopPosition position;
  // With disable_strict_checkpoint_loading: the parameters the checkpoint did not hold, of
  // `parameters` the settings want.
  std::vector<std::string> parameters_not_loaded;
  std::size_t parameters = 0;
};

// Reads the entries of the checkpoint at `path` that the checkpoint settings want
// (load_checkpoint_states) and `executable` has variables for into those variables; f32 ones
// straight into the variables' memory, so a checkpoint takes no memory of its own as it loads
// (an eval step reads its model's entries and leaves the optimizer's unread). Throws
// CheckpointError, naming `path`, as load_checkpoint does, for an entry of another shape or kind
// of number, and for a missing parameter unless disable_strict_checkpoint_loading; for a
// checkpoint that holds none of the parameters, without advice to load it anyway (another model's).
Restored restore(runtime::Executable& executable, const std::string& path,
                 const config::CheckpointSpec& settings);

// What a log says of the parameters a restore left at their initial values.
std::string not_loaded_text(const Restored& restored);

}  // namespace csrun::runner
