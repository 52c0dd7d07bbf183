#include "layers.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "initializers.hpp"

namespace csrun::nn {

namespace {

graph::Shape with_last(graph::Shape shape, std::int64_t last) {
  shape.back() = last;
  return shape;
}

}  // namespace

Tensor linear(const Scope& scope, const Tensor& x, std::int64_t out_features,
              const LinearOptions& options) {
  auto entered = scope.enter();
  std::int64_t in_features = x.dim(-1);
  Tensor weight = scope.parameter("weight", {out_features, in_features}, options.weight_init);
  graph::Shape shape = x.shape();
  // [..., in] -> [N, in] x [in, out] -> [..., out]
  Tensor rows = reshape(x, {graph::element_count(shape) / in_features, in_features});
  Tensor y = matmul(rows, swap_last_axes(weight));
  if (options.bias) y = y + scope.parameter("bias", {out_features}, options.bias_init);
  return reshape(y, with_last(shape, out_features));
}

Tensor embedding_table(const Scope& scope, std::int64_t rows, std::int64_t dim,
                       const graph::Initializer& init) {
  return scope.parameter("weight", {rows, dim}, init);
}

TokenEmbeddings token_embeddings(const Scope& scope, const Tensor& ids, std::int64_t vocab,
                                 std::int64_t positions, std::int64_t dim,
                                 const graph::Initializer& init,
                                 const std::optional<Tensor>& position_ids) {
  auto entered = scope.enter();
  TokenEmbeddings result;
  result.word_table = embedding_table(scope.child("word_embeddings"), vocab, dim, init);
  result.embedded = graph::gather(result.word_table, ids);
  if (positions == 0) return result;
  Tensor position_table = embedding_table(scope.child("position_embeddings"), positions, dim, init);
  Tensor at = position_ids ? *position_ids : graph::iota(ids.graph(), {ids.dim(1)}, 0);
  result.embedded = result.embedded + graph::gather(position_table, at);
  return result;
}

Tensor layer_norm(const Scope& scope, const Tensor& x, double eps) {
  auto entered = scope.enter();
  scope.context().add_normalization_module(scope.prefix());
  std::int64_t width = x.dim(-1);
  Tensor weight = scope.parameter("weight", {width}, ones_initializer());
  Tensor bias = scope.parameter("bias", {width}, zeros_initializer());
  return graph::layer_norm(x, eps) * weight + bias;
}

Tensor rms_norm(const Scope& scope, const Tensor& x, double eps) {
  auto entered = scope.enter();
  std::int64_t width = x.dim(-1);
  Tensor weight = scope.parameter("weight", {width}, ones_initializer());
  return x * rsqrt(mean(x * x, {-1}, true) + eps) * weight;
}

Tensor norm(std::string_view type, const Scope& scope, const Tensor& x, double eps) {
  if (type == "layernorm") return layer_norm(scope, x, eps);
  if (type == "rmsnorm") return rms_norm(scope, x, eps);
  throw std::invalid_argument("norm_type '" + std::string(type) +
                              "' is not supported yet (supported: layernorm, rmsnorm)");
}

bool is_supported_activation(std::string_view name) {
  for (std::string_view known :
       {"relu", "gelu", "gelu_new", "gelu_fast", "quick_gelu", "silu", "swish", "tanh", "sigmoid",
        "leaky_relu", "linear", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU"}) {
    if (name == known) return true;
  }
  return false;
}

Tensor activation(std::string_view name, const Tensor& x) {
  if (name == "relu" || name == "ReLU") return relu(x);
  if (name == "gelu" || name == "GELU") return gelu(x);
  if (name == "gelu_new" || name == "gelu_fast") return gelu(x, true);
  if (name == "quick_gelu") return x * sigmoid(1.702 * x);
  if (name == "silu" || name == "swish" || name == "SiLU") return x * sigmoid(x);
  if (name == "tanh" || name == "Tanh") return tanh(x);
  if (name == "sigmoid" || name == "Sigmoid") return sigmoid(x);
  if (name == "leaky_relu") {
    Tensor leaked = 0.01 * x;
    return where(x > 0.0, x, leaked);
  }
  if (name == "linear") return x;
  throw std::invalid_argument("the activation '" + std::string(name) + "' is not supported yet");
}

Tensor dropout(StepContext& context, const Tensor& x, double rate) {
  if (!context.training() || rate <= 0.0) return x;
  return graph::dropout(x, context.dropout_counter(), rate, context.seed(),
                        context.next_dropout_salt());
}

namespace {

// A run of positions along the sequence: [first, first + count).
struct Positions {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

// The keys that `queries` of `all_queries` may see at all, of `keys`: where the queries are the
// keys' own positions (self-attention), none after the last query if the mask is causal, and none
// before the first query's window if it slides (and keeps no sink tokens). The rest are hidden
// from every query of the block, so the block leaves them out of its products instead of
// multiplying and masking them.
Positions seen_keys(Positions queries, std::int64_t all_queries, std::int64_t keys,
                    const AttentionOptions& options) {
  bool masked = options.causal || options.window;
  if (!masked || keys != all_queries) return {0, keys};
  std::int64_t end = std::min(queries.first + queries.count, keys);
  std::int64_t first = 0;
  if (options.window && options.sink_tokens == 0)
    first = std::max<std::int64_t>(queries.first - (*options.window - 1), 0);
  return {first, end - first};
}

// Which of `keys` queries `queries` may see: [queries.count, keys.count] booleans (query rows, key
// columns), or nothing when all.
std::optional<Tensor> visible_keys(graph::Graph& graph, Positions queries, Positions keys,
                                   const AttentionOptions& options) {
  if (!options.causal && !options.window) return std::nullopt;
  // A column of query positions against a row of key positions: only the booleans are as large
  // as the scores.
  Tensor query = iota(graph, {queries.count, 1}, 0);
  if (queries.first > 0) query = query + static_cast<double>(queries.first);
  Tensor key = iota(graph, {1, keys.count}, 1);
  if (keys.first > 0) key = key + static_cast<double>(keys.first);
  Tensor visible = query >= key;
  if (!options.window) return visible;
  Tensor near = (query - key) <= static_cast<double>(*options.window - 1);
  if (options.sink_tokens > 0)
    near = logical_or(near, key < static_cast<double>(options.sink_tokens));
  return logical_and(visible, near);
}

// [B, T, W] -> [B, P, W]: every feature's sequence through weight [P, T], plus bias [P].
Tensor along_sequence(const Tensor& t, const Tensor& weight, const Tensor& bias) {
  std::int64_t batch = t.dim(0);
  std::int64_t width = t.dim(2);
  Tensor rows = reshape(transpose(t, {0, 2, 1}), {batch * width, t.dim(1)});
  Tensor projected = matmul(rows, swap_last_axes(weight)) + bias;
  return transpose(reshape(projected, {batch, width, weight.dim(0)}), {0, 2, 1});
}

struct SequenceProjection {
  Tensor weight;
  Tensor bias;
};

SequenceProjection sequence_projection(const Scope& scope, std::int64_t projected,
                                       std::int64_t length, const graph::Initializer& init) {
  return {scope.parameter("weight", {projected, length}, init),
          scope.parameter("bias", {projected}, zeros_initializer())};
}

// The queries, keys and values of attention, heads first: [B, heads, Tq, head] and [B, kv_heads,
// Tk, head] twice.
struct AttentionHeads {
  Tensor q;
  Tensor k;
  Tensor v;
};

// Elements [first, first + count) of axis `axis` of t, or t itself when that is all of it or the
// axis is broadcast (1).
Tensor part_of(const Tensor& t, std::int64_t axis, std::int64_t first, std::int64_t count) {
  std::int64_t extent = t.dim(axis);
  if (extent == 1 || (first == 0 && count == extent)) return t;
  return slice(t, axis, first, first + count);
}

// The per-head context [B, heads, queries.count, head] of `queries`: their scores over the keys
// they may see, masked, their softmax, dropped out, times those keys' values.
Tensor attend(const Scope& scope, const AttentionHeads& all, Positions queries,
              const std::optional<Tensor>& keep, const AttentionOptions& options) {
  graph::Graph& graph = all.q.graph();
  std::int64_t batch = all.q.dim(0);
  std::int64_t heads = all.q.dim(1);
  std::int64_t kv_heads = all.k.dim(1);
  std::int64_t count = queries.count;
  Positions keys = seen_keys(queries, all.q.dim(2), all.k.dim(2), options);
  Tensor q = part_of(all.q, 2, queries.first, count);
  Tensor k = part_of(all.k, 2, keys.first, keys.count);
  Tensor v = part_of(all.v, 2, keys.first, keys.count);
  // Each key/value head serves heads / kv_heads consecutive query heads: their queries, stacked
  // along the sequence axis ([B, kv_heads, group x count, head]), meet the group's keys and
  // values in one product, with no copy of a key or value.
  std::int64_t group = heads / kv_heads;
  auto grouped = [&](const Tensor& t) {
    return group == 1 ? t : reshape(t, {batch, kv_heads, group * count, t.dim(-1)});
  };
  auto per_head = [&](const Tensor& t) {
    return group == 1 ? t : reshape(t, {batch, heads, count, t.dim(-1)});
  };
  Tensor keys_transposed = swap_last_axes(k);
  Tensor scores = per_head(matmul(grouped(q), keys_transposed));
  if (options.score_scale != 1.0) scores = scores * options.score_scale;
  if (options.score_bias) {
    Tensor bias = part_of(*options.score_bias, -2, queries.first, count);
    scores = scores + part_of(bias, -1, keys.first, keys.count);
  }
  std::optional<Tensor> allowed = visible_keys(graph, queries, keys, options);
  if (keep) {
    Tensor kept = part_of(*keep, 1, keys.first, keys.count);
    Tensor padding = reshape(not_equal(kept, 0.0), {batch, 1, 1, keys.count});
    allowed = allowed ? logical_and(*allowed, padding) : padding;
  }
  // Masked scores get a large negative value, so softmax gives them (numerically) zero weight.
  if (allowed) scores = where(*allowed, scores, -1e9);
  Tensor probabilities = dropout(scope.context(), softmax(scores, -1), options.dropout);
  return per_head(matmul(grouped(probabilities), v));
}

}  // namespace

std::int64_t query_block_rows(std::int64_t heads, std::int64_t queries, std::int64_t keys) {
  std::int64_t row_bytes = heads * keys * 4;
  if (row_bytes * queries <= kMaxScoreBlockBytes) return queries;
  std::int64_t fewest = (queries + kMaxQueryBlocks - 1) / kMaxQueryBlocks;
  std::int64_t rows = std::max({kMinQueryBlock, fewest, kMaxScoreBlockBytes / row_bytes});
  if (rows >= queries) return queries;
  // As many blocks as that takes, as even as they can be.
  std::int64_t blocks = (queries + rows - 1) / rows;
  return (queries + blocks - 1) / blocks;
}

Tensor attention(const Scope& scope, const Tensor& x, const Tensor& memory,
                 const std::optional<Tensor>& keep, const AttentionOptions& options) {
  auto entered = scope.enter();
  std::int64_t batch = x.dim(0);
  std::int64_t length = x.dim(1);
  std::int64_t keys = memory.dim(1);
  std::int64_t width = x.dim(2);
  std::int64_t inner = options.inner > 0 ? options.inner : width;
  std::int64_t head = inner / options.heads;
  std::int64_t kv_heads = options.kv_heads > 0 ? options.kv_heads : options.heads;
  LinearOptions projection{options.projection_bias, options.init, zeros_initializer()};
  LinearOptions query_projection{options.projection_bias,
                                 options.query_init ? *options.query_init : options.init,
                                 zeros_initializer()};
  auto heads_first = [&](const Tensor& t, std::int64_t count) {  // -> [B, count, T, head]
    return transpose(reshape(t, {batch, t.dim(1), count, head}), {0, 2, 1, 3});
  };
  Tensor q = heads_first(linear(scope.child("proj_q_dense_layer"), x, inner, query_projection),
                         options.heads);
  Tensor keys_in = linear(scope.child("proj_k_dense_layer"), memory, kv_heads * head, projection);
  Tensor values_in = linear(scope.child("proj_v_dense_layer"), memory, kv_heads * head, projection);
  if (options.projected_length > 0) {
    if (keep) throw std::invalid_argument("a Linformer projection takes no padding mask");
    SequenceProjection e = sequence_projection(scope.child("E_projection"),
                                               options.projected_length, keys, options.init);
    SequenceProjection f = options.shared_projection
                               ? e
                               : sequence_projection(scope.child("F_projection"),
                                                     options.projected_length, keys, options.init);
    keys_in = along_sequence(keys_in, e.weight, e.bias);
    values_in = along_sequence(values_in, f.weight, f.bias);
    keys = options.projected_length;
  }
  Tensor k = heads_first(keys_in, kv_heads);
  Tensor v = heads_first(values_in, kv_heads);
  if (options.rotary) {
    q = rotary_embedding(q, *options.rotary);
    k = rotary_embedding(k, *options.rotary);
  }
  std::vector<Tensor> contexts;
  AttentionHeads all{q, k, v};
  std::int64_t chosen = scope.context().attention_query_block();
  std::int64_t rows =
      chosen > 0 ? std::min(chosen, length) : query_block_rows(options.heads, length, keys);
  for (std::int64_t first = 0; first < length; first += rows)
    contexts.push_back(attend(scope, all, {first, std::min(rows, length - first)}, keep, options));
  if (contexts.size() > 1)
    scope.context().note_attention_blocks(static_cast<std::int64_t>(contexts.size()), rows);
  Tensor per_head = contexts.size() == 1 ? contexts.front() : concat(contexts, 2);
  Tensor context = reshape(transpose(per_head, {0, 2, 1, 3}), {batch, length, inner});
  LinearOptions output{options.output_bias, options.output_init, zeros_initializer()};
  return linear(scope.child("proj_output_dense_layer"), context, width, output);
}

Tensor self_attention(const Scope& scope, const Tensor& x, const std::optional<Tensor>& keep,
                      const AttentionOptions& options) {
  return attention(scope, x, x, keep, options);
}

bool is_gated(std::string_view activation) {
  return activation == "swiglu" || activation == "geglu" || activation == "reglu" ||
         activation == "liglu";
}

Tensor feed_forward(const Scope& scope, const Tensor& x, const FeedForwardOptions& options) {
  auto entered = scope.enter();
  Scope layers = scope.child("ffn");
  LinearOptions first{options.bias, options.init, zeros_initializer()};
  Tensor h = linear(layers.child(0).child("linear_layer"), x, options.hidden, first);
  if (is_gated(options.activation)) {
    Tensor gate = linear(layers.child(0).child("linear_layer_for_glu"), x, options.hidden, first);
    std::string_view act = options.activation;
    gate = act == "swiglu"  ? gate * sigmoid(gate)
           : act == "geglu" ? gelu(gate)
           : act == "reglu" ? relu(gate)
                            : gate;
    h = h * gate;
  } else {
    h = activation(options.activation, h);
  }
  h = dropout(scope.context(), h, options.inner_dropout);
  Tensor y = linear(layers.child(1).child("linear_layer"), h, x.dim(-1),
                    {options.bias, options.output_init, zeros_initializer()});
  return dropout(scope.context(), y, options.dropout);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  return softmax_cross_entropy(logits, labels);
}

}  // namespace csrun::nn
