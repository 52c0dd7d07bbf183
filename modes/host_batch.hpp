#pragma once

#include <cstdint>
#include <string>

#include "compiler/plan.hpp"
#include "config/run_spec.hpp"
#include "trace_summary.hpp"

namespace csrun::modes {

// How the simulator runs a training step's global batch on this machine: in host micro-steps of
// `micro_batch` samples (numerically the same accumulation as any other split,
// docs/training.md), the configured split (num_csx replicas, micro_batch_size or
// grad_accum_steps) unless a micro-step of that size would not fit this machine's memory.
struct HostBatch {
  std::int64_t micro_batch = 0;
  std::int64_t micro_steps = 1;  // per optimizer step, over every replica
  double bytes = 0.0;            // the host memory the run needs at that size (estimated), of which
  double state_bytes = 0.0;      // the parameters and optimizer state, with their copies
  double data_bytes = 0.0;       // and the batches' data in flight
  // Of `bytes`, what the steps hold only while they run (runtime::Executable::release_temporaries
  // gives it back while the run evaluates).
  double temporary_bytes = 0.0;
  std::string reason;     // why smaller than configured; empty when it is not
  std::string too_large;  // of that reason: what the configured micro-batch would need
};

// The share of this machine's memory a run may plan to use (the rest is the system's, the data
// workers' and the allocator's).
inline constexpr double kHostMemoryShare = 0.8;

// What a training run holds beside its plans' memory and its state: csrun's code and libraries,
// its threads' stacks and the GEMM libraries' packing buffers (a small fc_mnist run peaks at
// 37-51 MB; OpenBLAS keeps a 32 MB buffer per thread for large products).
inline constexpr double kProcessBytes = 128.0 * (1 << 20);

// `fused` is the trainer's planned step, traced at `fused.batch_size` samples per system;
// `configured_micro_batch` divides global_batch / replicas.
HostBatch plan_host_batch(std::int64_t global_batch, std::int64_t replicas,
                          std::int64_t configured_micro_batch, const compiler::Plan& fused);

// The same for a trainer's training step as traced (`trace`) and planned (`fused`): the
// configured micro-batch is the dataloader's micro_batch_size when it is a number, else a
// system's share of the batch over the loop's grad_accum_steps.
HostBatch plan_host_batch(const config::TrainerSpec& trainer, const TraceSummary& trace,
                          const compiler::Plan& fused);

// `host` (from plan_host_batch, for a split batch) with the host memory of the two plans that
// run it instead of the estimate made from the fused step: the micro-step (without the weights
// and gradient sums it keeps where the update does) beside the update, with several replicas
// the total of their sums, the batches' data and the process.
HostBatch with_split_plans(HostBatch host, const compiler::Plan& micro_step,
                           const compiler::Plan& update, std::int64_t replicas);

// How the eval step runs one system's eval batch (`eval` is its plan at that batch) on this
// machine, beside `beside_bytes` that training holds in the same process, its step reading the
// variables it can where the training step (`training`, if any) keeps them: the whole batch at
// once, or in host batches of the largest divisor of it that fits (its metrics then average
// over them). Memory that cannot fit even one sample is left to the executable's own refusal.
HostBatch plan_host_eval_batch(const compiler::Plan& eval, double beside_bytes,
                               const compiler::Plan* training = nullptr);

// Refuses (std::runtime_error, with the figures and what to lower) a run of `fused` (the plan
// `host` was planned for) that needs more than this machine's memory even in micro-steps of one
// sample. Where activations are what does not fit and the step keeps them (`recomputes_layers`
// false), the message suggests --recompute_layers too.
void check_fits_host(const HostBatch& host, const compiler::Plan& fused, bool recomputes_layers);

// Refuses (std::runtime_error, with the figures and what to do) an evaluation inside fit whose
// host batches (`eval`, from plan_host_eval_batch) do not fit this machine's memory beside the
// `beside_bytes` training keeps between its steps: even one sample, since a larger host batch
// is chosen only where it fits. The advice names `trainer`'s eval_frequency in its file's layout.
void check_eval_fits_host(const HostBatch& eval, double beside_bytes,
                          const config::TrainerSpec& trainer);

// --recompute_layers and what it does, for the messages that suggest it.
inline constexpr const char* kRecomputeLayersAdvice =
    "--recompute_layers, which runs each layer's forward pass again in the backward pass instead "
    "of keeping its activations";

}  // namespace csrun::modes
