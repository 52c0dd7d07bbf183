#include "host_batch.hpp"

#include <algorithm>
#include <cmath>

#include "compiler/scratch_layout.hpp"
#include "graph/flops.hpp"
#include "runtime/host_kernels.hpp"
#include "storage/host_memory.hpp"

namespace csrun::modes {

namespace {

// The host memory a step of the plan takes (its arena and scratch): what it holds whatever its
// batch (its persistent values and the copies of them its scratch takes), and per sample of its
// batch what grows and shrinks with the samples of a step (the arena's temporaries, the values
// inside its kernels, the f32 work space of its products).
struct StepMemory {
  double total = 0.0;
  double fixed = 0.0;
  double per_sample = 0.0;
  double temporary_per_sample = 0.0;  // of per_sample, what it holds only while it runs

  explicit StepMemory(const compiler::Plan& plan) {
    total = host_bytes(plan);
    fixed = static_cast<double>(plan.memory.persistent_bytes + plan.scratch.snapshot_bytes);
    auto samples = static_cast<double>(std::max<std::int64_t>(plan.batch_size, 1));
    per_sample = (total - fixed) / samples;
    temporary_per_sample = temporary_bytes(plan) / samples;
  }

  static double host_bytes(const compiler::Plan& plan) {
    return static_cast<double>(compiler::step_host_bytes(
        plan, runtime::selected_set_multiplies_bf16(), runtime::host_cores()));
  }
  static double temporary_bytes(const compiler::Plan& plan) {
    return static_cast<double>(compiler::temporary_host_bytes(
        plan, runtime::selected_set_multiplies_bf16(), runtime::host_cores()));
  }
};

// Host memory of a training run as a function of the samples of one (micro-)step:
// - the plan's persistent values (parameters, optimizer state, inputs) stand for each copy of the
//   run's state: the step's own (with a split batch the update's, whose weights the micro-step
//   reads where the update keeps them): a checkpoint is written from the variables, in the loop
//   or in the background (--async_checkpoint), and one read is read into them: neither takes a
//   copy;
// - the plan's temporaries scale with the samples of a (micro-)step;
// - a split batch adds the update's gradient inputs, where each micro-step adds its gradients
//   as it computes them (freeing each as the plan of the whole batch does when its update reads
//   it), and with several replicas the total over the replicas beside them;
// - the global batch's data, a few batches of it in flight;
// - the 16-bit copies of the weights (half-copies), once: no checkpoint stores them, and a split
//   batch's update plan, which reads no weight in 16 bits, has none;
// - the process itself (kProcessBytes).
struct MemoryModel {
  double persistent = 0.0;  // but the 16-bit copies
  double variables = 0.0;   // of the persistent values: the parameters and optimizer state
  double half_copies = 0.0;
  double per_sample = 0.0;
  double temporary_per_sample = 0.0;
  double gradients = 0.0;
  double batch_data = 0.0;
  std::int64_t global_batch = 1;
  std::int64_t replicas = 1;

  MemoryModel(const compiler::Plan& fused, std::int64_t global, std::int64_t replica_count)
      : global_batch(global), replicas(replica_count) {
    StepMemory step(fused);
    persistent = step.fixed;
    per_sample = step.per_sample;
    temporary_per_sample = step.temporary_per_sample;
    for (const graph::Variable& variable : fused.graph.variables()) {
      auto bytes = static_cast<double>(fused.graph.node(variable.node).type.byte_size());
      (variable.role == graph::VariableRole::half_copy ? half_copies : variables) += bytes;
    }
    persistent -= half_copies;
    double traced = static_cast<double>(std::max<std::int64_t>(fused.batch_size, 1));
    gradients = 4.0 * static_cast<double>(
                          graph::count_elements(fused.graph, graph::VariableRole::parameter));
    double inputs = 0.0;
    for (const graph::NamedNode& input : fused.graph.inputs())
      inputs +=
          4.0 * static_cast<double>(graph::element_count(fused.graph.node(input.node).type.shape));
    batch_data = 4.0 * inputs / traced * static_cast<double>(global_batch);
  }

  bool split(std::int64_t micro_batch) const { return micro_batch != global_batch; }

  // The run's `values` of state, and with a split batch the gradient sums beside them.
  double with_gradient_sums(double values, bool split_batch) const {
    return split_batch ? values + gradients * (replicas > 1 ? 2.0 : 1.0) : values;
  }

  double fixed(bool split_batch) const {
    return with_gradient_sums(persistent, split_batch) + half_copies + batch_data + kProcessBytes;
  }

  double bytes(std::int64_t micro_batch) const {
    return fixed(split(micro_batch)) + per_sample * static_cast<double>(micro_batch);
  }
};

// The largest divisor of `number` that is at most `limit` (1 when none is larger).
std::int64_t largest_divisor_up_to(std::int64_t number, std::int64_t limit) {
  std::int64_t best = 1;
  for (std::int64_t d = 1; d * d <= number; ++d) {
    if (number % d != 0) continue;
    if (d <= limit) best = std::max(best, d);
    if (number / d <= limit) best = std::max(best, number / d);
  }
  return best;
}

// The largest divisor of `batch` whose samples fit `budget` beside `fixed` bytes at `per_sample`
// bytes each (1 when none does).
std::int64_t largest_fitting_divisor(std::int64_t batch, double budget, double fixed,
                                     double per_sample) {
  double room = (budget - fixed) / std::max(per_sample, 1.0);
  auto limit = static_cast<std::int64_t>(std::clamp(std::floor(room), 1.0, 9.0e18));
  return largest_divisor_up_to(batch, limit);
}

// Why the micro-batch is smaller than configured, and what it needs.
std::string reason_text(const HostBatch& host) {
  std::string samples = host.micro_batch == 1 ? std::string("1 sample needs")
                                              : std::to_string(host.micro_batch) + " samples need";
  return host.too_large + "; " + samples + " about " + storage::memory_size(host.bytes);
}

}  // namespace

HostBatch plan_host_batch(std::int64_t global_batch, std::int64_t replicas,
                          std::int64_t configured_micro_batch, const compiler::Plan& fused) {
  MemoryModel model(fused, global_batch, replicas);
  auto budget = static_cast<double>(storage::usable_memory_bytes()) * kHostMemoryShare;
  HostBatch host;
  host.micro_batch = configured_micro_batch;
  if (budget > 0.0 && model.bytes(configured_micro_batch) > budget) {
    host.micro_batch = largest_fitting_divisor(configured_micro_batch, budget, model.fixed(true),
                                               model.per_sample);
  }
  host.micro_steps = global_batch / host.micro_batch;
  host.bytes = model.bytes(host.micro_batch);
  host.temporary_bytes = model.temporary_per_sample * static_cast<double>(host.micro_batch);
  host.state_bytes = model.with_gradient_sums(model.variables, model.split(host.micro_batch));
  host.data_bytes = model.batch_data;
  if (host.micro_batch < configured_micro_batch) {
    host.too_large = "a micro-step of " + std::to_string(configured_micro_batch) +
                     " samples needs " + storage::memory_size(model.bytes(configured_micro_batch)) +
                     " of host memory, more than " +
                     std::to_string(static_cast<int>(kHostMemoryShare * 100)) + "% of " +
                     storage::usable_memory_text();
    host.reason = reason_text(host);
  }
  return host;
}

HostBatch plan_host_batch(const config::TrainerSpec& trainer, const TraceSummary& trace,
                          const compiler::Plan& fused) {
  std::int64_t replicas = trainer.backend.cluster.num_csx;
  std::int64_t configured = trace.micro_batch_fixed ? trace.batch_size : trace.system_batch;
  return plan_host_batch(trace.system_batch * replicas, replicas, configured, fused);
}

HostBatch with_split_plans(HostBatch host, const compiler::Plan& micro_step,
                           const compiler::Plan& update, std::int64_t replicas) {
  auto sums = static_cast<double>(
      compiler::variable_bytes(micro_step, compiler::sums_kept_by(micro_step, update)));
  auto weights = static_cast<double>(
      compiler::variable_bytes(micro_step, compiler::variables_read_from(micro_step, update)));
  host.bytes = StepMemory::host_bytes(update) + StepMemory::host_bytes(micro_step) - weights -
               sums + (replicas > 1 ? sums : 0.0) + host.data_bytes + kProcessBytes;
  host.temporary_bytes =
      StepMemory::temporary_bytes(update) + StepMemory::temporary_bytes(micro_step);
  if (!host.reason.empty()) host.reason = reason_text(host);
  return host;
}

HostBatch plan_host_eval_batch(const compiler::Plan& eval, double beside_bytes,
                               const compiler::Plan* training) {
  StepMemory step(eval);
  if (training != nullptr) {
    auto borrowed = static_cast<double>(
        compiler::variable_bytes(eval, compiler::variables_read_from(eval, *training)));
    step.total -= borrowed;
    step.fixed -= borrowed;
  }
  std::int64_t batch = std::max<std::int64_t>(eval.batch_size, 1);
  auto usable = static_cast<double>(storage::usable_memory_bytes());
  double budget = usable * kHostMemoryShare - beside_bytes;
  HostBatch host;
  host.micro_batch = batch;
  host.bytes = step.total;
  if (usable == 0.0 || step.total <= budget) return host;
  host.micro_batch = largest_fitting_divisor(batch, budget, step.fixed, step.per_sample);
  host.micro_steps = batch / host.micro_batch;
  host.bytes = step.fixed + step.per_sample * static_cast<double>(host.micro_batch);
  std::string beside = beside_bytes > 0.0 ? " beside the " + storage::memory_size(beside_bytes) +
                                                " training keeps between its steps"
                                          : "";
  host.reason = "Each eval batch of " + std::to_string(batch) + " samples runs as " +
                std::to_string(host.micro_steps) + " host batches of " +
                std::to_string(host.micro_batch) + " (the whole batch needs " +
                storage::memory_size(step.total) + " of host memory" + beside + ", more than " +
                std::to_string(static_cast<int>(kHostMemoryShare * 100)) + "% of " +
                storage::usable_memory_text() + "); its metrics average over the host batches.";
  return host;
}

void check_fits_host(const HostBatch& host, const compiler::Plan& fused, bool recomputes_layers) {
  if (!storage::exceeds_usable_memory(host.bytes)) return;
  double rest = host.bytes - host.state_bytes - host.data_bytes;
  std::string advice = "lower " + std::string(compiler::sample_size_name(fused)) +
                       ": a larger batch runs as more micro-steps, not larger ones";
  if (!recomputes_layers)
    advice += "; or train with " + std::string(kRecomputeLayersAdvice) +
              " (csrun compile --recompute_layers reports what that needs)";
  if (storage::exceeds_usable_memory(host.state_bytes))
    advice =
        "the parameters and optimizer state alone do not fit, whatever the batch (csrun "
        "compile still plans the run for the wafer)";
  else if (host.data_bytes >= rest)
    advice = "lower the batch size";
  std::string samples =
      host.micro_batch == 1 ? "1 sample" : std::to_string(host.micro_batch) + " samples";
  throw std::runtime_error(
      "the run needs about " + storage::memory_size(host.bytes) +
      " of host memory in micro-steps of " + samples + " (its parameters and optimizer state " +
      storage::memory_size(host.state_bytes) + " with the copies the run keeps, " +
      "the batches' data in flight " + storage::memory_size(host.data_bytes) + ", and " +
      storage::memory_size(rest) +
      " for a micro-step's activations, inputs and static values and csrun itself), " +
      "more than " + storage::usable_memory_text() + ": " + advice);
}

void check_eval_fits_host(const HostBatch& eval, double beside_bytes,
                          const config::TrainerSpec& trainer) {
  if (!storage::exceeds_usable_memory(eval.bytes + beside_bytes)) return;
  std::string samples =
      eval.micro_batch == 1 ? "1 sample" : std::to_string(eval.micro_batch) + " samples";
  throw std::runtime_error(
      "the evaluation inside fit needs about " + storage::memory_size(eval.bytes) +
      " of host memory in host batches of " + samples + ", beside the " +
      storage::memory_size(beside_bytes) + " training keeps between its steps: more than " +
      storage::usable_memory_text() + "; train without evaluating (--set " +
      config::loop_key_path(trainer, "eval_frequency") +
      "=null) and evaluate the checkpoints with csrun eval, or lower the eval data's sequence "
      "length");
}

}  // namespace csrun::modes
