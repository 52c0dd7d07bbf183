#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "callbacks.hpp"
#include "checkpoint.hpp"
#include "checkpoint_names.hpp"
#include "config/run_spec.hpp"
#include "run_log.hpp"

namespace csrun::runner {

// The checkpoint policy of fit, a built-in hook: a checkpoint at every checkpoint step
// (checkpoint.steps), at the last step, and before the first with save_initial_checkpoint;
// named by checkpoint_name ("checkpoint_{step}.mdl"; an existing file of that step is kept and
// the new one gets a time stamp, as the Model Zoo does) in checkpoint_root (default:
// model_dir); at most keep_last kept. Each write is atomic (save_checkpoint).
//
// In the background (--async_checkpoint), a checkpoint is written by a thread of its own from the
// state where it lies, with no copy, while the next step runs up to the point where it would
// change that state: there the step calls before_state_changes, which waits for the write. At
// most one write is in flight (the next checkpoint waits for it), the end of fit and a stop
// request wait for it, and its error, if any, ends the run at the next step, as a synchronous
// write's would.
class Checkpointing : public Callback {
 public:
  // `snapshot` takes the training step's checkpoint as the run stands.
  Checkpointing(const config::CheckpointSpec& settings, std::filesystem::path directory,
                RunLog& log, std::function<Checkpoint()> snapshot, bool in_background = false);
  ~Checkpointing() override;

  void on_train_start(const RunState& state) override;
  void on_train_batch_end(const RunState& state) override;
  void on_train_end(const RunState& state) override;
  void on_exception(const RunState& state, const std::exception& error) override;

  // Writes the checkpoint of the step just taken unless it is written (a stop request), and
  // waits until it is on disk.
  void save_unless_saved(const RunState& state);
  // The run is about to change the state `snapshot` borrows: a write in the background ends
  // first (its error thrown).
  void before_state_changes();

 private:
  struct Write;  // a checkpoint being written in the background

  void save(const RunState& state);
  // A background write that has ended (or, with `wait`, the one in flight): logged, its error
  // thrown.
  void finish_write(bool wait);
  void prune();

  const config::CheckpointSpec& settings_;
  CheckpointNames names_;
  std::filesystem::path directory_;
  RunLog& log_;
  std::function<Checkpoint()> snapshot_;
  bool in_background_;
  std::unique_ptr<Write> write_;
  std::optional<std::int64_t> saved_step_;
};

// checkpoint_root, or model_dir.
std::filesystem::path checkpoint_directory(const config::CheckpointSpec& settings,
                                           const std::string& model_dir);

// The checkpoint a run starts from: `explicit_path` (--checkpoint_path), else the one the
// params' fit or validate section names (`choice`), else, with autoload_last_checkpoint, the
// latest in `directory`; none: the variables keep their initial values. Says which in the log.
std::optional<std::string> checkpoint_to_load(const std::string& explicit_path,
                                              const config::CheckpointChoice* choice,
                                              const config::CheckpointSpec& settings,
                                              const std::filesystem::path& directory, RunLog& log);

}  // namespace csrun::runner
