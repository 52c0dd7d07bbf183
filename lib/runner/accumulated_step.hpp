#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batch_feed.hpp"
#include "runtime/executable.hpp"

namespace csrun::runner {

// How a training step's global batch divides: evenly across `replicas` (num_csx systems), each
// replica's share in micro-batches of `micro_batch` samples.
struct BatchSplit {
  std::int64_t replicas = 1;
  std::int64_t micro_batch = 0;
  std::int64_t micro_batches_per_replica = 1;

  std::int64_t micro_steps() const { return replicas * micro_batches_per_replica; }
};

// A training step over a global batch as micro-steps, numerically one step on the whole batch:
// each replica runs its micro-batches in order and sums their gradients, the replicas' sums are
// added in replica order (as ranks would all-reduce them), and the update applies the total once.
// The micro-step program (models::trace_split_step's micro_step) computes the gradients; the
// update program holds every variable of the run (parameters, optimizer state, global step, loss
// scale): checkpoints and evaluation read it.
class AccumulatedStep {
 public:
  AccumulatedStep(runtime::Executable micro_step, const std::vector<data::SampleField>& fields,
                  BatchSplit split, std::vector<std::string> normalizer_fields,
                  const runtime::Executable& update);

  // One optimizer step on `batch` (split.micro_steps() * split.micro_batch samples).
  void run(const data::BatchView& batch, runtime::Executable& update);
  // The step's loss: the sum of the micro-steps' shares.
  double loss() const { return loss_; }

 private:
  struct Gradient {
    runtime::Executable::Slot output;  // in the micro-step
    runtime::Executable::Slot input;   // in the update
    std::vector<float> replica_sum;
    std::vector<float> total;
  };
  struct Copied {  // a variable of the update the micro-step reads
    runtime::Executable::Slot from;
    runtime::Executable::Slot to;
  };
  struct Normalizer {
    std::size_t field;
    runtime::Executable::Slot input;
  };

  void take_variables(const runtime::Executable& update);
  void write_normalizers(const data::BatchView& batch);
  void add_gradients(std::int64_t micro_batch);
  void add_replica(std::int64_t replica);

  runtime::Executable micro_;
  BatchInputs inputs_;
  std::vector<data::SampleField> fields_;
  BatchSplit split_;
  std::vector<Gradient> gradients_;
  std::vector<Copied> variables_;
  std::vector<Normalizer> normalizers_;
  runtime::Executable::Slot micro_batch_index_;
  runtime::Executable::Slot loss_slot_;
  double loss_ = 0.0;
};

}  // namespace csrun::runner
