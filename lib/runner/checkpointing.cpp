#include "checkpointing.hpp"

#include <ctime>
#include <future>

#include "storage/directories.hpp"

namespace csrun::runner {

namespace fs = std::filesystem;

namespace {

std::string time_stamp() {
  std::time_t now = std::time(nullptr);
  std::tm parts{};
  localtime_r(&now, &parts);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &parts);
  return stamp;
}

}  // namespace

struct Checkpointing::Write {
  std::filesystem::path path;
  Checkpoint checkpoint;
  std::future<void> done;
};

Checkpointing::Checkpointing(const config::CheckpointSpec& settings, fs::path directory,
                             RunLog& log, std::function<Checkpoint()> snapshot, bool in_background)
    : settings_(settings),
      names_(settings.checkpoint_name),
      directory_(std::move(directory)),
      log_(log),
      snapshot_(std::move(snapshot)),
      in_background_(in_background) {}

// A write still in flight (the loop ended by an error elsewhere) finishes before the run does:
// the future's destructor waits for it.
Checkpointing::~Checkpointing() = default;

void Checkpointing::on_train_start(const RunState& state) {
  for (const std::string& path : remove_stale_checkpoint_files(names_.folder(directory_).string()))
    log_.warning("Removed " + path + ", left by a checkpoint write that was killed");
  if (!settings_.save_initial_checkpoint) return;
  for (const CheckpointNames::Found& found : names_.find(directory_))
    if (found.step == state.global_step) return;  // the run resumes from it
  save(state);
}

void Checkpointing::on_train_batch_end(const RunState& state) {
  finish_write(false);
  bool last = state.done == state.total;
  bool checkpoint_step =
      settings_.steps && *settings_.steps > 0 && state.global_step % *settings_.steps == 0;
  if (last || checkpoint_step) save(state);
}

void Checkpointing::on_train_end(const RunState&) {
  finish_write(true);
}

void Checkpointing::on_exception(const RunState&, const std::exception&) {
  try {
    finish_write(true);
  } catch (const std::exception& error) {
    log_.warning(std::string("The checkpoint written in the background failed too: ") +
                 error.what());
  }
}

void Checkpointing::save_unless_saved(const RunState& state) {
  if (saved_step_ != state.global_step) save(state);
  finish_write(true);
}

void Checkpointing::before_state_changes() {
  finish_write(true);
}

void Checkpointing::save(const RunState& state) {
  fs::path path = names_.file(directory_, state.global_step);
  if (fs::exists(path)) path = names_.file(directory_, state.global_step, time_stamp());
  storage::make_directories(path.parent_path());
  log_.info("Saving checkpoint at step " + std::to_string(state.global_step));
  if (!in_background_) {
    save_checkpoint(path.string(), snapshot_());
    saved_step_ = state.global_step;
    log_.info("Saved checkpoint " + path.string());
    prune();
    return;
  }
  finish_write(true);
  saved_step_ = state.global_step;
  auto write = std::make_unique<Write>();
  write->path = path;
  write->checkpoint = snapshot_();
  write->done =
      std::async(std::launch::async, [path = path.string(), &checkpoint = write->checkpoint] {
        save_checkpoint(path, checkpoint);
      });
  write_ = std::move(write);
}

void Checkpointing::finish_write(bool wait) {
  if (!write_) return;
  if (!wait && write_->done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  std::unique_ptr<Write> write = std::move(write_);
  write->done.get();
  log_.info("Saved checkpoint " + write->path.string());
  prune();
}

void Checkpointing::prune() {
  if (!settings_.keep_last) return;
  auto found = names_.find(directory_);
  auto keep = static_cast<std::size_t>(*settings_.keep_last);
  for (std::size_t i = 0; i + keep < found.size(); ++i)
    fs::remove(found[i].path);
}

fs::path checkpoint_directory(const config::CheckpointSpec& settings,
                              const std::string& model_dir) {
  return settings.checkpoint_root.value_or(model_dir);
}

std::optional<std::string> checkpoint_to_load(const std::string& explicit_path,
                                              const config::CheckpointChoice* choice,
                                              const config::CheckpointSpec& settings,
                                              const fs::path& directory, RunLog& log) {
  if (!explicit_path.empty()) return explicit_path;
  if (choice && choice->kind == config::CheckpointChoice::Kind::path) return choice->path;
  if ((choice && choice->kind == config::CheckpointChoice::Kind::none) ||
      !settings.autoload_last_checkpoint)
    return std::nullopt;
  CheckpointNames names(settings.checkpoint_name);
  log.info("Checkpoint autoloading is enabled. Looking for latest checkpoint in \"" +
           directory.string() + "\" directory with the following naming convention: `" +
           names.convention() + "`.");
  auto found = names.find(directory);
  if (found.empty()) {
    log.info("No checkpoints were found in \"" + directory.string() + "\".");
    return std::nullopt;
  }
  log.info("Found latest checkpoint at \"" + found.back().path + "\".");
  return found.back().path;
}

}  // namespace csrun::runner
