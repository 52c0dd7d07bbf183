// The decoder-only networks as traced graphs: the Model Zoo's GPT2LMHeadModel (gpt2, gpt3, llama
// and the GPT-NeoX files written in its keys) and GPTJModel (gptj), one builder with the two
// block layouts.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "model_definitions.hpp"
#include "mup.hpp"
#include "nn/initializers.hpp"
#include "nn/layers.hpp"

namespace csrun::models {

namespace {

using config::Node;

double dropout_or(const ModelParams& p, const char* key) {
  return p.has(key) ? p.number(key) : p.number("dropout_rate");
}

void refuse_unsupported(const ModelParams& p, const std::string& model) {
  refuse_if_set(
      p, model,
      {"num_relative_attention_buckets", "fixed_sparse_attention", "attention_logit_softcapping",
       "final_logit_softcapping", "moe", "moe_params", "lr_adjustment_groups"});
  refuse_unless_off(
      p, model,
      {"alibi_trainable_slopes", "constant_pos_embedding", "rel_distance_mode",
       "rel_distance_extra_args", "sliding_window_every_other_decoder_layer",
       "attention_vertical_column_spacing", "attention_vertical_column_width",
       "attention_chunk_size", "attention_qk_norm_layer", "attention_inner_dim", "memory_tokens",
       "cross_attention_layers", "num_extra_input_vocab_tokens", "norm_first_sandwich",
       "extra_ffn_params", "scale_glu_initialization", "lora_params"});
  std::string position = position_embedding_of(p);
  refuse_unless(p, model, "position_embedding_type",
                position.empty() || position == "learned" || position == "rotary",
                "learned, rotary, null");
  refuse_unless(p, model, "attention_type", p.text("attention_type") != "scaled_cosine",
                "scaled_dot_product, dot_product");
  std::string nonlinearity = p.text("nonlinearity");
  refuse_unless(p, model, "nonlinearity",
                nn::is_supported_activation(nonlinearity) || nn::is_gated(nonlinearity),
                "gelu, gelu_new, relu, silu, swiglu, geglu, reglu, ...");
  std::string norm = p.text("norm_type");
  refuse_unless(p, model, "norm_type", norm == "layernorm" || norm == "rmsnorm",
                "layernorm, rmsnorm");
  refuse_unless(p, model, "norm_first", p.flag("norm_first"), "true (pre-LayerNorm)");
  refuse_unless(p, model, "position_embedding_offset",
                !p.has("position_embedding_offset") || p.integer("position_embedding_offset") == 0,
                "0");
  refuse_unless(p, model, "scale_qk_dot_by_layer_idx",
                !p.has("scale_qk_dot_by_layer_idx") || !p.flag("scale_qk_dot_by_layer_idx"),
                "false");
  refuse_unless(p, model, "attention_kernel",
                !p.has("attention_kernel") || p.text("attention_kernel") == "default", "default");
  const Node* extra = p.find("extra_attention_params");
  bool only_groups = !extra || !extra->is_map() ||
                     std::all_of(extra->entries().begin(), extra->entries().end(),
                                 [](const Node::Entry& e) { return e.key == "num_kv_groups"; });
  refuse_unless(p, model, "extra_attention_params", only_groups, "num_kv_groups");
  refuse_unless(p, model, "attention_sink_tokens",
                !p.has("attention_sink_tokens") || p.integer("attention_sink_tokens") == 0 ||
                    p.has("attention_sliding_window_length"),
                "with attention_sliding_window_length");
}

// An initializer's spread times `factor` (its std and truncation bounds), as muP scales them.
graph::Initializer scaled(graph::Initializer init, double factor) {
  if (init.name != "normal" && init.name != "truncated_normal") {
    throw UnsupportedModel("initializer",
                           "muP scales normal and truncated_normal initializers; "
                           "csrun's decoder builders cannot scale '" +
                               init.name + "'");
  }
  init.std *= factor;
  init.a *= factor;
  init.b *= factor;
  return init;
}

// The initializers of one network family when the params give none (normals of
// initializer_range truncated at two deviations): the GPT-2 class scales its output projections
// by depth, GPT-J initializes every projection alike and its feed-forward
// layers as outputs. Under muP the projections' spreads shrink with the width and the outputs'
// with the depth as well (the embeddings keep theirs).
struct DecoderInitializers {
  graph::Initializer kernel;
  graph::Initializer embedding;
  graph::Initializer attention_output;
  graph::Initializer ffn;
  graph::Initializer ffn_output;
};

DecoderInitializers decoder_initializers(const ModelParams& p, bool gptj, const Mup& mup) {
  double range = p.number("initializer_range");
  auto layers = static_cast<double>(p.integer("num_hidden_layers"));
  double depth = 1.0 / std::sqrt(2.0 * layers);
  DecoderInitializers result;
  result.kernel =
      nn::initializer_from(p.find("initializer"), nn::truncated_normal_initializer(range));
  result.embedding = nn::initializer_from(p.find("embedding_initializer"), result.kernel);
  graph::Initializer deep = gptj || p.has("initializer") || mup.on
                                ? result.kernel
                                : nn::truncated_normal_initializer(range * depth);
  result.attention_output = nn::initializer_from(p.find("output_layer_initializer"), deep);
  result.ffn = nn::initializer_from(p.find("ffn_initializer"),
                                    gptj ? result.attention_output : result.kernel);
  result.ffn_output =
      nn::initializer_from(p.find("ffn_output_layer_initializer"), result.attention_output);
  if (!mup.on) return result;
  double narrow = 1.0 / std::sqrt(mup.width);
  result.kernel = scaled(result.kernel, narrow);
  result.ffn = scaled(result.ffn, narrow);
  result.attention_output = scaled(result.attention_output, narrow * depth);
  result.ffn_output = scaled(result.ffn_output, depth / std::sqrt(mup.filter));
  return result;
}

// The Model Zoo's learning-rate groups of its decoders; muP runs the projections at the base
// model's rate divided by the width (the second feed-forward layer's by the filter width).
std::vector<LearningRateGroup> decoder_learning_rate_groups(bool gptj, const Mup& mup) {
  std::vector<LearningRateGroup> groups = {
      {"embedding", {"*embedding*weight"}, 1.0},
      {"decoder_attention", {"*decoder*attn*dense*weight"}, 1.0 / mup.width},
      {"decoder_input_ffn", {"*decoder*ffn.ffn.[!1]*weight"}, 1.0 / mup.width},
      {"decoder_output_ffn", {"*decoder*ffn.ffn.[1]*weight"}, 1.0 / mup.filter},
  };
  // 2.2's adjust_learning_rate named every decoder projection decoder_kernel.
  if (!gptj)
    groups.push_back({"decoder_kernel", {"*decoder*dense*weight", "*decoder*linear*weight"}, 1.0});
  return groups;
}

// What multiplies the language-model head's logits: muP's, else 2.2's output_logits_scale.
double output_logits_scale(const ModelParams& p, const Mup& mup) {
  if (!mup.on) return p.has("output_logits_scale") ? p.number("output_logits_scale") : 1.0;
  return mup_logits_scale(p, mup);
}

std::vector<double> numbers_in(const Node& map, const char* key) {
  std::vector<double> values;
  if (const Node* list = map.find(key); list && list->is_list()) {
    for (const Node& item : list->items())
      values.push_back(item.as_number());
  }
  return values;
}

nn::PositionScaling position_scaling(const ModelParams& p) {
  nn::PositionScaling scaling;
  std::string type = p.has("pos_scaling_type") ? p.text("pos_scaling_type") : "linear";
  scaling.factor = p.has("pos_scaling_factor") ? p.number("pos_scaling_factor") : 1.0;
  const Node* extra = p.find("pos_scaling_extra_args");
  Node args = extra && extra->is_map() ? *extra : Node::make_map();
  scaling.original_max_positions = args.number_or("original_max_position_embeddings", 8192.0);
  if (type == "linear") {
    scaling.kind =
        scaling.factor == 1.0 ? nn::PositionScaling::Kind::none : nn::PositionScaling::Kind::linear;
  } else if (type == "llama3") {
    scaling.kind = nn::PositionScaling::Kind::llama3;
    scaling.low_freq_factor = args.number_or("low_freq_factor", 1.0);
    scaling.high_freq_factor = args.number_or("high_freq_factor", 4.0);
  } else if (type == "yarn" || type == "YaRN") {
    scaling.kind = nn::PositionScaling::Kind::yarn;
    scaling.extrapolation_factor = args.number_or("extrapolation_factor", 1.0);
    scaling.beta_fast = args.number_or("beta_fast", 32.0);
    scaling.beta_slow = args.number_or("beta_slow", 1.0);
    scaling.mscale_a = args.number_or("mscale_a", 0.1);
    scaling.mscale_b = args.number_or("mscale_b", 1.0);
  } else {
    scaling.kind = nn::PositionScaling::Kind::longrope;
    scaling.long_factor = numbers_in(args, "long_factor");
    scaling.short_factor = numbers_in(args, "short_factor");
    scaling.long_mscale = args.number_or("long_mscale", 0.0);
    scaling.short_mscale = args.number_or("short_mscale", 0.0);
    scaling.attention_factor = args.number_or("attention_factor", 0.0);
  }
  return scaling;
}

nn::AttentionOptions attention_options(const ModelParams& p, const DecoderInitializers& init,
                                       const Mup& mup) {
  nn::AttentionOptions options;
  options.heads = p.integer("num_heads");
  options.kv_heads = decoder_kv_heads(p);
  options.causal = true;
  if (p.has("attention_sliding_window_length"))
    options.window = p.integer("attention_sliding_window_length");
  if (p.has("attention_sink_tokens")) options.sink_tokens = p.integer("attention_sink_tokens");
  options.score_scale = attention_score_scale(p, mup, p.integer("hidden_size") / options.heads);
  if (position_embedding_of(p) == "rotary") {
    nn::RotarySpec rotary;
    rotary.rotary_dim = decoder_rotary_dim(p);
    rotary.theta = p.number("rope_theta");
    rotary.max_positions = p.integer("max_position_embeddings");
    rotary.scaling = position_scaling(p);
    options.rotary = rotary;
  }
  options.projection_bias = p.flag("use_projection_bias_in_attention");
  options.output_bias = p.flag("use_ffn_bias_in_attention");
  options.dropout = dropout_or(p, "attention_dropout_rate");
  options.init = init.kernel;
  options.output_init = init.attention_output;
  return options;
}

struct DecoderLayerParts {
  const ModelParams& p;
  nn::StepContext& context;
  nn::AttentionOptions attention;
  nn::FeedForwardOptions feed_forward;
  std::string norm;
  double eps;
  double dropout;
  bool parallel;
};

// GPT-2's sequential pre-norm block, or GPT-J's parallel one: x + attn(norm1(x)) + ffn(norm1(x))
// (norm3 feeds the feed-forward when use_untied_layer_norm).
graph::Tensor decoder_layer(const nn::Scope& layer, const graph::Tensor& x,
                            const DecoderLayerParts& parts) {
  auto entered = layer.enter();
  graph::Tensor normed = nn::norm(parts.norm, layer.child("norm1"), x, parts.eps);
  graph::Tensor attended = nn::dropout(
      parts.context,
      nn::self_attention(layer.child("self_attn"), normed, std::nullopt, parts.attention),
      parts.dropout);
  if (parts.parallel) {
    graph::Tensor ffn_input = parts.p.flag("use_untied_layer_norm")
                                  ? nn::norm(parts.norm, layer.child("norm3"), x, parts.eps)
                                  : normed;
    return x + nn::feed_forward(layer.child("ffn"), ffn_input, parts.feed_forward) + attended;
  }
  graph::Tensor y = x + attended;
  return y + nn::feed_forward(layer.child("ffn"),
                              nn::norm(parts.norm, layer.child("norm3"), y, parts.eps),
                              parts.feed_forward);
}

// Cross entropy over the tokens the attention mask keeps, normalized as loss_scaling says.
ModelOutputs language_model_outputs(ModelBuild& b, const graph::Tensor& logits) {
  const ModelParams& p = b.params;
  std::int64_t batch = b.input("labels").dim(0);
  std::int64_t rows = logits.dim(0);
  graph::Tensor labels = graph::reshape(b.input("labels"), {rows});
  graph::Tensor mask =
      graph::cast(graph::reshape(b.input("attention_mask"), {rows}), graph::DType::f32);
  graph::Tensor total = graph::sum(nn::cross_entropy(logits, labels) * mask);
  ModelOutputs result;
  result.loss = p.text("loss_scaling") == "num_tokens"
                    ? b.context.average_over_field(total, mask, "attention_mask")
                    : b.context.average_over_samples(total, batch) * p.number("loss_weight");
  if (p.flag("compute_eval_metrics")) {
    graph::Tensor hits =
        graph::cast(graph::equal(graph::argmax(logits, -1), labels), graph::DType::f32);
    graph::Tensor tokens = graph::sum(mask);
    result.metrics.push_back(
        {"eval/lm_perplexity", ratio_metric({total}, {tokens}), nn::MetricAverage::exp_of_ratio});
    result.metrics.push_back({"eval/accuracy", ratio_metric({graph::sum(hits * mask)}, {tokens}),
                              nn::MetricAverage::ratio});
    if (b.hints.tokens_per_byte) {
      // Bits per token (the loss over ln 2) times the data's tokens per byte.
      graph::Tensor bits = total * (*b.hints.tokens_per_byte / std::numbers::ln2);
      result.metrics.push_back(
          {"eval/bits_per_byte", ratio_metric({bits}, {tokens}), nn::MetricAverage::ratio});
    }
  }
  return result;
}

}  // namespace

std::int64_t decoder_kv_heads(const ModelParams& p) {
  if (p.text("attention_module") != "multiquery_attention") return p.integer("num_heads");
  const Node* extra = p.find("extra_attention_params");
  const Node* groups = extra && extra->is_map() ? extra->find("num_kv_groups") : nullptr;
  return groups && groups->is_int() ? groups->as_int() : 1;
}

std::int64_t decoder_rotary_dim(const ModelParams& p) {
  if (p.has("rotary_dim")) return p.integer("rotary_dim");
  std::int64_t head = p.integer("hidden_size") / p.integer("num_heads");
  return static_cast<std::int64_t>(0.25 * static_cast<double>(head)) / 2 * 2;
}

ModelOutputs build_decoder(ModelBuild& b, const std::string& model_name, bool parallel_block) {
  const ModelParams& p = b.params;
  refuse_unsupported(p, model_name);
  nn::Scope model(b.context, "model");
  std::int64_t vocab = p.integer("vocab_size");
  std::int64_t hidden = p.integer("hidden_size");
  Mup mup = mup_of(p);
  DecoderInitializers init = decoder_initializers(p, parallel_block, mup);
  double eps = p.number("layer_norm_epsilon");
  std::string norm = p.text("norm_type");

  const graph::Tensor& ids = b.input("input_ids");
  std::int64_t rows = ids.dim(0) * ids.dim(1);
  nn::Scope embeddings = model.child("embedding_layer");
  std::int64_t positions =
      position_embedding_of(p) == "learned" ? p.integer("max_position_embeddings") : 0;
  nn::TokenEmbeddings embedded =
      nn::token_embeddings(embeddings, ids, vocab, positions, hidden, init.embedding);
  graph::Tensor x = embedded.embedded;
  {
    auto entered = embeddings.enter();
    if (p.flag("embedding_layer_norm")) x = nn::norm(norm, model.child("embedding_ln_f"), x, eps);
    if (p.has("embeddings_scale") && p.number("embeddings_scale") != 1.0)
      x = x * p.number("embeddings_scale");
    x = nn::dropout(b.context, x, dropout_or(p, "embedding_dropout_rate"));
  }
  double dropout =
      parallel_block ? dropout_or(p, "residual_dropout_rate") : p.number("dropout_rate");
  nn::FeedForwardOptions feed_forward;
  feed_forward.hidden = p.integer("filter_size");
  feed_forward.activation = p.text("nonlinearity");
  feed_forward.bias = p.flag("use_ffn_bias");
  feed_forward.dropout = dropout;
  feed_forward.init = init.ffn;
  feed_forward.output_init = init.ffn_output;
  DecoderLayerParts parts{
      p,       b.context,     attention_options(p, init, mup), feed_forward, norm, eps,
      dropout, parallel_block};
  nn::Scope decoder = model.child("transformer_decoder");
  for (std::int64_t i = 0; i < p.integer("num_hidden_layers"); ++i)
    x = decoder_layer(decoder.child("layers").child(i), x, parts);
  x = nn::norm(norm, decoder.child("norm"), x, eps);

  // The head's scope also holds the loss and metrics.
  nn::Scope head = model.child("lm_head");
  auto entered = head.enter();
  graph::Tensor flat = graph::reshape(x, {rows, hidden});
  graph::Tensor logits;
  if (p.flag("share_embedding_weights")) {
    logits = graph::matmul(flat, graph::swap_last_axes(embedded.word_table));
    if (p.flag("use_bias_in_output"))
      logits = logits + head.parameter("bias", {vocab}, nn::zeros_initializer());
  } else {
    logits = nn::linear(
        head, flat, vocab,
        {p.flag("use_bias_in_output"), nn::normal_initializer(p.number("initializer_range")),
         nn::zeros_initializer()});
  }
  double logits_scale = output_logits_scale(p, mup);
  if (logits_scale != 1.0) logits = logits * logits_scale;
  ModelOutputs outputs = language_model_outputs(b, logits);
  outputs.learning_rate_groups = decoder_learning_rate_groups(parallel_block, mup);
  return outputs;
}

BatchLayout gpt_layout(const ModelParams& params, std::int64_t batch, const DataHints& hints) {
  std::int64_t length =
      hints.max_sequence_length.value_or(params.integer("max_position_embeddings"));
  graph::Shape tokens = {batch, length};
  return {{"input_ids", {tokens, graph::DType::i32}},
          {"attention_mask", {tokens, graph::DType::i32}},
          {"labels", {tokens, graph::DType::i32}}};
}

}  // namespace csrun::models
