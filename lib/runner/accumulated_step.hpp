#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "batch_feed.hpp"
#include "replicas/replica_group.hpp"
#include "runtime/executable.hpp"

namespace csrun::runner {

// How a training step's global batch divides: evenly across `replicas` (num_csx systems), each
// replica's share in micro-batches of `micro_batch` samples. This process runs
// `local_replicas` of them from `first_replica` on: all of them, or one per MPI rank.
struct BatchSplit {
  std::int64_t replicas = 1;
  std::int64_t micro_batch = 0;
  std::int64_t micro_batches_per_replica = 1;
  std::int64_t first_replica = 0;
  std::int64_t local_replicas = 1;
  // Gradient accumulation (CPU and GPU): the samples of one written batch, whose micro-steps
  // normalize their loss over that batch alone, divided by the batches per step, as the Model
  // Zoo does. 0: over the whole global batch (replicas and micro_batch_size: one step's numbers).
  std::int64_t accumulated_batch = 0;

  std::int64_t micro_steps() const { return replicas * micro_batches_per_replica; }
};

// A training step over a global batch as micro-steps, numerically one step on the whole batch:
// each replica runs its micro-batches in order and sums their gradients, the replicas' sums are
// added in replica order (in this process, or along the ranks' chain: the same bits), and the
// update applies the total once, on every rank. The micro-step program
// (models::trace_split_step's micro_step) computes the gradients; the update program holds every
// variable of the run (parameters, optimizer state, global step, loss scale): checkpoints and
// evaluation read it.
class AccumulatedStep {
 public:
  // `micro_step` adds its gradients where `update` reads them (runtime::Executable's `owner`);
  // `group` (null: this process alone) must outlive the step.
  AccumulatedStep(runtime::Executable micro_step, const std::vector<data::SampleField>& fields,
                  BatchSplit split, std::vector<std::string> normalizer_fields,
                  runtime::Executable& update, const replicas::ReplicaGroup* group);

  // One optimizer step on the global batch (split.micro_steps() * split.micro_batch samples), of
  // which `shares` holds this process's replicas' shares, in replica order (one share: the
  // replica's micro-batches, or with a single replica the whole batch). The update calls
  // `before_state_changes` before it changes its f32 variables (runtime::Executable::run).
  void run(std::span<const data::BatchView* const> shares, runtime::Executable& update,
           const std::function<void()>& before_state_changes = {});
  // The step's loss: the sum of the micro-steps' shares, in micro-step order.
  double loss() const { return loss_; }
  // The micro-step's program, to profile.
  runtime::Executable& micro_step() { return micro_; }
  const runtime::Executable& micro_step() const { return micro_; }
  // Wall seconds spent combining the ranks' sums so far (waiting included); 0 in one process.
  double combining_seconds() const { return combining_seconds_; }

 private:
  struct Gradient {  // what the micro-steps sum: a gradient, or a statistic's batch sum
    runtime::Executable::Slot sum;    // in the micro-step: the update's input, borrowed
    runtime::Executable::Slot input;  // in the update
    std::size_t offset = 0;           // in total_
    std::size_t size = 0;
  };
  struct Copied {  // a variable of the update the micro-step reads
    runtime::Executable::Slot from;
    runtime::Executable::Slot to;
  };
  struct Normalizer {
    std::size_t field;
    bool integer;
    runtime::Executable::Slot input;
  };

  void take_variables(const runtime::Executable& update);
  void write_normalizers(std::span<const data::BatchView* const> shares);
  void write_accumulated_normalizers(const data::BatchView& share, std::int64_t first);
  void write_normalizer_inputs(double scale);
  void start_sums(runtime::Executable& update);
  void run_replica(const data::BatchView& share, std::int64_t replica, runtime::Executable& update);
  void add_to_total(bool first, const runtime::Executable& update);
  void combine_ranks(const runtime::Executable& update);

  runtime::Executable micro_;
  BatchInputs inputs_;
  BatchSplit split_;
  const replicas::ReplicaGroup* group_;
  std::vector<Gradient> gradients_;
  std::vector<Copied> variables_;
  std::vector<Normalizer> normalizers_;
  runtime::Executable::Slot micro_batch_index_;
  runtime::Executable::Slot loss_slot_;
  // With several replicas, the sum of every gradient over the replicas so far, one after another
  // (under MPI: over the ranks before this one and this one, chained).
  std::vector<float> total_;
  std::vector<double> losses_;  // this process's micro-steps'
  std::vector<double> normalizer_sums_;
  double loss_ = 0.0;
  double combining_seconds_ = 0.0;
};

}  // namespace csrun::runner
