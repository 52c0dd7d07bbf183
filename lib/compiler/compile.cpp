#include "compile.hpp"

#include "host_lowering.hpp"
#include "memory_plan.hpp"
#include "scratch_layout.hpp"

namespace csrun::compiler {

PassManager standard_passes(const PrecisionPolicy& precision, bool recompute_layers) {
  PassManager manager;
  manager.add({"fold", "fold constant expressions", fold_constants});
  manager.add({"simplify", "algebraic identities that keep results bit for bit", simplify_algebra});
  manager.add({"precision", "mixed precision: 16-bit matmul operands and results by level",
               [precision](Program& program) { return lower_precision(program, precision); }});
  manager.add({"cse", "one node per distinct computation", eliminate_common_subexpressions});
  manager.add({"dce", "drop what no result needs", eliminate_dead_code});
  manager.add({"half-copies", "a 16-bit copy of each updated weight its products read",
               [recompute_layers](Program& program) {
                 return keep_half_copies(program, recompute_layers);
               }});
  manager.add({"sink-casts", "each widening cast just before its first reader", sink_casts});
  manager.add({"schedule-updates", "each parameter's update as soon as its gradient is ready",
               schedule_updates});
  manager.add(
      {"recompute", "cheap values recomputed where a later kernel reads them", recompute_values});
  manager.add({"recompute-windows", "convolution windows recomputed for the backward pass",
               recompute_windows});
  manager.add({"recompute-attention",
               "attention's probabilities recomputed for the backward pass of long sequences",
               recompute_attention});
  manager.add({"recompute-activations",
               "cheap elementwise activations recomputed for the backward pass",
               recompute_activations});
  manager.add({"recompute-layers",
               "each layer's forward pass run again for the backward pass (--recompute_layers)",
               [recompute_layers](Program& program) {
                 return recompute_layers ? compiler::recompute_layers(program) : 0;
               }});
  manager.add({"convolve-gradients",
               "a convolution's input gradient as a convolution of its output's gradient",
               convolve_gradients});
  manager.add({"fuse-softmax", "softmaxes with their 16-bit copies", fuse_softmax});
  manager.add(
      {"fuse-matmul", "matmuls with their operand loads, bias, cast and activation", fuse_matmuls});
  manager.add(
      {"fuse-elementwise", "chains of elementwise ops into single passes", fuse_elementwise});
  return manager;
}

std::vector<std::string> dump_points() {
  std::vector<std::string> names{"trace"};
  PassManager manager = standard_passes({});
  for (const Pass& pass : manager.passes())
    names.push_back(pass.name);
  names.push_back("lower-host");
  names.push_back("layout-scratch");
  return names;
}

CompiledStep compile_step(graph::Graph traced, const CompileOptions& options) {
  CompiledStep compiled;
  compiled.program.graph = std::move(traced);
  if (options.after_pass) options.after_pass("trace", compiled.program);
  compiled.passes = standard_passes(options.precision, options.recompute_layers)
                        .run(compiled.program, options.after_pass);
  compiled.kernels = match_kernels(compiled.program);
  return compiled;
}

Plan build_plan(CompiledStep compiled, const StepInfo& info, const PrecisionPolicy& precision) {
  Plan plan;
  plan.csrun_version = info.csrun_version;
  plan.fingerprint = info.fingerprint;
  plan.step = info.step;
  plan.batch_size = info.batch_size;
  plan.tokens_per_sample = info.tokens_per_sample;
  plan.precision = precision;
  plan.memory = plan_memory(compiled.program.graph, compiled.kernels);
  plan.host_steps = lower_host(compiled.program.graph, compiled.kernels, plan.memory);
  plan.graph = std::move(compiled.program.graph);
  plan.kernels = std::move(compiled.kernels);
  plan.scratch = layout_scratch(plan);
  return plan;
}

}  // namespace csrun::compiler
