#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.hpp"

namespace csrun::nn {

// Per-channel running moments that the forward pass keeps (BatchNorm's running_mean and
// running_var): a training step moves them toward the mean and the unbiased variance of its whole
// global batch, by `momentum`, once per optimizer step. The batch's moments come as sums that add
// up over micro-batches and replicas.
struct RunningMoments {
  graph::Tensor mean;            // the running mean [C]
  graph::Tensor variance;        // the running variance [C]
  graph::Tensor sum;             // the traced batch's sum of the values per channel [C]
  graph::Tensor sum_of_squares;  // ... of their squares
  double count = 0.0;            // values per channel in the whole global batch
  double momentum = 0.1;
};

// Attention traced a block of queries at a time (attention in layers.hpp): how many attentions
// were, the most blocks one took and the most queries a block took.
struct AttentionBlocks {
  std::int64_t attentions = 0;
  std::int64_t blocks = 0;
  std::int64_t queries = 0;
};

// What a traced step knows about itself: whether it trains (dropout is active), the global step
// tensor (dropout masks depend on it), the run's seed, and every parameter created so far, in
// creation order (the order of PyTorch's module.parameters(), which numbers optimizer state).
class StepContext {
 public:
  StepContext(graph::Graph& graph, bool training, std::uint64_t seed);

  graph::Graph& graph() const { return *graph_; }
  bool training() const { return training_; }
  std::uint64_t seed() const { return seed_; }
  const graph::Tensor& global_step() const { return global_step_; }
  const std::vector<graph::Tensor>& parameters() const { return parameters_; }

  void add_parameter(const graph::Tensor& parameter) { parameters_.push_back(parameter); }
  // Records a module of one of PyTorch's normalization classes (LayerNorm, BatchNorm, GroupNorm,
  // InstanceNorm; not the Model Zoo's own RMSNorm), by its name.
  void add_normalization_module(std::string name) { normalization_modules_.push_back(name); }
  const std::vector<std::string>& normalization_modules() const { return normalization_modules_; }
  // Whether the Model Zoo's optimizers apply weight decay to the parameter of this name: not
  // where the name contains "bias", nor where it contains the name of a normalization module
  // (their configure_param_groups matches by substring, as here).
  bool takes_weight_decay(std::string_view parameter) const;
  // A distinct, deterministic salt for each dropout site of the trace.
  std::uint64_t next_dropout_salt() { return ++dropout_sites_; }
  // What dropout masks count: the global step, or in a micro-step the micro-batch it runs.
  const graph::Tensor& dropout_counter() const { return dropout_counter_; }
  // The queries a block of attention takes (attention in layers.hpp): 0, as many as
  // query_block_rows allows; else at most this many.
  std::int64_t attention_query_block() const { return attention_query_block_; }
  void set_attention_query_block(std::int64_t queries) { attention_query_block_ = queries; }
  // Records an attention traced in `blocks` blocks of at most `queries` queries.
  void note_attention_blocks(std::int64_t blocks, std::int64_t queries) {
    ++attention_blocks_.attentions;
    attention_blocks_.blocks = std::max(attention_blocks_.blocks, blocks);
    attention_blocks_.queries = std::max(attention_blocks_.queries, queries);
  }
  const AttentionBlocks& attention_blocks() const { return attention_blocks_; }

  // The step computes one share (a micro-batch of a replica) of a global batch of
  // `global_batch` samples that `shares` such steps cover: its loss averages over the global
  // batch (the shares' gradients then add up to the whole batch's), and its dropout masks count
  // the share, read from the i32 input `micro_batch` (global_step * shares + its index).
  void compute_share_of(std::int64_t global_batch, std::int64_t shares);
  // The loss of the batch from the sum of its samples' losses: over the samples of the
  // (global) batch; `samples` is the traced batch's count.
  graph::Tensor average_over_samples(const graph::Tensor& total, std::int64_t samples) const;
  // The loss from the sum of its weighted terms, over the sum of the weights (at least 1): the
  // weights are the batch field `field` (as f32). In a share the sum is the global batch's, the
  // f32 input loss_normalizer/<field> that the runner computes from the whole batch.
  graph::Tensor average_over_field(const graph::Tensor& total, const graph::Tensor& weights,
                                   const std::string& field);
  // The fields average_over_field read from the whole batch, as inputs of a share.
  const std::vector<std::string>& normalizer_fields() const { return normalizer_fields_; }

  // Samples in the global batch of which the traced step computes `traced` (all of them unless
  // it computes a share).
  std::int64_t global_samples(std::int64_t traced) const { return global_batch_.value_or(traced); }
  // The running moments the forward pass keeps, updated with the training step's update.
  void add_running_moments(RunningMoments moments) { running_moments_.push_back(moments); }
  const std::vector<RunningMoments>& running_moments() const { return running_moments_; }

 private:
  graph::Graph* graph_;
  bool training_;
  std::uint64_t seed_;
  graph::Tensor global_step_;
  graph::Tensor dropout_counter_;
  std::optional<std::int64_t> global_batch_;
  std::vector<std::string> normalizer_fields_;
  std::vector<graph::Tensor> parameters_;
  std::vector<std::string> normalization_modules_;
  std::vector<RunningMoments> running_moments_;
  std::uint64_t dropout_sites_ = 0;
  std::int64_t attention_query_block_ = 0;
  AttentionBlocks attention_blocks_;
};

// The inputs of a step that computes a share of a global batch (StepContext::compute_share_of):
// the share's index, and each normalizing field's sum over the global batch.
inline constexpr std::string_view kShareIndexInput = "micro_batch";
std::string loss_normalizer_name(std::string_view field);

// A dotted name prefix for parameters, like a PyTorch module path: model.fc_layers.0 makes
// model.fc_layers.0.weight.
class Scope {
 public:
  Scope(StepContext& context, std::string prefix)
      : context_(&context), prefix_(std::move(prefix)) {}

  Scope child(std::string_view name) const;
  Scope child(std::int64_t index) const { return child(std::to_string(index)); }
  const std::string& prefix() const { return prefix_; }
  StepContext& context() const { return *context_; }
  graph::Graph& graph() const { return context_->graph(); }
  // Records the nodes built until the guard ends as this module's (the graph's node scopes).
  [[nodiscard]] graph::Graph::ScopeGuard enter() const { return graph().enter_scope(prefix_); }

  // Creates a trainable parameter named prefix.name.
  graph::Tensor parameter(std::string_view name, graph::Shape shape, graph::Initializer init,
                          graph::Location location = graph::Location::current()) const;
  // Creates a statistic (a variable the forward pass keeps, not trained) named prefix.name.
  graph::Tensor statistic(std::string_view name, graph::Shape shape, graph::Initializer init,
                          graph::Location location = graph::Location::current()) const;

 private:
  StepContext* context_;
  std::string prefix_;
};

}  // namespace csrun::nn
