#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "compiler/compile.hpp"
#include "config/diagnostics.hpp"
#include "config/run_spec.hpp"
#include "graph/graph.hpp"
#include "modes.hpp"
#include "trace_summary.hpp"
#include "wafer/wafer_mapping.hpp"

namespace csrun::modes {

// A trainer's step after the compiler's front half: a plan found in the compile cache, or the
// passes' output, kernels matched, ready to become one.
struct CompiledTrainer {
  std::string key;                  // the compile cache key
  std::filesystem::path directory;  // its directory in the compile cache
  std::optional<compiler::Plan> cached;
  std::optional<compiler::CompiledStep> compiled;
  double seconds = 0.0;       // the passes and kernel matching
  std::string cache_problem;  // a cached plan that could not be read, and was ignored
  // With --recompute_layers, a training step on the wafer: the step without layers recomputed,
  // whose plan the wafer mapping is made from. The host recomputes layers for its own memory; the
  // wafer's estimate stays that of the step as the Model Zoo runs it.
  std::unique_ptr<CompiledTrainer> wafer_step;
};

// Mixed precision as the compiler applies it: the params' 16-bit type and level on CSX; f32
// for CPU and GPU runs (docs/compiler.md).
compiler::PrecisionPolicy precision_policy(const config::TrainerSpec& trainer);

wafer::WaferOptions wafer_options(const config::TrainerSpec& trainer, const TraceSummary& trace,
                                  const RunOptions& options);

// Where compiled plans of `trainer` live: backend.compile_dir, else model_dir/compile.
std::filesystem::path compile_root(const config::TrainerSpec& trainer);

// Looks the step up in the compile cache (unless --dump_ir asks to see the passes run), else
// runs the passes and kernel matching. Nothing when kernels do not match: each problem is then
// an error in `diagnostics`, at the model.
std::optional<CompiledTrainer> compile_trainer(const config::TrainerSpec& trainer,
                                               const TraceSummary& trace, graph::Graph traced,
                                               const RunOptions& options,
                                               config::Diagnostics& diagnostics);

// A trainer's finished plan: memory planned and, on CSX, mapped onto the wafer.
struct PlannedTrainer {
  compiler::Plan plan;
  std::string key;
  std::filesystem::path directory;
  bool from_cache = false;
  double compile_seconds = 0.0;  // this run's passes, matching, memory plan and mapping
  std::vector<compiler::PassStatistics> passes;  // empty for a cached plan
  bool recomputes_layers = false;                // a training step with --recompute_layers
  // The other execution mode's estimate, or why it cannot run, for comparison (CSX only).
  std::optional<compiler::WaferMapping> alternative;
  std::string alternative_problem;
  // With --recompute_layers on the wafer: the plan without layers recomputed, which the wafer
  // mapping (`plan.mapping`, without its per-kernel timings) is of.
  std::unique_ptr<PlannedTrainer> wafer_plan;
};

// Finishes a compiled trainer into its plan (or takes the cached one) and stores new plans in
// the compile cache. Throws wafer::MappingError when the wafer cannot run it as configured, and
// std::runtime_error when the cache cannot be written.
PlannedTrainer plan_trainer(const config::TrainerSpec& trainer, const TraceSummary& trace,
                            CompiledTrainer compiled, const RunOptions& options);

// The one compile driver, both halves in one call: the traced step's plan from the compile cache,
// or compiled and stored. Problems and warnings go to `diagnostics`; nothing when kernels do not
// match.
std::optional<PlannedTrainer> plan_step(const config::TrainerSpec& trainer,
                                        const TraceSummary& trace, graph::Graph traced,
                                        const RunOptions& options,
                                        config::Diagnostics& diagnostics);

}  // namespace csrun::modes
