#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

// Every variable of `executable` from its initializer; the values depend on the seed and the
// variable's name only.
void initialize_variables(runtime::Executable& executable, std::uint64_t seed);

// The checkpoint of `executable`'s variables at `position`, with its JSON metadata.
Checkpoint snapshot(const runtime::Executable& executable, const LoopPosition& position,
                    std::string metadata);

// Writes the checkpoint's entries that the checkpoint settings want (load_checkpoint_states)
// into `executable`'s variables and returns the loop position it holds, of those wanted. Throws
// CheckpointError, naming `path`, for an entry of another shape or kind of number, and for a
// missing parameter unless disable_strict_checkpoint_loading.
LoopPosition restore(runtime::Executable& executable, const Checkpoint& checkpoint,
                     const std::string& path, const config::CheckpointSpec& settings);

}  // namespace csrun::runner
