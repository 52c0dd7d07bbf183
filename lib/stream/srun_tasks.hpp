#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "worker.hpp"

namespace csrun::stream {

// This process's place in an srun step of more than one task: task 0 coordinates, the others
// are data workers. Read from SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS),
// SLURM_JOB_ID and SLURM_STEP_ID; absent outside srun and in one-task steps.
struct SrunTask {
  std::int64_t rank = 0;
  std::int64_t tasks = 1;
  std::string step;  // "<job id>.<step id>"
};
std::optional<SrunTask> srun_task();

// The name of the rendezvous file of coordinator `index` (one per trainer): of an srun step, or,
// with `step` empty, of a coordinator that waits for workers of any launcher.
std::string rendezvous_name(const std::string& step, std::size_t index);

// A worker task's part: serves the coordinators whose rendezvous files these are, in turn, each
// until it says bye; skips those already finished. Throws std::runtime_error as run_worker does,
// or when a file does not appear within the worker's connect_timeout. The worker is `worker`
// (its rank, log, ...) with each rendezvous file's address and secret.
void serve_in_turn(std::span<const std::string> rendezvous_files, const WorkerOptions& worker);

}  // namespace csrun::stream
