#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "nn/metric.hpp"
#include "nn/training_step.hpp"
#include "registry.hpp"

namespace csrun::models {

enum class StepKind { train, eval };

struct TraceOptions {
  StepKind kind = StepKind::train;
  std::uint64_t seed = 0;
  nn::TrainingOptions training;  // for training steps
  // The queries a block of attention takes (nn::StepContext::attention_query_block): 0, as the
  // scores' size decides.
  std::int64_t attention_query_block = 0;
};

// A traced step and what it amounts to.
struct TracedStep {
  graph::Graph graph;
  BatchLayout batch;
  std::int64_t parameter_count = 0;      // elements of every parameter
  double flops = 0.0;                    // of one step
  std::int64_t tokens_per_sample = 0;    // sequence models: the length of input_ids; else 0
  nn::AttentionBlocks attention_blocks;  // attention traced a block of queries at a time
  // An eval step's metrics (graph outputs besides the loss), as the model averages them.
  std::map<std::string, nn::MetricAverage> metric_averages;
};

// Whether csrun can build the model's network (others are checked and sized only).
bool can_trace(const CheckedModel& model);

// The batch the model reads at `batch_size` samples per step; an integer field whose layout sets
// no value limit ranges over the model's id_limit().
BatchLayout batch_layout(const CheckedModel& model, std::int64_t batch_size);

// Traces the model's training step (forward, loss, backward, optimizer update; one graph) or
// eval step (forward, loss, metrics) over a batch of `batch_size` samples. Shape-only: no weight
// is allocated. Throws UnsupportedModel for a key the builder does not implement and
// std::invalid_argument for other settings csrun does not support yet.
TracedStep trace_step(const CheckedModel& model, std::int64_t batch_size,
                      const TraceOptions& options);

// A training step whose global batch runs as micro-steps (num_csx replicas, micro-batches,
// grad_accum_steps): the micro-step traces forward and backward over `micro_batch` samples with
// the loss averaged over the global batch (its outputs: gradient/<parameter> and loss), the update
// applies the summed gradients (inputs gradient/<parameter>; the same variables as the
// fused step). A micro-step also reads the i32 input micro_batch (its index in the global step)
// and, for each of normalizer_fields, the f32 input loss_normalizer/<field>: that field's sum
// over the global batch.
struct TracedSplitStep {
  TracedStep micro_step;
  graph::Graph update;
  std::vector<std::string> normalizer_fields;
};

// Throws as trace_step does, and std::invalid_argument when micro_batch does not divide
// global_batch.
TracedSplitStep trace_split_step(const CheckedModel& model, std::int64_t micro_batch,
                                 std::int64_t global_batch, const TraceOptions& options);

}  // namespace csrun::models
