#include "compile_driver.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "build_identity.hpp"
#include "compile_report.hpp"
#include "compiler/host_lowering.hpp"
#include "compiler/plan_cache.hpp"
#include "compiler/scratch_layout.hpp"
#include "csrun/build_info.hpp"
#include "storage/atomic_file.hpp"
#include "wafer/wafer_profile.hpp"

namespace csrun::modes {

namespace {

bool recomputes_layers(const TraceSummary& trace, const RunOptions& options) {
  return options.recompute_layers && trace.training;
}

// The options the wafer's step is compiled with beside a step that recomputes layers: the same
// but that, and quiet (--dump_ir shows the host's step).
RunOptions wafer_step_options(const RunOptions& options) {
  RunOptions wafer = options;
  wafer.recompute_layers = false;
  wafer.dump_ir.clear();
  return wafer;
}

graph::DType half_dtype(config::HalfType type) {
  switch (type) {
    case config::HalfType::float16:
      return graph::DType::f16;
    case config::HalfType::bfloat16:
      return graph::DType::bf16;
    case config::HalfType::cbfloat16:
      return graph::DType::cb16;
  }
  return graph::DType::bf16;
}

// Every setting that changes the plan, and the build of csrun that made it, so the cache never
// hands out a plan made otherwise.
std::string plan_settings(const config::TrainerSpec& trainer, const TraceSummary& trace,
                          const RunOptions& options) {
  compiler::PrecisionPolicy precision = precision_policy(trainer);
  wafer::WaferOptions wafer = wafer_options(trainer, trace, options);
  return std::string("csrun ") + kVersion + " build " + executable_build_id() + "; device " +
         config::device_name(trainer.backend.device) + "; step " +
         (trace.training ? "train" : "eval") + "; precision " +
         (precision.mixed ? "mixed " : "f32 ") + graph::dtype_name(precision.half) + " level " +
         std::to_string(precision.level) + "; wafer " + wafer.wafer + "; mode " +
         config::execution_mode_name(wafer.mode) + "; num_csx " + std::to_string(wafer.num_csx) +
         "; batch " + std::to_string(wafer.system_batch) +
         (wafer.micro_batch_fixed ? " fixed" : " auto") + "; releases " +
         wafer.releases.describe() + "; tokens " + std::to_string(trace.tokens_per_sample) +
         (trace.host_only ? "; host only" : "") +
         (recomputes_layers(trace, options) ? "; recompute layers" : "");
}

// Where --dump_ir prints: stdout, or stderr where --json keeps stdout for its document.
std::ostream& dump_stream(const RunOptions& options) {
  return options.json ? std::cerr : std::cout;
}

// Prints the program after the passes --dump_ir names.
compiler::PassManager::Observer ir_printer(const RunOptions& options) {
  if (options.dump_ir.empty()) return {};
  std::vector<std::string> wanted = options.dump_ir;
  std::ostream* out = &dump_stream(options);
  return [wanted, out](std::string_view pass, const compiler::Program& program) {
    if (std::find(wanted.begin(), wanted.end(), pass) == wanted.end()) return;
    *out << "# IR after " << pass << ": " << program.graph.size() << " nodes, "
         << program.fusions.size() << " fusions\n"
         << program.to_text() << std::flush;
  };
}

bool dump_wanted(const RunOptions& options, std::string_view point) {
  return std::find(options.dump_ir.begin(), options.dump_ir.end(), point) != options.dump_ir.end();
}

// What the compiler decided after the passes: the host steps (--dump_ir lower-host) and the
// scratch layout (--dump_ir layout-scratch).
void print_host_decisions(const compiler::Plan& plan, const RunOptions& options) {
  std::ostream& out = dump_stream(options);
  if (dump_wanted(options, "lower-host"))
    out << "# host steps after lower-host: " << plan.host_steps.size() << " steps for "
        << plan.kernels.size() << " kernels\n"
        << compiler::host_steps_text(plan) << std::flush;
  if (dump_wanted(options, "layout-scratch"))
    out << "# scratch after layout-scratch: " << plan.scratch.kernel_values.size()
        << " values inside kernels, " << plan.scratch.snapshots.size() << " snapshots\n"
        << compiler::scratch_layout_text(plan) << std::flush;
}

bool on_wafer(const config::TrainerSpec& trainer, const TraceSummary& trace) {
  return trainer.backend.device == config::Device::csx && !trace.host_only;
}

// For comparison: the mode the plan does not use, forced.
void add_alternative(PlannedTrainer& planned, wafer::WaferOptions options) {
  bool pipelined = planned.plan.mapping.mode == compiler::ExecutionMode::pipelined;
  options.mode =
      pipelined ? config::ExecutionMode::weight_streaming : config::ExecutionMode::pipelined;
  try {
    planned.alternative = wafer::map_to_wafer(planned.plan, options);
  } catch (const wafer::MappingError& error) {
    planned.alternative_problem = error.what();
  }
}

}  // namespace

std::vector<std::string> wafer_names() {
  return wafer::wafer_keys();
}

std::vector<std::string> ir_dump_points() {
  return compiler::dump_points();
}

compiler::PrecisionPolicy precision_policy(const config::TrainerSpec& trainer) {
  compiler::PrecisionPolicy policy;
  policy.mixed = trainer.backend.device == config::Device::csx && trainer.precision.enabled;
  policy.half = half_dtype(trainer.precision.fp16_type);
  policy.level = static_cast<int>(trainer.precision.precision_opt_level);
  return policy;
}

wafer::WaferOptions wafer_options(const config::TrainerSpec& trainer, const TraceSummary& trace,
                                  const RunOptions& options) {
  wafer::WaferOptions result;
  result.wafer = options.wafer;
  result.mode = trainer.backend.execution_mode;
  result.num_csx = trainer.backend.cluster.num_csx;
  result.system_batch = trace.samples_per_system();
  result.micro_batch_fixed = trace.micro_batch_fixed;
  result.releases = trainer.releases;
  return result;
}

std::filesystem::path compile_root(const config::TrainerSpec& trainer) {
  if (trainer.backend.compile_dir) return *trainer.backend.compile_dir;
  return std::filesystem::path(trainer.model_dir) / "compile";
}

std::optional<CompiledTrainer> compile_trainer(const config::TrainerSpec& trainer,
                                               const TraceSummary& trace, graph::Graph traced,
                                               const RunOptions& options,
                                               config::Diagnostics& diagnostics) {
  compiler::PlanCache cache(compile_root(trainer));
  CompiledTrainer result;
  result.key = compiler::PlanCache::key(trace.fingerprint, plan_settings(trainer, trace, options));
  result.directory = cache.directory(result.key);
  if (recomputes_layers(trace, options) && on_wafer(trainer, trace)) {
    std::optional<CompiledTrainer> wafer =
        compile_trainer(trainer, trace, traced, wafer_step_options(options), diagnostics);
    if (!wafer) return std::nullopt;
    result.wafer_step = std::make_unique<CompiledTrainer>(std::move(*wafer));
  }
  if (options.dump_ir.empty()) {
    result.cached = cache.load(result.key, result.cache_problem);
    if (result.cached) return result;
    if (!result.cache_problem.empty())
      diagnostics.warning({"compile cache"}, result.directory.string(),
                          result.cache_problem + "; compiling again");
  }
  try {
    auto start = std::chrono::steady_clock::now();
    result.compiled = compiler::compile_step(
        std::move(traced),
        {precision_policy(trainer), ir_printer(options), recomputes_layers(trace, options)});
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const compiler::KernelMatchError& error) {
    for (const std::string& problem : error.problems())
      diagnostics.error(trainer.model.mark, trainer.model.path, problem);
    return std::nullopt;
  }
  return result;
}

PlannedTrainer plan_trainer(const config::TrainerSpec& trainer, const TraceSummary& trace,
                            CompiledTrainer compiled, const RunOptions& options) {
  PlannedTrainer planned;
  planned.key = compiled.key;
  planned.directory = compiled.directory;
  planned.recomputes_layers = recomputes_layers(trace, options);
  wafer::WaferOptions wafer = wafer_options(trainer, trace, options);
  if (compiled.wafer_step) {
    planned.wafer_plan = std::make_unique<PlannedTrainer>(
        plan_trainer(trainer, trace, std::move(*compiled.wafer_step), wafer_step_options(options)));
  }
  if (compiled.cached) {
    planned.plan = std::move(*compiled.cached);
    planned.from_cache = true;
  } else {
    auto start = std::chrono::steady_clock::now();
    planned.passes = compiled.compiled->passes;
    compiler::StepInfo info{kVersion, trace.fingerprint,
                            trace.training ? compiler::StepKind::train : compiler::StepKind::eval,
                            trace.batch_size, trace.tokens_per_sample};
    planned.plan =
        compiler::build_plan(std::move(*compiled.compiled), info, precision_policy(trainer));
    print_host_decisions(planned.plan, options);
    if (planned.wafer_plan) {
      planned.plan.mapping = planned.wafer_plan->plan.mapping;
      planned.plan.mapping.kernels.clear();
    } else if (on_wafer(trainer, trace)) {
      planned.plan.mapping = wafer::map_to_wafer(planned.plan, wafer);
    }
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    planned.compile_seconds = compiled.seconds + elapsed.count();
    compiler::PlanCache(compile_root(trainer)).store(planned.key, planned.plan);
    // Every plan's, the eval and micro-step plans' too: --profile numbers their kernels so.
    storage::write_file_atomically(planned.directory / "kernels.tsv", kernel_table(planned.plan));
  }
  if (planned.wafer_plan) {
    planned.alternative = planned.wafer_plan->alternative;
    planned.alternative_problem = planned.wafer_plan->alternative_problem;
  } else if (on_wafer(trainer, trace)) {
    add_alternative(planned, wafer);
  }
  return planned;
}

std::optional<PlannedTrainer> plan_step(const config::TrainerSpec& trainer,
                                        const TraceSummary& trace, graph::Graph traced,
                                        const RunOptions& options,
                                        config::Diagnostics& diagnostics) {
  std::optional<CompiledTrainer> compiled =
      compile_trainer(trainer, trace, std::move(traced), options, diagnostics);
  if (!compiled) return std::nullopt;
  return plan_trainer(trainer, trace, std::move(*compiled), options);
}

}  // namespace csrun::modes
