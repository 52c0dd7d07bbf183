#include "compile_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "compiler/host_lowering.hpp"
#include "compiler/scratch_layout.hpp"
#include "host_batch.hpp"
#include "nn/layers.hpp"
#include "report.hpp"
#include "runtime/host_kernels.hpp"
#include "storage/host_memory.hpp"
#include "wafer/byte_size.hpp"
#include "wafer/wafer_profile.hpp"

namespace csrun::modes {

namespace {

using nlohmann::json;

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// 40170240 -> "40.2M"
std::string compact(std::int64_t value) {
  if (value >= 1'000'000'000) return fixed(static_cast<double>(value) / 1e9, 1) + "B";
  if (value >= 1'000'000) return fixed(static_cast<double>(value) / 1e6, 1) + "M";
  if (value >= 10'000) return fixed(static_cast<double>(value) / 1e3, 1) + "K";
  return std::to_string(value);
}

std::string rate(double value) {
  return value >= 100.0 ? grouped(static_cast<std::int64_t>(value + 0.5)) : fixed(value, 2);
}

std::string milliseconds(double seconds) {
  return fixed(seconds * 1e3, seconds < 0.01 ? 4 : 2) + " ms";
}

std::string percent(double fraction) {
  return fixed(100.0 * fraction, 0) + "%";
}

const char* mode_words(compiler::ExecutionMode mode) {
  switch (mode) {
    case compiler::ExecutionMode::none:
      return "none";
    case compiler::ExecutionMode::pipelined:
      return "layer pipelined";
    case compiler::ExecutionMode::weight_streaming:
      return "weight streaming";
  }
  return "?";
}

std::map<std::string, int> kernel_counts(const compiler::Plan& plan) {
  std::map<std::string, int> counts;
  for (const compiler::Kernel& kernel : plan.kernels) {
    if (!kernel.at_load) ++counts[kernel.name];
  }
  return counts;
}

std::string kernels_text(const compiler::Plan& plan) {
  std::string text;
  int at_load = 0;
  std::size_t total = 0;
  for (const compiler::Kernel& kernel : plan.kernels)
    at_load += kernel.at_load ? 1 : 0;
  std::string parts;
  for (const auto& [name, count] : kernel_counts(plan)) {
    parts += (parts.empty() ? "" : ", ") + grouped(count) + " " + name;
    total += static_cast<std::size_t>(count);
  }
  text = grouped(static_cast<std::int64_t>(total)) + " per step (" + parts + ")";
  if (at_load > 0) text += ", " + grouped(at_load) + " at load";
  return text;
}

std::string passes_text(const PlannedTrainer& planned) {
  std::string text;
  for (const compiler::PassStatistics& pass : planned.passes)
    text += (text.empty() ? "" : ", ") + pass.name + " " +
            grouped(static_cast<std::int64_t>(pass.changes));
  return text + " (changes)";
}

std::string wafer_text(const wafer::WaferProfile& profile) {
  return std::string(profile.name) + " (" + profile.system.data() +
         "): " + std::to_string(profile.width) + " x " + std::to_string(profile.height) + " PEs, " +
         wafer::byte_size(static_cast<double>(profile.usable_sram())) + " usable SRAM, " +
         fixed(profile.peak_flops() / 1e15, 2) + " PFLOP/s 16-bit peak";
}

std::string alternative_text(const PlannedTrainer& planned) {
  if (planned.alternative) {
    const compiler::Estimate& e = planned.alternative->estimate;
    return std::string(mode_words(planned.alternative->mode)) + " would give " +
           rate(e.samples_per_second) + " samples/s (" + milliseconds(e.step_seconds) +
           " per step)";
  }
  return planned.alternative_problem;
}

void print_layers(const compiler::WaferMapping& mapping, std::ostream& out) {
  bool pipelined = mapping.mode == compiler::ExecutionMode::pipelined;
  double longest = 0.0;
  for (const compiler::LayerTiming& layer : mapping.layers)
    longest = std::max(longest, layer.seconds);
  bool micro = longest < 1e-3;
  double scale = micro ? 1e6 : 1e3;
  std::string unit = micro ? "us" : "ms";
  char line[256];
  std::snprintf(line, sizeof line, "  %-44s %8s %7s %9s %9s %9s %9s %9s %9s  %s\n", "layer",
                "params", "kernels", "PEs", ("fwd " + unit).c_str(), ("bwd " + unit).c_str(),
                ("upd " + unit).c_str(), ("wgt " + unit).c_str(), ("total " + unit).c_str(),
                "bound");
  out << line;
  for (const compiler::LayerTiming& layer : mapping.layers) {
    if (layer.kernels == 0 && layer.parameters == 0) continue;
    std::snprintf(line, sizeof line, "  %-44.44s %8s %7d %9s %9.3f %9.3f %9.3f %9.3f %9.3f  %s\n",
                  layer.name.c_str(), compact(layer.parameters).c_str(), layer.kernels,
                  grouped(layer.pes).c_str(), layer.forward_seconds * scale,
                  layer.backward_seconds * scale, layer.update_seconds * scale,
                  (pipelined ? 0.0 : layer.weight_seconds) * scale, layer.seconds * scale,
                  layer.bound.c_str());
    out << line;
  }
  out << (pipelined
              ? "  (pipelined: each column is the layer's slowest kernel, per step)\n"
              : "  (weight streaming: per micro-batch; a pass takes the longer of compute and "
                "its weights in)\n");
}

// One system's samples per optimizer step, and the whole cluster's.
struct StepBatch {
  std::int64_t system = 0;
  std::int64_t global = 0;
  bool micro_batch_given = false;
};

StepBatch step_batch(const config::TrainerSpec& trainer, const TraceSummary& trace) {
  std::int64_t system = trace.samples_per_system();
  return {system, system * trainer.backend.cluster.num_csx, trace.micro_batch_fixed};
}

void print_mapping(const PlannedTrainer& planned, const StepBatch& batch, std::ostream& out,
                   const std::function<void(const char*, const std::string&)>& line) {
  const compiler::WaferMapping& mapping = planned.plan.mapping;
  const compiler::Estimate& e = mapping.estimate;
  const wafer::WaferProfile& profile = wafer::wafer_profile(mapping.wafer);
  line("wafer", wafer_text(profile));
  line("mode", std::string(mode_words(mapping.mode)) + ": " + mapping.mode_reason);
  if (mapping.mode == compiler::ExecutionMode::weight_streaming) {
    line("micro-batch", grouped(e.micro_batch_size) + " samples x " + grouped(e.micro_batches) +
                            " per step" +
                            (batch.micro_batch_given ? " (micro_batch_size)"
                                                     : " (auto: the fastest the estimate finds)"));
  }
  line("SRAM",
       wafer::byte_size(static_cast<double>(e.sram_bytes)) + " of " +
           wafer::byte_size(static_cast<double>(e.sram_capacity)) + " (" +
           percent(static_cast<double>(e.sram_bytes) / static_cast<double>(e.sram_capacity)) + ")");
  line("PEs", mapping.mode == compiler::ExecutionMode::pipelined
                  ? percent(e.pe_utilization) + " of the wafer's PEs hold a kernel"
                  : "the wafer computes " + percent(e.pe_utilization) + " of the step");
  line("step", milliseconds(e.step_seconds) + " per step");
  std::string per_system = rate(e.samples_per_second) + " samples/s";
  if (e.tokens_per_second > 0.0) per_system += ", " + rate(e.tokens_per_second) + " tokens/s";
  line("throughput", per_system + " per " + std::string(profile.system));
  std::string cluster = rate(e.cluster_samples_per_second) + " samples/s";
  if (e.cluster_tokens_per_second > 0.0)
    cluster += ", " + rate(e.cluster_tokens_per_second) + " tokens/s";
  line("cluster",
       grouped(e.num_csx) + " x " + std::string(profile.system) + ", " + grouped(batch.global) +
           " samples per step: " + cluster +
           (e.num_csx > 1 ? " (SwarmX adds " +
                                milliseconds(e.cluster_step_seconds - e.step_seconds) + " per step)"
                          : ""));
  line("bottleneck", e.bottleneck);
  line("other mode", alternative_text(planned));
  out << "\n";
  print_layers(mapping, out);
}

json pass_json(const compiler::PassStatistics& pass) {
  return {{"name", pass.name},
          {"changes", pass.changes},
          {"nodes_after", pass.nodes_after},
          {"fusions_after", pass.fusions_after},
          {"seconds", pass.seconds}};
}

json estimate_json(const compiler::Estimate& e) {
  return {{"step_seconds", e.step_seconds},
          {"samples_per_second", e.samples_per_second},
          {"tokens_per_second", e.tokens_per_second},
          {"num_csx", e.num_csx},
          {"cluster_step_seconds", e.cluster_step_seconds},
          {"cluster_samples_per_second", e.cluster_samples_per_second},
          {"cluster_tokens_per_second", e.cluster_tokens_per_second},
          {"pe_utilization", e.pe_utilization},
          {"sram_bytes", e.sram_bytes},
          {"sram_capacity_bytes", e.sram_capacity},
          {"spilled_bytes", e.spilled_bytes},
          {"micro_batch_size", e.micro_batch_size},
          {"micro_batches", e.micro_batches},
          {"bottleneck", e.bottleneck}};
}

json mapping_json(const compiler::WaferMapping& mapping) {
  json layers = json::array();
  for (const compiler::LayerTiming& layer : mapping.layers) {
    layers.push_back({{"name", layer.name},
                      {"parameters", layer.parameters},
                      {"kernels", layer.kernels},
                      {"pes", layer.pes},
                      {"forward_seconds", layer.forward_seconds},
                      {"backward_seconds", layer.backward_seconds},
                      {"update_seconds", layer.update_seconds},
                      {"weight_seconds", layer.weight_seconds},
                      {"gradient_seconds", layer.gradient_seconds},
                      {"seconds", layer.seconds},
                      {"bound", layer.bound}});
  }
  return {{"wafer", mapping.wafer},
          {"mode", compiler::execution_mode_name(mapping.mode)},
          {"mode_reason", mapping.mode_reason},
          {"estimate", estimate_json(mapping.estimate)},
          {"layers", layers}};
}

// The arena and scratch are what `csrun train` allocates on this machine: say so when it cannot.
std::string host_memory_note(std::int64_t step_bytes) {
  if (!storage::exceeds_usable_memory(static_cast<double>(step_bytes))) return {};
  return "; more than " + storage::usable_memory_text() + ": csrun train would refuse it here";
}

// The host memory a step takes beside its arena on this machine's kernel set (`hardware`: it
// multiplies bfloat16 in hardware) and cores, and what for.
std::string scratch_text(const compiler::ScratchLayout& scratch, bool hardware, int cores) {
  auto size = [](std::int64_t bytes) { return wafer::byte_size(static_cast<double>(bytes)); };
  std::string work = size(scratch.work(hardware, cores)) + " on " + std::to_string(cores) +
                     (cores == 1 ? " core" : " cores");
  if (hardware && scratch.work(true, cores) != scratch.work(false, cores)) {
    work += " with bfloat16 multiplied in hardware here; " + size(scratch.work(false, cores)) +
            " where a CPU widens them";
  }
  if (scratch.work(hardware, cores) > 0) {
    work += " (operands widened whole up to " + size(scratch.widening(hardware)) +
            ", the pieces a core works on up to " + size(scratch.per_core_work(hardware)) + ")";
  }
  return size(scratch.bytes(hardware, cores)) + " (values inside kernels " +
         size(scratch.kernel_value_bytes) + ", snapshots " + size(scratch.snapshot_bytes) +
         ", f32 work space of 16-bit products " + work + ")";
}

// "16 attentions traced a block of queries at a time, up to 16 blocks of 512 queries (...)".
std::string attention_blocks_text(const nn::AttentionBlocks& blocks) {
  return grouped(blocks.attentions) + (blocks.attentions == 1 ? " attention" : " attentions") +
         " traced a block of queries at a time, up to " + grouped(blocks.blocks) + " blocks of " +
         grouped(blocks.queries) + " queries (whole, their f32 scores would take more than " +
         std::to_string(nn::kMaxScoreBlockBytes >> 20) + " MiB a sample)";
}

// How csrun train runs the step on this machine.
std::string host_split_text(const HostBatch& host) {
  if (host.micro_steps == 1) return "the whole batch in one step";
  return grouped(host.micro_steps) + " micro-steps of " + grouped(host.micro_batch) +
         (host.micro_batch == 1 ? " sample per step" : " samples per step");
}

// `host` as csrun train plans it, for a step that keeps its layers' activations or not
// (`recomputes_layers`).
std::string host_batch_text(const HostBatch& host, bool recomputes_layers) {
  std::string text = "csrun train runs " + host_split_text(host) + ", about " +
                     storage::memory_size(host.bytes) + " of host memory";
  if (storage::exceeds_usable_memory(host.bytes)) {
    text += "; more than " + storage::usable_memory_text() + ": csrun train would refuse it here";
    if (recomputes_layers) return text;
    return text + " (" + kRecomputeLayersAdvice + ", takes less)";
  }
  if (!host.reason.empty()) return text + " (" + host.reason + ")";
  return text;
}

// The values the step's temporaries peak with: the largest live at the kernel where the most
// are, which is where a run that needs too much memory has to give.
constexpr std::size_t kPeakValuesShown = 3;

std::string value_text(const compiler::Plan& plan, const compiler::Buffer& buffer) {
  const graph::Node& node = plan.graph.node(buffer.value);
  return "%" + std::to_string(buffer.value) + " " + graph::op_name(node.op) + " " +
         node.type.to_string() + " " + wafer::byte_size(static_cast<double>(buffer.bytes));
}

std::string live_peak_text(const compiler::Plan& plan, const compiler::LivePeak& peak) {
  const compiler::Kernel& kernel = plan.kernels.at(static_cast<std::size_t>(peak.kernel));
  const graph::Node& root = plan.graph.node(kernel.nodes.back());
  std::string text = "kernel " + std::to_string(peak.kernel) + " (" + kernel.name + ", " +
                     plan.graph.scope_name(root.scope) + ", " + graph::phase_name(root.phase) +
                     "): " + wafer::byte_size(static_cast<double>(peak.bytes)) +
                     " of temporaries live, the largest ";
  std::size_t shown = std::min(kPeakValuesShown, peak.buffers.size());
  for (std::size_t i = 0; i < shown; ++i) {
    auto index = static_cast<std::size_t>(peak.buffers[i]);
    text += (i ? ", " : "") + value_text(plan, plan.memory.buffers[index]);
  }
  return text;
}

json live_peak_json(const compiler::Plan& plan, const compiler::LivePeak& peak) {
  if (peak.kernel < 0) return nullptr;
  json values = json::array();
  for (std::int32_t index : peak.buffers) {
    const compiler::Buffer& buffer = plan.memory.buffers[static_cast<std::size_t>(index)];
    const graph::Node& node = plan.graph.node(buffer.value);
    values.push_back({{"node", buffer.value},
                      {"op", graph::op_name(node.op)},
                      {"type", node.type.to_string()},
                      {"scope", plan.graph.scope_name(node.scope)},
                      {"bytes", buffer.bytes}});
  }
  return {{"kernel", peak.kernel}, {"bytes", peak.bytes}, {"values", values}};
}

}  // namespace

void print_compile_report(const config::TrainerSpec& trainer, const TraceSummary& trace,
                          const PlannedTrainer& planned, const std::optional<HostBatch>& host,
                          std::size_t trainers, std::ostream& out) {
  const compiler::Plan& plan = planned.plan;
  StepBatch batch = step_batch(trainer, trace);
  out << "Trainer " << trainer.index + 1 << " of " << trainers << ": "
      << (trace.training ? "training" : "eval") << " step of ";
  if (batch.global == batch.system) {
    out << grouped(batch.system) << " samples per system\n";
  } else {
    out << grouped(batch.global) << " samples: " << grouped(batch.system) << " per system on "
        << trainer.backend.cluster.num_csx << " systems\n";
  }
  auto line = [&](const char* label, const std::string& value) {
    out << "  " << label << std::string(12 - std::string(label).size(), ' ') << value << "\n";
  };
  line("plan", planned.directory.string() +
                   (planned.from_cache ? " (reused from the compile cache)"
                                       : " (compiled in " +
                                             fixed(planned.compile_seconds,
                                                   planned.compile_seconds < 0.1 ? 3 : 2) +
                                             " s)"));
  if (!planned.passes.empty()) line("passes", passes_text(planned));
  line("graph", grouped(static_cast<std::int64_t>(trace.ops)) + " traced nodes -> " +
                    grouped(static_cast<std::int64_t>(plan.graph.size())) + " after the passes");
  line("kernels", kernels_text(plan));
  if (trace.attention_blocks.attentions > 0)
    line("attention", attention_blocks_text(trace.attention_blocks));
  bool hardware_bf16 = runtime::selected_set_multiplies_bf16();
  int cores = runtime::host_cores();
  line("memory",
       "arena " + wafer::byte_size(static_cast<double>(plan.memory.peak_bytes)) + " (" +
           wafer::byte_size(static_cast<double>(plan.memory.persistent_bytes)) +
           " persistent; temporaries reuse space: " +
           wafer::byte_size(static_cast<double>(plan.memory.unshared_bytes)) +
           " without reuse), scratch " + scratch_text(plan.scratch, hardware_bf16, cores) +
           (trace.training
                ? std::string()
                : host_memory_note(compiler::step_host_bytes(plan, hardware_bf16, cores))));
  compiler::LivePeak peak = compiler::live_peak(plan.memory, plan.kernels.size());
  if (peak.kernel >= 0) line("peak", live_peak_text(plan, peak));
  if (host) line("host", host_batch_text(*host, planned.recomputes_layers));
  if (plan.mapping.mode == compiler::ExecutionMode::none) {
    bool gpu = trainer.backend.device == config::Device::gpu;
    line("wafer", gpu ? std::string("none: the plan is the host kernels'; a GPU run needs a csrun "
                                    "built with CUDA, which this one is not (train and eval "
                                    "refuse GPU)")
                      : std::string("none: on ") + config::device_name(trainer.backend.device) +
                            " the plan runs on the host kernels");
    return;
  }
  print_mapping(planned, batch, out, line);
}

json compile_report_json(const config::TrainerSpec& trainer, const TraceSummary& trace,
                         const PlannedTrainer& planned) {
  const compiler::Plan& plan = planned.plan;
  StepBatch batch = step_batch(trainer, trace);
  json passes = json::array();
  for (const compiler::PassStatistics& pass : planned.passes)
    passes.push_back(pass_json(pass));
  json counts = json::object();
  for (const auto& [name, count] : kernel_counts(plan))
    counts[name] = count;
  json report = {
      {"trainer", trainer.index},
      {"device", config::device_name(trainer.backend.device)},
      {"step", compiler::step_kind_name(plan.step)},
      {"batch_size_per_system", batch.system},
      {"global_batch_size", batch.global},
      {"plan",
       {{"key", planned.key},
        {"directory", planned.directory.string()},
        {"from_cache", planned.from_cache},
        {"compile_seconds", planned.compile_seconds},
        {"fingerprint", plan.fingerprint},
        {"csrun_version", plan.csrun_version},
        {"recompute_layers", planned.recomputes_layers}}},
      {"passes", passes},
      {"graph",
       {{"traced_nodes", trace.ops},
        {"nodes", plan.graph.size()},
        {"attention_blocks",
         {{"attentions", trace.attention_blocks.attentions},
          {"blocks", trace.attention_blocks.blocks},
          {"queries", trace.attention_blocks.queries}}}}},
      {"kernel_counts", counts},
      {"memory",
       {{"arena_bytes", plan.memory.peak_bytes},
        {"persistent_bytes", plan.memory.persistent_bytes},
        {"unshared_bytes", plan.memory.unshared_bytes},
        {"scratch_bytes",
         plan.scratch.bytes(runtime::selected_set_multiplies_bf16(), runtime::host_cores())},
        {"buffers", plan.memory.buffers.size()},
        {"live_peak",
         live_peak_json(plan, compiler::live_peak(plan.memory, plan.kernels.size()))}}},
      {"mapping", plan.mapping.mode == compiler::ExecutionMode::none ? json(nullptr)
                                                                     : mapping_json(plan.mapping)}};
  if (planned.alternative) {
    report["alternative"] = mapping_json(*planned.alternative);
  } else {
    report["alternative"] = planned.alternative_problem.empty()
                                ? json(nullptr)
                                : json({{"problem", planned.alternative_problem}});
  }
  return report;
}

// What the simulator calls for each kernel (compiler::host_step_call of its host steps), in one
// pass over the host steps.
std::vector<std::string> host_calls(const compiler::Plan& plan) {
  std::vector<std::string> calls(plan.kernels.size());
  for (const compiler::HostStep& step : plan.host_steps) {
    std::string& call = calls.at(static_cast<std::size_t>(step.kernel));
    if (!call.empty()) call += ' ';
    call += compiler::host_step_call(step);
  }
  return calls;
}

std::string kernel_table(const compiler::Plan& plan) {
  std::ostringstream text;
  text << "kernel\tname\tnodes\tphase\tscope\troot\tat_load\tx\ty\twidth\theight\tseconds\tbound\t"
          "host_steps\tscratch_bytes\n";
  std::vector<std::string> calls = host_calls(plan);
  std::vector<std::int64_t> scratch = compiler::kernel_scratch_bytes(plan);
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const compiler::Kernel& kernel = plan.kernels[k];
    const graph::Node& root = plan.graph.node(kernel.nodes.back());
    text << k << '\t' << kernel.name << '\t' << kernel.nodes.size() << '\t'
         << graph::phase_name(root.phase) << '\t' << plan.graph.scope_name(root.scope) << '\t'
         << compiler::node_signature(plan.graph, kernel.nodes.back()) << '\t'
         << (kernel.at_load ? "yes" : "no");
    if (k < plan.mapping.kernels.size()) {
      const compiler::KernelTiming& timing = plan.mapping.kernels[k];
      text << '\t' << timing.region.x << '\t' << timing.region.y << '\t' << timing.region.width
           << '\t' << timing.region.height << '\t' << timing.seconds << '\t' << timing.bound;
    } else {
      text << "\t\t\t\t\t\t";
    }
    text << '\t' << calls[k] << '\t' << scratch[k] << '\n';
  }
  return text.str();
}

}  // namespace csrun::modes
