#pragma once

#include <string>
#include <vector>

#include "kernel_matching.hpp"
#include "pass_manager.hpp"
#include "passes.hpp"
#include "plan.hpp"

namespace csrun::compiler {

struct CompileOptions {
  PrecisionPolicy precision;
  PassManager::Observer after_pass;  // sees the program after each pass (--dump_ir)
  bool recompute_layers = false;     // pass recompute-layers changes the program
};

// The passes compile runs, in order: fold, simplify, precision, cse, dce, half-copies,
// sink-casts, schedule-updates, recompute, recompute-windows, recompute-attention,
// recompute-activations, recompute-layers (which changes nothing unless `recompute_layers`),
// convolve-gradients, fuse-softmax, fuse-matmul, fuse-elementwise.
PassManager standard_passes(const PrecisionPolicy& precision, bool recompute_layers = false);

// What --dump_ir accepts: "trace" (the graph before any pass), every pass name, and "lower-host"
// (the plan's host steps, host_lowering.hpp).
std::vector<std::string> dump_points();

// A step after the passes and kernel matching: what `csrun validate` checks.
struct CompiledStep {
  Program program;
  std::vector<Kernel> kernels;
  std::vector<PassStatistics> passes;
};

// Runs the passes over a traced step and matches every node to a kernel. Throws
// KernelMatchError when something has no kernel.
CompiledStep compile_step(graph::Graph traced, const CompileOptions& options);

// What the plan records about the step beyond the graph.
struct StepInfo {
  std::string csrun_version;
  std::string fingerprint;  // of the traced graph
  StepKind step = StepKind::train;
  std::int64_t batch_size = 0;
  std::int64_t tokens_per_sample = 0;
};

// The compiled step with its memory plan: a Plan without a wafer mapping yet.
Plan build_plan(CompiledStep compiled, const StepInfo& info, const PrecisionPolicy& precision);

}  // namespace csrun::compiler
