#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace csrun::runner {

// The files checkpoint_name ("checkpoint_{step}.mdl", any name with {step} in its file name, a
// folder before it allowed) names in a checkpoint directory, as the Model Zoo's Checkpoint
// callback names and finds them: a step's file, or, where that exists, the step followed by a
// time stamp ("checkpoint_20_20261122_101010.mdl").
class CheckpointNames {
 public:
  explicit CheckpointNames(std::string checkpoint_name = "checkpoint_{step}.mdl");

  // The file of `step` in `directory`; `time_stamp` ("20261122_101010") for a step whose file
  // exists already.
  std::filesystem::path file(const std::filesystem::path& directory, std::int64_t step,
                             const std::string& time_stamp = "") const;

  struct Found {
    std::int64_t step = 0;
    std::string time_stamp;  // empty: the step's plain name
    std::string path;
  };
  // The checkpoints of this name in `directory`, by step, then time stamp (oldest first). A
  // name whose step does not fit a 64-bit integer is no checkpoint of any run and is left out.
  std::vector<Found> find(const std::filesystem::path& directory) const;

  // The folder of `directory` the files are in (checkpoint_name may name one).
  std::filesystem::path folder(const std::filesystem::path& directory) const;

  // How a user reads the names: "checkpoint_(step)(_timestamp)?.mdl".
  std::string convention() const;

 private:
  std::string checkpoint_name_;
};

}  // namespace csrun::runner
