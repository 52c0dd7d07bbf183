// The encoder-decoder networks: the Model Zoo's T5ForConditionalGeneration (t5) and the
// Transformer of Vaswani et al. (transformer), which the Model Zoo builds from the same class.

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"
#include "nn/initializers.hpp"
#include "nn/layers.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

struct Seq2SeqDefaults {
  const char* position_embedding = "relative";
  const char* nonlinearity = "relu";
  const char* norm = "rmsnorm";
  bool ffn_bias = false;
  // T5's layout; the Transformer's is the opposite in each.
  bool pre_layer_norm = true;
  bool pre_dropout = false;
  bool dropout_outside_residual = true;
  bool transformer_initialization = false;
};

std::vector<Field> seq2seq_fields(const Seq2SeqDefaults& d) {
  T activation = T::choice({"relu", "gelu", "gelu_new", "gated-gelu", "geglu", "swiglu", "reglu"});
  return {
      required_field("src_vocab_size", dimension()),
      optional_field("tgt_vocab_size", dimension()),
      default_field("extra_ids", non_negative_integer(), value(0)),
      default_field("d_model", dimension(), value(512)),
      default_field("d_kv", dimension(), value(64)),
      default_field("d_ff", dimension(), value(2048)),
      default_field("num_heads", dimension(), value(8)),
      default_field("encoder_num_hidden_layers", layer_count(), value(6)),
      optional_field("decoder_num_hidden_layers", layer_count()),
      default_field("dropout_rate", dropout_type(), value(0.1)),
      optional_field("relu_dropout_rate", dropout_type()),
      default_field("use_projection_bias_in_attention", T::boolean(), value(false)),
      default_field("position_embedding_type",
                    T::any_of({T::choice({"learned", "learned_absolute", "fixed", "relative",
                                          "rotary", "alibi"}),
                               T::null()}),
                    value(d.position_embedding)),
      default_field("relative_attention_num_buckets", positive_integer(), value(32)),
      optional_field("src_max_position_embeddings", dimension()),
      optional_field("tgt_max_position_embeddings", dimension()),
      default_field("share_embedding_weights", T::boolean(), value(true)),
      default_field("share_encoder_decoder_embedding", T::boolean(), value(true)),
      default_field("norm_type", norm_type(), value(d.norm)),
      default_field("encoder_nonlinearity", activation, value(d.nonlinearity)),
      optional_field("decoder_nonlinearity", activation),
      default_field("layer_norm_epsilon", positive_number(), value(1e-6)),
      default_field("lm_loss_weight", positive_number(), value(1.0)),
      optional_field("mlm_loss_scaling",
                     T::choice({"num_masked", "batch_size", "precomputed_num_masked"})),
      default_field("use_ffn_bias", T::boolean(), value(d.ffn_bias)),
      default_field("use_pre_encoder_decoder_dropout", T::boolean(), value(d.pre_dropout)),
      default_field("use_pre_encoder_decoder_layer_norm", T::boolean(), value(d.pre_layer_norm)),
      default_field("use_dropout_outside_residual_path", T::boolean(),
                    value(d.dropout_outside_residual)),
      default_field("use_transformer_initialization", T::boolean(),
                    value(d.transformer_initialization)),
      optional_field("attention_kernel", T::string().or_null()),
      optional_field("label_smoothing", T::number({0.0, 1.0, false, true})),
      default_field("compute_eval_metrics", T::boolean(), value(true)),
      // muP, as the encoder-decoder networks name it.
      optional_field("mup_base_d_model", positive_number().or_null()),
      optional_field("mup_base_d_ff", positive_number().or_null()),
      optional_field("output_logits_alpha", T::number().or_null()),
      optional_field("embeddings_alpha", T::number().or_null()),
      optional_field("encoder_attention_logits_alpha", T::number().or_null()),
      optional_field("decoder_attention_logits_alpha", T::number().or_null()),
      optional_field("scale_encoder_qk_dot_by_d", T::boolean()),
      optional_field("scale_decoder_qk_dot_by_d", T::boolean()),
      optional_field("scale_output_logits_by_d", T::boolean()),
      optional_field("mup_base_d_kv", positive_number().or_null()),
      default_field("attention_softmax_fp32", T::boolean(), value(true)),
      default_field("initializer_factor", positive_number(), value(1.0)),
      optional_field("decoder_start_token_id", non_negative_integer().or_null()),
      optional_field("pad_token_id", non_negative_integer()),
      default_field("tie_encoder_decoder", T::boolean(), value(false)),
      default_field("attention_module", T::choice({"aiayn_attention", "multiquery_attention"}),
                    value("aiayn_attention")),
      optional_field("extra_attention_params", T::mapping().or_null()),
      optional_field("lr_adjustment_groups", T::mapping().or_null()),
      no_effect_field("use_cache",
                      "use_cache keeps decoder states for text generation; csrun trains and "
                      "evaluates, so it has no effect"),
      derived_field("dtype", "the precision section sets the compute dtype"),
      earlier_release_field("to_float16", "1.x", "the precision section decides"),
      earlier_release_field("enable_vts", "1.x pipeline-mode", "variable tensor shapes"),
      earlier_release_field("use_vsl", "TensorFlow-era",
                            "variable sequence length, a speed option of the CS-1/CS-2 compiler"),
  };
}

bool gated(const std::string& nonlinearity) {
  return nonlinearity == "gated-gelu" || nonlinearity == "geglu" || nonlinearity == "swiglu" ||
         nonlinearity == "reglu";
}

// A side's data length against its learned position table.
void check_fits_positions(const ModelParams& params, const char* key,
                          std::optional<std::int64_t> length, const char* data_key,
                          Diagnostics& diagnostics) {
  if (!length || !params.has(key) || *length <= params.integer(key)) return;
  report_at(params, key,
            std::string("the data's ") + data_key + " " + std::to_string(*length) + " exceeds " +
                key + " " + std::to_string(params.integer(key)),
            diagnostics);
}

// Whether the step's batches carry the loss weights of the data's dynamic_loss_weight (B / the
// target tokens): a training step reads the training data's, an eval step the eval data's.
bool weighted_data(const ModelBuild& b) {
  return b.context.training() ? b.hints.dynamic_loss_weight : b.hints.eval_dynamic_loss_weight;
}

// The loss's scaling. 1.6 had no mlm_loss_scaling: the data's loss weights asked for the mean.
// precomputed_num_masked is the mean over the target tokens only with the loss weights: the
// Model Zoo's loss falls back to batch_size where the batch has none (an evaluation, always).
std::string loss_scaling(const ModelParams& params, bool weighted) {
  if (!params.has("mlm_loss_scaling")) return weighted ? "precomputed_num_masked" : "batch_size";
  std::string scaling = params.text("mlm_loss_scaling");
  return scaling == "precomputed_num_masked" && !weighted ? "batch_size" : scaling;
}

void check_seq2seq(const ModelParams& params, const DataHints& hints, Diagnostics& diagnostics) {
  if (params.has("mlm_loss_scaling") &&
      params.text("mlm_loss_scaling") == "precomputed_num_masked" && !hints.dynamic_loss_weight) {
    warn_at(params, "mlm_loss_scaling",
            "precomputed_num_masked needs the training data's loss weights "
            "(train_dataloader.dynamic_loss_weight: true, which Model Zoo 1.9-2.4 set from this "
            "key): without them the Model Zoo's loss, and csrun's, is the batch_size scaling, "
            "the summed loss / the batch x lm_loss_weight",
            diagnostics);
  }
  const Node* position = params.find("position_embedding_type");
  bool learned = position && position->is_string() && position->as_string().starts_with("learned");
  if (learned && !params.has("src_max_position_embeddings")) {
    report_at(params, "position_embedding_type",
              "learned position embeddings need src_max_position_embeddings (and "
              "tgt_max_position_embeddings)",
              diagnostics);
  }
  if (learned) {
    check_fits_positions(params, "src_max_position_embeddings", hints.max_sequence_length,
                         "src_max_sequence_length", diagnostics);
    check_fits_positions(params,
                         params.has("tgt_max_position_embeddings") ? "tgt_max_position_embeddings"
                                                                   : "src_max_position_embeddings",
                         hints.target_sequence_length, "tgt_max_sequence_length", diagnostics);
  }
  if (params.has("decoder_nonlinearity") &&
      params.text("decoder_nonlinearity") != params.text("encoder_nonlinearity")) {
    warn_at(params, "decoder_nonlinearity",
            "the Model Zoo builds the decoder with encoder_nonlinearity ('" +
                params.text("encoder_nonlinearity") +
                "'), and so does csrun: decoder_nonlinearity has no effect",
            diagnostics);
  }
}

std::int64_t count_seq2seq(const ModelParams& params) {
  std::int64_t d = params.integer("d_model");
  std::int64_t inner = params.integer("num_heads") * params.integer("d_kv");
  std::int64_t ff = params.integer("d_ff");
  std::int64_t src_vocab = params.integer("src_vocab_size") + params.integer("extra_ids");
  std::int64_t tgt_vocab = params.has("tgt_vocab_size")
                               ? params.integer("tgt_vocab_size") + params.integer("extra_ids")
                               : src_vocab;
  std::int64_t encoder_layers = params.integer("encoder_num_hidden_layers");
  std::int64_t decoder_layers = params.has("decoder_num_hidden_layers")
                                    ? params.integer("decoder_num_hidden_layers")
                                    : encoder_layers;
  std::int64_t norm_size = norm_parameters(params.text("norm_type"), d);
  // The Model Zoo builds both sides with encoder_nonlinearity, and drops the feed-forward
  // biases under gelu.
  std::string activation = params.text("encoder_nonlinearity");
  bool bias = params.flag("use_ffn_bias") && activation != "gelu";
  std::int64_t feed_forward =
      (gated(activation) ? 3 : 2) * d * ff + (bias ? (gated(activation) ? 2 : 1) * ff + d : 0);
  std::int64_t attention =
      4 * d * inner + (params.flag("use_projection_bias_in_attention") ? 3 * inner : 0);
  std::int64_t encoder = encoder_layers * (attention + feed_forward + 2 * norm_size);
  std::int64_t decoder = decoder_layers * (2 * attention + feed_forward + 3 * norm_size);
  std::string positions = position_embedding_of(params);
  std::int64_t position_params = 0;
  if (positions == "relative") {
    position_params =
        2 * params.integer("relative_attention_num_buckets") * params.integer("num_heads");
  } else if (positions.starts_with("learned")) {
    position_params = d * (params.integer("src_max_position_embeddings") +
                           (params.has("tgt_max_position_embeddings")
                                ? params.integer("tgt_max_position_embeddings")
                                : params.integer("src_max_position_embeddings")));
  }
  std::int64_t embeddings =
      params.flag("share_encoder_decoder_embedding") ? src_vocab * d : (src_vocab + tgt_vocab) * d;
  std::int64_t head = params.flag("share_embedding_weights") ? 0 : tgt_vocab * d;
  return embeddings + position_params + encoder + decoder + 2 * norm_size + head;
}

// ---------------------------------------------------------------- the traced network ---

// The lengths of a seq2seq batch: the source's (src_max_sequence_length of the data, else the
// source positions) and the target's.
std::int64_t source_length(const ModelParams& p, const DataHints& hints) {
  if (hints.max_sequence_length) return *hints.max_sequence_length;
  return p.has("src_max_position_embeddings") ? p.integer("src_max_position_embeddings") : 512;
}

std::int64_t target_length(const ModelParams& p, const DataHints& hints) {
  if (hints.target_sequence_length) return *hints.target_sequence_length;
  return p.has("tgt_max_position_embeddings") ? p.integer("tgt_max_position_embeddings")
                                              : source_length(p, hints);
}

std::int64_t source_vocabulary(const ModelParams& p) {
  return p.integer("src_vocab_size") + p.integer("extra_ids");
}

std::int64_t target_vocabulary(const ModelParams& p) {
  if (p.flag("share_encoder_decoder_embedding") || !p.has("tgt_vocab_size"))
    return source_vocabulary(p);
  return p.integer("tgt_vocab_size") + p.integer("extra_ids");
}

bool flag_or(const ModelParams& p, const char* key, bool fallback) {
  return p.has(key) ? p.flag(key) : fallback;
}

// 1.x's name of the gated GELU is the Model Zoo's geglu (gelu of the gate, exact form).
std::string activation_of(const std::string& nonlinearity) {
  return nonlinearity == "gated-gelu" ? "geglu" : nonlinearity;
}

// muP as the Model Zoo's T5 applies it (mup_base_d_model and mup_base_d_ff together): the width
// multipliers of d_model and d_ff.
struct Seq2SeqMup {
  bool on = false;
  double width = 1.0;
  double filter = 1.0;
};

Seq2SeqMup seq2seq_mup(const ModelParams& p) {
  auto set = [&](const char* key) { return p.has(key) && !p.find(key)->is_null(); };
  if (!set("mup_base_d_model") && !set("mup_base_d_ff")) return {};
  if (!set("mup_base_d_model") || !set("mup_base_d_ff")) {
    throw UnsupportedModel(set("mup_base_d_model") ? "mup_base_d_model" : "mup_base_d_ff",
                           "muP needs both mup_base_d_model and mup_base_d_ff (the Model Zoo "
                           "refuses one without the other)");
  }
  return {true, static_cast<double>(p.integer("d_model")) / p.number("mup_base_d_model"),
          static_cast<double>(p.integer("d_ff")) / p.number("mup_base_d_ff")};
}

double number_or(const ModelParams& p, const char* key, double fallback) {
  return p.has(key) && !p.find(key)->is_null() ? p.number(key) : fallback;
}

void refuse_unsupported(const ModelParams& p, const std::string& model, const Seq2SeqMup& mup) {
  refuse_unless_off(
      p, model,
      {"mup_base_d_kv", "extra_attention_params", "lr_adjustment_groups", "tie_encoder_decoder"});
  if (!mup.on) {
    refuse_unless_off(p, model,
                      {"output_logits_alpha", "embeddings_alpha", "encoder_attention_logits_alpha",
                       "decoder_attention_logits_alpha", "scale_encoder_qk_dot_by_d",
                       "scale_decoder_qk_dot_by_d", "scale_output_logits_by_d"});
  }
  refuse_unless(p, model, "use_transformer_initialization",
                !mup.on || !flag_or(p, "use_transformer_initialization", false),
                "false with muP (the Model Zoo refuses both)");
  std::string position = position_embedding_of(p);
  refuse_unless(p, model, "position_embedding_type",
                position.empty() || position == "relative" || position == "fixed" ||
                    position.starts_with("learned"),
                "relative, fixed, learned, null");
  refuse_unless(p, model, "attention_module", p.text("attention_module") == "aiayn_attention",
                "aiayn_attention");
  std::string norm = p.text("norm_type");
  refuse_unless(p, model, "norm_type", norm == "layernorm" || norm == "rmsnorm",
                "layernorm, rmsnorm");
  std::string activation = activation_of(p.text("encoder_nonlinearity"));
  refuse_unless(p, model, "encoder_nonlinearity",
                nn::is_supported_activation(activation) || nn::is_gated(activation),
                "relu, gelu, gelu_new, gated-gelu, geglu, swiglu, reglu");
  refuse_unless(p, model, "attention_kernel",
                !p.has("attention_kernel") || p.find("attention_kernel")->is_null() ||
                    p.text("attention_kernel") == "default",
                "default");
}

// The bias [1, heads, T, T] of self-attention over T positions: the table's row of each query
// and key pair's bucket.
graph::Tensor relative_position_bias(const graph::Tensor& table, std::int64_t length,
                                     bool bidirectional) {
  std::int64_t buckets = table.dim(0);
  std::int64_t heads = table.dim(1);
  std::vector<double> indices;
  indices.reserve(static_cast<std::size_t>(length * length));
  for (std::int64_t query = 0; query < length; ++query) {
    for (std::int64_t key = 0; key < length; ++key)
      indices.push_back(relative_position_bucket(key - query, bidirectional, buckets));
  }
  graph::Tensor at = graph::constant_values(table.graph(), std::move(indices), {length * length},
                                            graph::DType::i32);
  graph::Tensor bias = graph::reshape(graph::gather(table, at), {length, length, heads});
  return graph::reshape(graph::transpose(bias, {2, 0, 1}), {1, heads, length, length});
}

// The Model Zoo's fixed sinusoid (FixedPositionEmbeddingLayer): sine and cosine interleaved,
// timescales from 1 to 10^4, a zero column for an odd width. [length, width].
graph::Tensor sinusoid_table(graph::Graph& graph, std::int64_t length, std::int64_t width) {
  std::int64_t timescales = width / 2;
  double step = timescales > 1 ? std::log(1e4) / static_cast<double>(timescales - 1) : 0.0;
  std::vector<double> values(static_cast<std::size_t>(length * width), 0.0);
  for (std::int64_t position = 0; position < length; ++position) {
    for (std::int64_t i = 0; i < timescales; ++i) {
      double angle = static_cast<double>(position) * std::exp(-static_cast<double>(i) * step);
      auto at = static_cast<std::size_t>(position * width + 2 * i);
      values[at] = std::sin(angle);
      values[at + 1] = std::cos(angle);
    }
  }
  return graph::constant_values(graph, std::move(values), {length, width});
}

// Each parameter's initializer: T5's normals scaled by initializer_factor, or the Transformer's
// (use_transformer_initialization) variance scaling and Xavier.
struct Seq2SeqInitializers {
  graph::Initializer embedding;
  graph::Initializer query;
  graph::Initializer key_value;  // keys, values and the attention output
  graph::Initializer ffn;
  graph::Initializer ffn_output;
  graph::Initializer head;
  graph::Initializer relative_bias;
};

graph::Initializer uniform_within(double bound) {
  graph::Initializer init;
  init.name = "uniform";
  init.a = -bound;
  init.b = bound;
  return init;
}

Seq2SeqInitializers seq2seq_initializers(const ModelParams& p, const Seq2SeqMup& mup) {
  double factor = p.number("initializer_factor");
  auto d_model = static_cast<double>(p.integer("d_model"));
  auto d_kv = static_cast<double>(p.integer("d_kv"));
  auto inner = static_cast<double>(p.integer("num_heads")) * d_kv;
  Seq2SeqInitializers init;
  // Under muP the embeddings and an untied head start at factor / sqrt(d_model).
  double table_std = mup.on ? factor / std::sqrt(d_model) : factor;
  init.head = nn::normal_initializer(table_std);
  init.relative_bias.name = "xavier_uniform";
  if (!flag_or(p, "use_transformer_initialization", false)) {
    init.embedding = nn::normal_initializer(table_std);
    init.query = nn::normal_initializer(factor / std::sqrt(d_model * d_kv));
    init.key_value = nn::normal_initializer(factor / std::sqrt(d_model));
    init.ffn = nn::normal_initializer(factor / std::sqrt(d_model));
    init.ffn_output =
        nn::normal_initializer(factor / std::sqrt(static_cast<double>(p.integer("d_ff"))));
    return init;
  }
  // variance_scaling(scale, fan_avg, uniform): bound sqrt(3 scale / max(1, (fan_in + fan_out)/2)).
  double fan_average = std::max(1.0, (d_model + inner) / 2.0);
  init.embedding = nn::truncated_normal_initializer(1.0);
  init.query = uniform_within(std::sqrt(3.0 / (9.0 * d_kv) / fan_average));
  init.key_value = uniform_within(std::sqrt(3.0 / 9.0 / fan_average));
  init.ffn.name = "xavier_uniform";
  init.ffn_output.name = "xavier_uniform";
  return init;
}

// One side (encoder or decoder) of the network: how its layers are built.
struct Seq2SeqSide {
  nn::AttentionOptions self_attention;
  nn::AttentionOptions cross_attention;
  nn::FeedForwardOptions feed_forward;
  std::string norm;
  double eps = 1e-6;
  double dropout = 0.0;
  bool norm_first = true;
};

graph::Tensor residual(nn::StepContext& context, const Seq2SeqSide& side, const nn::Scope& norm,
                       const graph::Tensor& x,
                       const std::function<graph::Tensor(const graph::Tensor&)>& branch,
                       double dropout) {
  if (side.norm_first)
    return x + nn::dropout(context, branch(nn::norm(side.norm, norm, x, side.eps)), dropout);
  return nn::norm(side.norm, norm, x + nn::dropout(context, branch(x), dropout), side.eps);
}

// The self-attention sublayer (norm1), the decoder's causal.
graph::Tensor self_attention_sublayer(nn::StepContext& context, const nn::Scope& layer,
                                      const graph::Tensor& x,
                                      const std::optional<graph::Tensor>& keep,
                                      const Seq2SeqSide& side) {
  return residual(
      context, side, layer.child("norm1"), x,
      [&](const graph::Tensor& in) {
        return nn::self_attention(layer.child("self_attn"), in, keep, side.self_attention);
      },
      side.dropout);
}

// The feed-forward sublayer (its output dropout is the residual's).
graph::Tensor feed_forward_sublayer(nn::StepContext& context, const nn::Scope& layer,
                                    const char* norm, const graph::Tensor& x,
                                    const Seq2SeqSide& side) {
  return residual(
      context, side, layer.child(norm), x,
      [&](const graph::Tensor& in) {
        return nn::feed_forward(layer.child("ffn"), in, side.feed_forward);
      },
      0.0);
}

graph::Tensor encoder_layer(nn::StepContext& context, const nn::Scope& layer,
                            const graph::Tensor& x, const graph::Tensor& keep,
                            const Seq2SeqSide& side) {
  auto entered = layer.enter();
  graph::Tensor y = self_attention_sublayer(context, layer, x, keep, side);
  return feed_forward_sublayer(context, layer, "norm2", y, side);
}

graph::Tensor decoder_layer(nn::StepContext& context, const nn::Scope& layer,
                            const graph::Tensor& x, const graph::Tensor& memory,
                            const graph::Tensor& memory_keep, const Seq2SeqSide& side) {
  auto entered = layer.enter();
  graph::Tensor y = self_attention_sublayer(context, layer, x, std::nullopt, side);
  y = residual(
      context, side, layer.child("norm2"), y,
      [&](const graph::Tensor& in) {
        return nn::attention(layer.child("multihead_attn"), in, memory, memory_keep,
                             side.cross_attention);
      },
      side.dropout);
  return feed_forward_sublayer(context, layer, "norm3", y, side);
}

// The embedding of one side: its word table at the ids, plus learned or fixed positions, times
// `scale` (muP's), then the Transformer's extra dropout and the dropout before the layers.
graph::Tensor embed(ModelBuild& b, const nn::Scope& scope, const graph::Tensor& table,
                    const graph::Tensor& ids, std::int64_t positions,
                    const graph::Initializer& init, double scale) {
  const ModelParams& p = b.params;
  auto entered = scope.enter();
  graph::Tensor x = graph::gather(table, ids);
  std::int64_t length = ids.dim(1);
  std::string position = position_embedding_of(p);
  if (position.starts_with("learned")) {
    graph::Tensor table_of_positions =
        nn::embedding_table(scope.child("position_embeddings"), positions, table.dim(1), init);
    x = x + graph::gather(table_of_positions, graph::iota(ids.graph(), {length}, 0));
  } else if (position == "fixed") {
    x = x + sinusoid_table(ids.graph(), length, table.dim(1));
  }
  if (scale != 1.0) x = x * scale;
  double rate = p.number("dropout_rate");
  if (flag_or(p, "use_pre_encoder_decoder_dropout", false)) x = nn::dropout(b.context, x, rate);
  return nn::dropout(b.context, x, rate);
}

// The attention scores' factor: none in T5, 1/sqrt(d_kv) in the Transformer; under muP
// alpha / (width x d_kv), or alpha / (width x sqrt(d_kv)) without scale_<side>_qk_dot_by_d (the
// Model Zoo scales queries and keys by width^-1/2 each, and values and outputs by width^-1/2 and
// width^1/2, which cancel). The decoder's cross-attention takes the decoder's.
double score_scale(const ModelParams& p, bool encoder, const Seq2SeqMup& mup) {
  auto d_kv = static_cast<double>(p.integer("d_kv"));
  if (!mup.on)
    return flag_or(p, "use_transformer_initialization", false) ? 1.0 / std::sqrt(d_kv) : 1.0;
  std::string side = encoder ? "encoder" : "decoder";
  double alpha = number_or(p, (side + "_attention_logits_alpha").c_str(), 1.0);
  bool by_d = flag_or(p, ("scale_" + side + "_qk_dot_by_d").c_str(), true);
  return alpha / mup.width / (by_d ? d_kv : std::sqrt(d_kv));
}

// A side's layers; `score_bias` is its relative position bias, when it has one.
Seq2SeqSide side_of(const ModelParams& p, const Seq2SeqInitializers& init, bool encoder,
                    const Seq2SeqMup& mup, std::optional<graph::Tensor> score_bias) {
  Seq2SeqSide side;
  side.norm = p.text("norm_type");
  side.eps = p.number("layer_norm_epsilon");
  side.dropout = p.number("dropout_rate");
  side.norm_first = flag_or(p, "use_pre_encoder_decoder_layer_norm", true);
  nn::AttentionOptions attention;
  attention.heads = p.integer("num_heads");
  attention.inner = attention.heads * p.integer("d_kv");
  attention.projection_bias = p.flag("use_projection_bias_in_attention");
  attention.output_bias = false;
  attention.dropout = side.dropout;
  attention.score_scale = score_scale(p, encoder, mup);
  attention.init = init.key_value;
  attention.query_init = init.query;
  attention.output_init = init.key_value;
  side.cross_attention = attention;
  attention.causal = !encoder;
  attention.score_bias = std::move(score_bias);
  side.self_attention = attention;
  // The Model Zoo builds both sides with encoder_nonlinearity; the decoder's inner dropout is
  // dropout_rate (relu_dropout_rate reaches the encoder only).
  std::string activation = activation_of(p.text("encoder_nonlinearity"));
  bool bias = p.flag("use_ffn_bias") && activation != "gelu";
  double inner =
      encoder && p.has("relu_dropout_rate") ? p.number("relu_dropout_rate") : side.dropout;
  side.feed_forward.hidden = p.integer("d_ff");
  side.feed_forward.activation = activation;
  side.feed_forward.bias = bias;
  side.feed_forward.dropout = side.dropout;
  side.feed_forward.init = init.ffn;
  side.feed_forward.output_init = init.ffn_output;
  side.feed_forward.inner_dropout = inner;
  return side;
}

// Cross entropy of the target tokens the decoder mask keeps (label-smoothed while training),
// reduced as mlm_loss_scaling says; accuracy and perplexity for eval.
ModelOutputs seq2seq_outputs(ModelBuild& b, const graph::Tensor& logits) {
  const ModelParams& p = b.params;
  std::int64_t batch = b.input("labels").dim(0);
  std::int64_t rows = logits.dim(0);
  graph::Tensor labels = graph::reshape(b.input("labels"), {rows});
  graph::Tensor mask =
      graph::cast(graph::reshape(b.input("decoder_attention_mask"), {rows}), graph::DType::f32);
  graph::Tensor cross_entropy = nn::cross_entropy(logits, labels);
  graph::Tensor per_token = cross_entropy;
  double smoothing = p.has("label_smoothing") ? p.number("label_smoothing") : 0.0;
  if (b.context.training() && smoothing > 0.0) {
    graph::Tensor uniform = graph::mean(-graph::log_softmax(logits, -1), {-1});
    graph::Tensor smoothed = smoothing * uniform;
    per_token = (1.0 - smoothing) * cross_entropy + smoothed;
  }
  graph::Tensor total = graph::sum(per_token * mask);
  ModelOutputs result;
  std::string scaling = loss_scaling(p, weighted_data(b));
  result.loss = scaling == "batch_size"
                    ? b.context.average_over_samples(total, batch) * p.number("lm_loss_weight")
                    : b.context.average_over_field(total, mask, "decoder_attention_mask");
  if (p.flag("compute_eval_metrics")) {
    graph::Tensor tokens = graph::sum(mask);
    graph::Tensor hits =
        graph::cast(graph::equal(graph::argmax(logits, -1), labels), graph::DType::f32);
    result.metrics.push_back({"eval/accuracy_lm", ratio_metric({graph::sum(hits * mask)}, {tokens}),
                              nn::MetricAverage::ratio});
    result.metrics.push_back({"eval/perplexity_lm",
                              ratio_metric({graph::sum(cross_entropy * mask)}, {tokens}),
                              nn::MetricAverage::exp_of_ratio});
  }
  return result;
}

// The Model Zoo's T5 learning-rate groups under muP (the optimizer's adjust_learning_rate
// can change them): tables and projections at 1/sqrt(width), the first feed-forward layers at
// 1/width, the second at 1/(d_ff's multiplier).
std::vector<LearningRateGroup> seq2seq_learning_rate_groups(const Seq2SeqMup& mup) {
  double root = 1.0 / std::sqrt(mup.width);
  std::vector<LearningRateGroup> groups = {{"embedding", {"*embedding*weight"}, root},
                                           {"lm_head", {"*lm_head*weight"}, root}};
  for (std::string side : {"encoder", "decoder"}) {
    groups.push_back(
        {side + "_qkv_projection", {"*" + side + "*attn.proj_[qkv]*dense*weight"}, root});
    groups.push_back(
        {side + "_output_projection", {"*" + side + "*attn.proj_output*dense*weight"}, root});
    groups.push_back({side + "_input_ffn", {"*" + side + "*ffn.ffn.[!1]*weight"}, 1.0 / mup.width});
    groups.push_back(
        {side + "_output_ffn", {"*" + side + "*ffn.ffn.[1]*weight"}, 1.0 / mup.filter});
  }
  return groups;
}

ModelOutputs build_seq2seq(ModelBuild& b, const std::string& model_name) {
  const ModelParams& p = b.params;
  Seq2SeqMup mup = seq2seq_mup(p);
  refuse_unsupported(p, model_name, mup);
  Seq2SeqInitializers init = seq2seq_initializers(p, mup);
  nn::Scope model(b.context, "model");
  std::int64_t d_model = p.integer("d_model");
  std::string position = position_embedding_of(p);
  bool relative = position == "relative";
  std::int64_t buckets = p.integer("relative_attention_num_buckets");
  std::int64_t heads = p.integer("num_heads");

  // Parameters in the Model Zoo's module order: both embeddings, then the encoder, the decoder
  // and the head.
  nn::Scope encoder_embeddings = model.child("encoder_embeddings");
  nn::Scope decoder_embeddings = model.child("decoder_embeddings");
  auto bias_table = [&](const nn::Scope& embeddings) -> std::optional<graph::Tensor> {
    if (!relative) return std::nullopt;
    return embeddings.child("position_embed_helper")
        .child("relative_attention_bias")
        .parameter("weight", {buckets, heads}, init.relative_bias);
  };
  graph::Tensor source_table = nn::embedding_table(encoder_embeddings.child("word_embeddings"),
                                                   source_vocabulary(p), d_model, init.embedding);
  std::optional<graph::Tensor> encoder_bias_table = bias_table(encoder_embeddings);
  graph::Tensor target_table =
      p.flag("share_encoder_decoder_embedding")
          ? source_table
          : nn::embedding_table(decoder_embeddings.child("word_embeddings"), target_vocabulary(p),
                                d_model, init.embedding);
  std::optional<graph::Tensor> decoder_bias_table = bias_table(decoder_embeddings);
  std::int64_t source_positions =
      p.has("src_max_position_embeddings") ? p.integer("src_max_position_embeddings") : 0;
  std::int64_t target_positions = p.has("tgt_max_position_embeddings")
                                      ? p.integer("tgt_max_position_embeddings")
                                      : source_positions;

  const graph::Tensor& source_keep = b.input("attention_mask");
  double embeddings_scale =
      mup.on ? number_or(p, "embeddings_alpha", 1.0) * std::sqrt(static_cast<double>(d_model))
             : 1.0;
  auto score_bias = [](const std::optional<graph::Tensor>& table, std::int64_t length,
                       bool bidirectional) -> std::optional<graph::Tensor> {
    if (!table) return std::nullopt;
    return relative_position_bias(*table, length, bidirectional);
  };
  graph::Tensor x = embed(b, encoder_embeddings, source_table, b.input("input_ids"),
                          source_positions, init.embedding, embeddings_scale);
  Seq2SeqSide encoder_side =
      side_of(p, init, true, mup, score_bias(encoder_bias_table, x.dim(1), true));
  nn::Scope encoder = model.child("encoder");
  for (std::int64_t i = 0; i < p.integer("encoder_num_hidden_layers"); ++i)
    x = encoder_layer(b.context, encoder.child("layers").child(i), x, source_keep, encoder_side);
  x = nn::norm(encoder_side.norm, encoder.child("norm"), x, encoder_side.eps);
  bool outside = flag_or(p, "use_dropout_outside_residual_path", true);
  if (outside) x = nn::dropout(b.context, x, encoder_side.dropout);

  graph::Tensor y = embed(b, decoder_embeddings, target_table, b.input("decoder_input_ids"),
                          target_positions, init.embedding, embeddings_scale);
  Seq2SeqSide decoder_side =
      side_of(p, init, false, mup, score_bias(decoder_bias_table, y.dim(1), false));
  nn::Scope decoder = model.child("decoder");
  std::int64_t decoder_layers = p.has("decoder_num_hidden_layers")
                                    ? p.integer("decoder_num_hidden_layers")
                                    : p.integer("encoder_num_hidden_layers");
  for (std::int64_t i = 0; i < decoder_layers; ++i)
    y = decoder_layer(b.context, decoder.child("layers").child(i), y, x, source_keep, decoder_side);
  y = nn::norm(decoder_side.norm, decoder.child("norm"), y, decoder_side.eps);
  if (outside) y = nn::dropout(b.context, y, decoder_side.dropout);

  nn::Scope head = model.child("lm_head");
  auto entered = head.enter();
  std::int64_t rows = y.dim(0) * y.dim(1);
  graph::Tensor flat = graph::reshape(y, {rows, d_model});
  graph::Tensor logits;
  if (p.flag("share_embedding_weights")) {
    if (!mup.on) flat = flat * (1.0 / std::sqrt(static_cast<double>(d_model)));
    logits = graph::matmul(flat, graph::swap_last_axes(target_table));
  } else {
    logits = nn::linear(head, flat, target_vocabulary(p), {false, init.head, {}});
  }
  if (mup.on) {
    double width = flag_or(p, "scale_output_logits_by_d", false) ? mup.width : std::sqrt(mup.width);
    logits = logits * (number_or(p, "output_logits_alpha", 1.0) / width);
  }
  ModelOutputs outputs = seq2seq_outputs(b, logits);
  if (mup.on) outputs.learning_rate_groups = seq2seq_learning_rate_groups(mup);
  return outputs;
}

BatchLayout seq2seq_layout(const ModelParams& p, std::int64_t batch, const DataHints& hints) {
  graph::TensorType source{{batch, source_length(p, hints)}, graph::DType::i32};
  graph::TensorType target{{batch, target_length(p, hints)}, graph::DType::i32};
  BatchLayout layout;
  layout.push_back({"input_ids", source, source_vocabulary(p)});
  layout.push_back({"attention_mask", source, 2});
  layout.push_back({"decoder_input_ids", target, target_vocabulary(p)});
  layout.push_back({"decoder_attention_mask", target, 2});
  layout.push_back({"labels", target, target_vocabulary(p)});
  return layout;
}

ModelDefinition seq2seq(const std::string& name, const std::string& description,
                        std::vector<std::string> processors, const Seq2SeqDefaults& defaults) {
  return ModelDefinition{
      name,
      description,
      std::move(processors),
      make_schema("model " + name, seq2seq_fields(defaults)),
      check_seq2seq,
      [](const ModelParams& params, const DataHints&) { return count_seq2seq(params); },
      seq2seq_layout,
      [name](ModelBuild& b) { return build_seq2seq(b, name); }};
}

}  // namespace

// The Model Zoo's relative position bucket of a key `relative` positions after its query
// (RelativePositionEmbeddingLayer, max_distance 128): exact buckets for near keys, logarithmic
// ones up to max_distance; the encoder's split in half by direction. The logarithm is taken in
// float32, as PyTorch takes it, so the bucket edges fall where the Model Zoo's do.
std::int32_t relative_position_bucket(std::int64_t relative, bool bidirectional,
                                      std::int64_t buckets) {
  constexpr double kMaxDistance = 128.0;
  std::int64_t bucket = 0;
  if (bidirectional) {
    buckets /= 2;
    if (relative > 0) bucket = buckets;
    relative = std::abs(relative);
  } else {
    relative = -std::min<std::int64_t>(relative, 0);
  }
  std::int64_t exact = buckets / 2;
  if (relative < exact) return static_cast<std::int32_t>(bucket + relative);
  float ratio = static_cast<float>(relative) / static_cast<float>(exact);
  float scaled = std::log(ratio) /
                 static_cast<float>(std::log(kMaxDistance / static_cast<double>(exact))) *
                 static_cast<float>(buckets - exact);
  auto large = std::min<std::int64_t>(exact + static_cast<std::int64_t>(scaled), buckets - 1);
  return static_cast<std::int32_t>(bucket + large);
}

ModelDefinition t5_definition() {
  return seq2seq("t5", "T5 encoder-decoder: relative position buckets, RMS layer norm",
                 {"T5DynamicDataProcessor", "T5HDF5DataProcessor"}, Seq2SeqDefaults{});
}

ModelDefinition transformer_definition() {
  Seq2SeqDefaults defaults;
  defaults.position_embedding = "fixed";
  defaults.norm = "layernorm";
  defaults.ffn_bias = true;
  defaults.pre_layer_norm = false;
  defaults.pre_dropout = true;
  defaults.dropout_outside_residual = false;
  defaults.transformer_initialization = true;
  return seq2seq("transformer", "Transformer (Vaswani et al.) encoder-decoder for translation",
                 {"TransformerDynamicDataProcessor"}, defaults);
}

}  // namespace csrun::models
