#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "graph/tensor.hpp"
#include "rotary_embedding.hpp"
#include "scope.hpp"

namespace csrun::nn {

using graph::Tensor;

struct LinearOptions {
  bool bias = true;
  graph::Initializer weight_init;
  graph::Initializer bias_init;
};

// y = x W^T + b over the last axis, W of shape [out, in] (PyTorch's nn.Linear), named
// scope.weight and scope.bias.
Tensor linear(const Scope& scope, const Tensor& x, std::int64_t out_features,
              const LinearOptions& options);

// An embedding table [rows, dim] named scope.weight (PyTorch's nn.Embedding).
Tensor embedding_table(const Scope& scope, std::int64_t rows, std::int64_t dim,
                       const graph::Initializer& init);

// The Model Zoo's EmbeddingLayer inside `scope`: word embeddings [vocab, dim] gathered at the
// token ids [B, T], plus, when `positions` (the position table's rows) is not 0, learned
// position embeddings of `position_ids` ([B, T]; by default 0..T-1) (scope.word_embeddings.weight,
// scope.position_embeddings.weight). The word table is returned too: output heads share it.
struct TokenEmbeddings {
  Tensor word_table;
  Tensor embedded;
};
TokenEmbeddings token_embeddings(const Scope& scope, const Tensor& ids, std::int64_t vocab,
                                 std::int64_t positions, std::int64_t dim,
                                 const graph::Initializer& init,
                                 const std::optional<Tensor>& position_ids = std::nullopt);

// Layer normalization over the last axis with scope.weight (ones) and scope.bias (zeros).
Tensor layer_norm(const Scope& scope, const Tensor& x, double eps);
// RMS normalization over the last axis with scope.weight (ones).
Tensor rms_norm(const Scope& scope, const Tensor& x, double eps);
// layer_norm or rms_norm by the Model Zoo's norm_type name.
Tensor norm(std::string_view type, const Scope& scope, const Tensor& x, double eps);

// The Model Zoo's activations by name: relu, gelu (exact), gelu_new / gelu_fast (tanh form),
// quick_gelu, silu / swish, tanh, sigmoid, leaky_relu, linear. Throws std::invalid_argument for
// the gated ones (swiglu, geglu, reglu, liglu), which need two projections (feed_forward).
Tensor activation(std::string_view name, const Tensor& x);
bool is_supported_activation(std::string_view name);

// Zeroes each element with probability `rate` while training (scaled by 1 / (1 - rate));
// the identity otherwise or when rate is 0.
Tensor dropout(StepContext& context, const Tensor& x, double rate);

struct AttentionOptions {
  std::int64_t heads = 1;
  std::int64_t kv_heads = 0;  // grouped-query attention's key/value heads (0: one per head)
  bool causal = false;
  // A query sees at most this many keys, itself included (sliding-window attention), and the
  // first sink_tokens positions besides.
  std::optional<std::int64_t> window;
  std::int64_t sink_tokens = 0;
  double score_scale = 1.0;          // the scores' factor, e.g. 1/sqrt(head size)
  std::optional<RotarySpec> rotary;  // rotates queries and keys
  bool projection_bias = true;
  bool output_bias = true;
  double dropout = 0.0;
  // Heads x head size when it is not the input's width (T5's num_heads x d_kv).
  std::int64_t inner = 0;
  // Added to the scaled scores [B, heads, Tq, Tk] (broadcast), before masking: T5's relative
  // position bias.
  std::optional<Tensor> score_bias;
  graph::Initializer init;
  std::optional<graph::Initializer> query_init;  // the query projection's, when not `init`
  graph::Initializer output_init;
  // Linformer: the projected keys and values along the sequence, from Tk to this many positions
  // (scope.E_projection for keys, scope.F_projection for values unless shared_projection; a
  // weight [projected, Tk], initialized as `init`, and a bias), before the heads are split. No
  // padding mask goes with it (`keep` must be empty), as in the Model Zoo's Linformer.
  std::int64_t projected_length = 0;
  bool shared_projection = false;
};

// Attention whose scores would take more than kMaxScoreBlockBytes a sample in f32 computes them
// a block of queries at a time, each block's scores, probabilities and their gradients made and
// freed before the next block's: Llama 3.2 1B's at MSL 8k take 8.6 GB a layer whole. A block is
// at least kMinQueryBlock queries, so that its products stay large, and there are at most
// kMaxQueryBlocks, so that the traced graph stays small. A block meets only the keys its mask
// lets one of its queries see (with a causal mask, none after its last query), so a long causal
// sequence multiplies about half of what whole attention does; the gradients of the queries, and
// of the keys and values a block leaves out, are padded and summed block by block.
inline constexpr std::int64_t kMaxScoreBlockBytes = std::int64_t{1} << 28;
inline constexpr std::int64_t kMinQueryBlock = 512;
inline constexpr std::int64_t kMaxQueryBlocks = 16;

// The queries a block takes for attention of `heads` heads of `queries` queries over `keys` keys:
// all of them, or fewer when their f32 scores exceed kMaxScoreBlockBytes a sample.
std::int64_t query_block_rows(std::int64_t heads, std::int64_t queries, std::int64_t keys);

// Multi-head attention of the queries of x [B, Tq, H] over the keys and values of memory
// [B, Tk, H] (cross-attention; causal and window options apply only where Tq = Tk), with the
// projections named as self_attention's; `keep` [B, Tk] marks the keys that may be attended to.
Tensor attention(const Scope& scope, const Tensor& x, const Tensor& memory,
                 const std::optional<Tensor>& keep, const AttentionOptions& options);

// Multi-head self-attention of x [B, T, H] with the Model Zoo's projections
// (scope.proj_q_dense_layer, proj_k_, proj_v_, proj_output_dense_layer). `keep` [B, T] marks
// the positions that may be attended to (1) and padding (0). With kv_heads, the key and value
// projections have kv_heads heads; query head h reads key/value head h / (heads / kv_heads).
Tensor self_attention(const Scope& scope, const Tensor& x, const std::optional<Tensor>& keep,
                      const AttentionOptions& options);

// The Model Zoo's FeedForwardNetwork: scope.ffn.0.linear_layer (to `hidden`, then the
// activation) and scope.ffn.1.linear_layer (back to the input width). A gated activation
// (swiglu, geglu, reglu, liglu) adds scope.ffn.0.linear_layer_for_glu, the gate:
// ffn.1(linear_layer(x) * act(linear_layer_for_glu(x))).
struct FeedForwardOptions {
  std::int64_t hidden = 0;
  std::string activation = "relu";
  bool bias = true;
  double dropout = 0.0;  // on the output (the residual branch)
  graph::Initializer init;
  graph::Initializer output_init;
  double inner_dropout = 0.0;  // after the activation (the Model Zoo's relu_dropout_rate)
};
Tensor feed_forward(const Scope& scope, const Tensor& x, const FeedForwardOptions& options);
bool is_gated(std::string_view activation);

// Cross entropy of logits [N, C] against integer labels [N], per row. A row whose label lies
// outside [0, C) (an ignore index such as -100) gets 0; callers mask and average.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);

}  // namespace csrun::nn
