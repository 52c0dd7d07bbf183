#pragma once

#include <atomic>

namespace csrun::modes {

// While alive, SIGTERM (a SLURM time limit, scancel, preemption, `timeout`) and SIGINT (Ctrl-C)
// set a flag instead of ending the process, so training checkpoints and stops between steps. A
// second signal ends the process at once, unless it comes within a second of the first (GNU
// timeout signals the command and then its process group: one request).
class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  const std::atomic<bool>& requested() const;
};

// The exit status of a run stopped this way: 128 + SIGTERM, as a shell reports a process the
// signal ended, so a job scheduler sees it was not a complete run.
inline constexpr int kStoppedStatus = 143;

}  // namespace csrun::modes
