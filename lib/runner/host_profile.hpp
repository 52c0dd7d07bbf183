#pragma once

#include <span>
#include <string>
#include <vector>

#include "compiler/plan.hpp"
#include "runtime/executable.hpp"

namespace csrun::runner {

// The host time of one program of a run (`csrun train --profile`): its plan and what its
// executable measured.
struct ProfiledProgram {
  std::string name;  // "train", "micro-step", "eval"
  const compiler::Plan* plan = nullptr;
  runtime::Executable::HostProfile profile;
};

// host_profile.tsv: a line per host step of each program that was timed, in the order the step
// runs them, numbered as kernels.tsv numbers their kernels: program, kernel, name (the kernel's),
// call (compiler::host_step_call), phase, scope, node (the step's node, a chain's last: its op and
// types), runs, seconds (a run's mean), share (percent of the program's run), gflop (a run's),
// gflop_per_s.
std::string host_profile_table(std::span<const ProfiledProgram> programs);

// For the run's log, a few lines per program: its runs and seconds a run, the shares of its run
// by what ran (gemm, chain, a node kernel's op, and between host steps) and the host steps that
// took longest.
std::vector<std::string> host_profile_summary(std::span<const ProfiledProgram> programs);

}  // namespace csrun::runner
