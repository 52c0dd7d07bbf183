#include "wafer_mapping.hpp"

#include <cstdio>

#include "byte_size.hpp"
#include "mapping_steps.hpp"

namespace csrun::wafer {

namespace {

std::string byte_size_of(std::int64_t bytes) {
  return byte_size(static_cast<double>(bytes));
}

// What keeping a micro-batch's activations takes: all of them, or with recomputation one
// layer's share, beside two layers' weights (one computing, the next arriving).
ActivationPlan activation_plan(const MappingInputs& in, std::int64_t micro_batch, bool recompute) {
  double per_sample = static_cast<double>(in.demand.activations) /
                      static_cast<double>(std::max<std::int64_t>(in.plan.batch_size, 1));
  double kept = per_sample * static_cast<double>(micro_batch);
  if (recompute) kept /= std::max(in.layers.forward_layers, 1);
  ActivationPlan plan{micro_batch, recompute, 0, 0};
  plan.need = static_cast<std::int64_t>(kept) + 2 * in.demand.largest_layer_weights;
  plan.spilled = std::max<std::int64_t>(plan.need - in.profile.usable_sram(), 0);
  return plan;
}

std::string activation_text(const ActivationPlan& plan, std::int64_t traced,
                            std::int64_t system_batch) {
  std::string text;
  if (plan.micro_batch != traced) {
    text += "micro-batch " + std::to_string(plan.micro_batch) + " of " +
            std::to_string(system_batch) + " samples is the fastest; ";
  }
  if (plan.recompute) text += "the backward pass recomputes activations to save SRAM; ";
  if (plan.spilled > 0) {
    text += "the activations kept and two layers' weights need " + byte_size_of(plan.need) +
            ", so " + byte_size_of(plan.spilled) +
            " spill to activation servers and back over system I/O; ";
  }
  return text;
}

// Weight streaming with the micro-batch the params fixed, or else ("auto", as the Model Zoo's
// compiler does) the divisor of the system batch whose estimated step is shortest: larger
// micro-batches stream the weights fewer times, until their activations no longer fit. Those
// that do not fit are either recomputed or spilled, whichever is faster.
compiler::WaferMapping stream(const MappingInputs& in, const WaferOptions& options) {
  std::int64_t traced = std::max<std::int64_t>(in.plan.batch_size, 1);
  bool training = in.plan.step == compiler::StepKind::train;
  std::optional<compiler::WaferMapping> best;
  ActivationPlan chosen;
  for (std::int64_t size = in.system_batch; size >= 1; --size) {
    if (in.system_batch % size != 0 || (options.micro_batch_fixed && size != traced)) continue;
    for (bool recompute : {false, true}) {
      if (recompute && !training) continue;
      ActivationPlan plan = activation_plan(in, size, recompute);
      compiler::WaferMapping mapping = map_weight_streaming(in, plan);
      if (!best || mapping.estimate.step_seconds < best->estimate.step_seconds) {
        best = std::move(mapping);
        chosen = plan;
      }
    }
  }
  best->mode_reason += activation_text(chosen, traced, in.system_batch);
  return std::move(*best);
}

compiler::WaferMapping choose_and_map(const MappingInputs& in, const WaferOptions& options) {
  ModeChoice choice = choose_mode(in.demand.pipelined, in.profile, options);
  compiler::WaferMapping mapping =
      choice.mode == compiler::ExecutionMode::pipelined ? map_pipelined(in) : stream(in, options);
  mapping.mode_reason += choice.reason;
  return mapping;
}

// The batch itself crosses system I/O while the wafer computes: a step takes at least that.
void apply_input_bound(compiler::Estimate& e, const compiler::Plan& plan, const MappingInputs& in) {
  double bytes = 0.0;
  for (const graph::NamedNode& input : plan.graph.inputs()) {
    const graph::Node& node = plan.graph.node(input.node);
    bytes += static_cast<double>(graph::element_count(node.type.shape)) *
             static_cast<double>(graph::dtype_size(node.type.dtype));
  }
  bytes *= static_cast<double>(in.system_batch) / static_cast<double>(plan.batch_size);
  double seconds = bytes / in.profile.io_bytes_per_second;
  if (seconds <= e.step_seconds) return;
  e.step_seconds = seconds;
  e.bottleneck = "input data over system I/O (" + byte_size_of(static_cast<std::int64_t>(bytes)) +
                 " per step)";
}

void fill_throughput(compiler::Estimate& e, const compiler::Plan& plan, const MappingInputs& in) {
  auto samples = static_cast<double>(in.system_batch);
  e.num_csx = in.num_csx;
  e.samples_per_second = samples / e.step_seconds;
  e.tokens_per_second = e.samples_per_second * static_cast<double>(plan.tokens_per_sample);
  if (e.cluster_step_seconds <= 0.0) e.cluster_step_seconds = e.step_seconds;
  e.cluster_samples_per_second = samples * static_cast<double>(in.num_csx) / e.cluster_step_seconds;
  e.cluster_tokens_per_second =
      e.cluster_samples_per_second * static_cast<double>(plan.tokens_per_sample);
}

}  // namespace

ModeChoice choose_mode(std::int64_t pipelined_bytes, const WaferProfile& profile,
                       const WaferOptions& options) {
  std::int64_t capacity = profile.usable_sram();
  std::string need = byte_size_of(pipelined_bytes) + " of the " + std::string(profile.name) +
                     "'s " + byte_size_of(capacity) + " SRAM";
  bool fits = pipelined_bytes <= capacity;
  if (options.mode == config::ExecutionMode::pipelined) {
    if (options.num_csx > 1)
      throw MappingError("pipelined execution runs on one system only; num_csx is " +
                         std::to_string(options.num_csx) + " (use weight_streaming)");
    if (!fits) {
      std::int64_t excess = pipelined_bytes - capacity;
      char percent[32];
      std::snprintf(percent, sizeof percent, "%.1f%%",
                    100.0 * static_cast<double>(excess) / static_cast<double>(capacity));
      throw MappingError(
          "pipelined execution does not fit: the weights, optimizer state and "
          "in-flight activations need " +
          need + ", " + byte_size_of(excess) + " (" + percent +
          ") too much. Use weight_streaming or a smaller batch");
    }
    return {compiler::ExecutionMode::pipelined, "requested; it holds " + need};
  }
  if (options.mode == config::ExecutionMode::weight_streaming)
    return {compiler::ExecutionMode::weight_streaming, "requested"};
  if (options.num_csx > 1) {
    return {compiler::ExecutionMode::weight_streaming,
            "auto: " + std::to_string(options.num_csx) + " systems need weight streaming"};
  }
  std::string releases = "params of Model Zoo " + options.releases.describe();
  if (options.releases.last > config::Release::r1_9) {
    return {compiler::ExecutionMode::weight_streaming,
            "auto: " + releases +
                "; from 2.0 the Model Zoo runs weight streaming on a CS-2 "
                "cluster (pipelined " +
                (fits ? "would fit: " : "would need ") + need +
                "; execution_mode: pipelined asks for it)"};
  }
  if (fits)
    return {compiler::ExecutionMode::pipelined,
            "auto: " + releases + " and everything fits on the wafer (" + need + ")"};
  return {compiler::ExecutionMode::weight_streaming,
          "auto: " + releases + ", but pipelined would need " + need};
}

compiler::WaferMapping map_to_wafer(const compiler::Plan& plan, const WaferOptions& options) {
  const WaferProfile& profile = wafer_profile(options.wafer);
  if (options.num_csx < 1 || options.num_csx > profile.max_systems)
    throw MappingError("num_csx " + std::to_string(options.num_csx) + " is outside the 1 to " +
                       std::to_string(profile.max_systems) + " " + std::string(profile.system) +
                       " systems a cluster holds");
  std::int64_t system_batch = options.system_batch > 0 ? options.system_batch : plan.batch_size;
  if (plan.batch_size < 1 || system_batch % plan.batch_size != 0)
    throw MappingError("the traced batch of " + std::to_string(plan.batch_size) +
                       " samples does not divide the " + std::to_string(system_batch) +
                       " samples each system takes per step");
  LayerMap layers = map_layers(plan);
  std::vector<KernelWork> work;
  work.reserve(plan.kernels.size());
  for (const compiler::Kernel& kernel : plan.kernels)
    work.push_back(kernel_work(plan, kernel));
  SramDemand demand = sram_demand(plan, layers);
  MappingInputs in{plan, profile, layers, work, demand, options.num_csx, system_batch};
  compiler::WaferMapping mapping = choose_and_map(in, options);
  mapping.wafer = std::string(profile.key);
  apply_input_bound(mapping.estimate, plan, in);
  fill_throughput(mapping.estimate, plan, in);
  return mapping;
}

}  // namespace csrun::wafer
