#include <cmath>

#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"
#include "nn/initializers.hpp"
#include "nn/layers.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

// The defaults that distinguish the decoder-only networks built on the Model Zoo's GPT-2 class.
struct DecoderDefaults {
  const char* nonlinearity = "gelu";
  const char* norm = "layernorm";
  const char* position_embedding = "learned";
  bool share_embedding_weights = true;
  bool projection_bias = true;
  bool ffn_bias = true;
  std::int64_t max_position_embeddings = 1024;
};

std::vector<Field> decoder_fields(const DecoderDefaults& d, bool parallel_block) {
  std::vector<Field> fields = {
      required_field("vocab_size", dimension()),
      default_field("hidden_size", dimension(), value(768)),
      default_field("num_hidden_layers", layer_count(), value(12)),
      default_field("num_heads", dimension(), value(12)),
      default_field("filter_size", dimension(), value(3072)),
      default_field("nonlinearity", activation_type(), value(d.nonlinearity)),
      default_field("max_position_embeddings", dimension(), value(d.max_position_embeddings)),
      default_field("position_embedding_type", position_embedding_type(),
                    value(d.position_embedding)),
      optional_field("position_embedding_offset", non_negative_integer()),
      optional_field("constant_pos_embedding", non_negative_integer().or_null()),
      optional_field("rel_distance_mode", T::choice({"default", "capped", "grouped"})),
      optional_field("rel_distance_extra_args", T::mapping().or_null()),
      default_field("share_embedding_weights", T::boolean(), value(d.share_embedding_weights)),
      default_field("embedding_layer_norm", T::boolean(), value(false)),
      default_field("dropout_rate", dropout_type(), value(0.1)),
      optional_field("attention_dropout_rate", dropout_type().or_null()),
      optional_field("embedding_dropout_rate", dropout_type().or_null()),
      default_field("layer_norm_epsilon", positive_number(), value(1e-5)),
      default_field("norm_type", norm_type(), value(d.norm)),
      default_field("norm_first", T::boolean(), value(true)),
      default_field("attention_type",
                    T::choice({"dot_product", "scaled_dot_product", "scaled_cosine"}),
                    value("scaled_dot_product")),
      default_field("attention_module", T::choice({"aiayn_attention", "multiquery_attention"}),
                    value("aiayn_attention")),
      optional_field("extra_attention_params", T::mapping().or_null()),
      default_field("use_projection_bias_in_attention", T::boolean(), value(d.projection_bias)),
      default_field("use_ffn_bias_in_attention", T::boolean(), value(d.projection_bias)),
      default_field("use_ffn_bias", T::boolean(), value(d.ffn_bias)),
      default_field("use_bias_in_output", T::boolean(), value(false)),
      default_field("attention_softmax_fp32", T::boolean(), value(true)),
      optional_field("attention_kernel", T::string().or_null()),
      optional_field("attention_sliding_window_length", positive_integer().or_null()),
      optional_field("fixed_sparse_attention", T::mapping().or_null()),
      default_field("initializer_range", non_negative_number(), value(0.02)),
      optional_field("initializer", initializer_type()),
      optional_field("embedding_initializer", initializer_type()),
      optional_field("output_layer_initializer", initializer_type()),
      optional_field("ffn_initializer", initializer_type().or_null()),
      optional_field("ffn_output_layer_initializer", initializer_type().or_null()),
      default_field("loss_scaling", T::choice({"num_tokens", "batch_size"}), value("num_tokens")),
      default_field("loss_weight", positive_number(), value(1.0)),
      default_field("compute_eval_metrics", T::boolean(), value(true)),
      optional_field("output_logits_scale", T::number().or_null()),
      optional_field("scale_qk_dot_by_layer_idx", T::boolean()),
      optional_field("lr_adjustment_groups", T::mapping().or_null()),
      optional_field("final_logit_softcapping", positive_number().or_null()),
      optional_field("attention_logit_softcapping", positive_number().or_null()),
      optional_field("moe", T::mapping().or_null()),
      optional_field("moe_params", T::mapping().or_null()),
      optional_field("attention_sink_tokens", non_negative_integer().or_null()),
      optional_field("sliding_window_every_other_decoder_layer", T::boolean()),
      optional_field("attention_vertical_column_spacing", positive_integer().or_null()),
      optional_field("attention_vertical_column_width", positive_integer().or_null()),
      optional_field("attention_chunk_size", positive_integer().or_null()),
      optional_field("attention_qk_norm_layer", norm_type().or_null()),
      default_field("attention_qk_norm_eps", positive_number(), value(1e-5)),
      optional_field("attention_inner_dim", dimension().or_null()),
      optional_field("memory_tokens", T::mapping().or_null()),
      optional_field("cross_attention_layers", T::list_of(non_negative_integer())),
      optional_field("num_extra_input_vocab_tokens", non_negative_integer()),
      optional_field("norm_first_sandwich", T::boolean()),
      optional_field("extra_ffn_params", T::mapping().or_null()),
      optional_field("scale_glu_initialization", T::boolean()),
      optional_field("lora_params", T::any_of({T::mapping(), T::list_of(T::mapping())}).or_null()),
      derived_field("dtype", "the precision section sets the compute dtype"),
      no_effect_field("use_experimental_flex_api",
                      "use_experimental_flex_api picks the Model Zoo's attention implementation; "
                      "it has no effect on what csrun computes"),
      no_effect_field("alibi_implementation",
                      "alibi_implementation (1.9) chose how ALiBi biases were materialized; it "
                      "has no effect on what csrun computes"),
      earlier_release_field("use_position_embedding", "1.x", "position_embedding_type decides"),
      earlier_release_field("enable_vts", "1.x pipeline-mode", "variable tensor shapes"),
      earlier_release_field("boundary_casting", "1.x"),
      earlier_release_field("tf_summary", "TensorFlow-era"),
      earlier_release_field("use_vsl", "TensorFlow-era",
                            "variable sequence length, a speed option of the CS-1/CS-2 compiler"),
  };
  for (std::vector<Field> more : {position_encoding_fields(), mup_fields(), generation_fields()}) {
    for (Field& field : more)
      fields.push_back(std::move(field));
  }
  fields.push_back(optional_field("scale_output_logits_by_d", T::boolean().or_null()));
  if (parallel_block) {
    fields.push_back(optional_field("residual_dropout_rate", dropout_type().or_null()));
    fields.push_back(default_field("use_untied_layer_norm", T::boolean(), value(false)));
  }
  return fields;
}

std::int64_t head_dim(const ModelParams& params) {
  return params.integer("hidden_size") / params.integer("num_heads");
}

std::int64_t kv_heads(const ModelParams& params) {
  if (params.text("attention_module") != "multiquery_attention") return params.integer("num_heads");
  const Node* extra = params.find("extra_attention_params");
  const Node* groups = extra && extra->is_map() ? extra->find("num_kv_groups") : nullptr;
  return groups && groups->is_int() ? groups->as_int() : 1;
}

void check_decoder(const ModelParams& params, const DataHints& hints, Diagnostics& diagnostics) {
  if (!check_heads_divide_hidden(params, diagnostics)) return;
  std::int64_t heads = params.integer("num_heads");
  if (params.text("attention_module") == "multiquery_attention") {
    const Node* extra = params.find("extra_attention_params");
    const Node* groups = extra && extra->is_map() ? extra->find("num_kv_groups") : nullptr;
    if (!groups || !groups->is_int() || groups->as_int() < 1 || heads % groups->as_int() != 0) {
      report_at(params, "extra_attention_params",
                "multiquery_attention needs extra_attention_params.num_kv_groups, a positive "
                "integer that divides num_heads (" +
                    std::to_string(heads) + ")",
                diagnostics);
    }
  }
  const Node* position = params.find("position_embedding_type");
  if (position && position->is_string() && position->as_string() == "rotary" &&
      params.has("rotary_dim")) {
    std::int64_t rotary = params.integer("rotary_dim");
    if (rotary > head_dim(params) || rotary % 2 != 0) {
      report_at(params, "rotary_dim",
                "rotary_dim " + std::to_string(rotary) +
                    " must be even and at most the head "
                    "size hidden_size / num_heads = " +
                    std::to_string(head_dim(params)),
                diagnostics);
    }
  }
  check_sequence_fits_positions(params, hints, diagnostics);
  if (params.text("loss_scaling") == "num_tokens" && params.number("loss_weight") != 1.0) {
    warn_at(params, "loss_weight",
            "loss_weight is forced to 1.0 with loss_scaling: num_tokens (use loss_scaling: "
            "batch_size to weight the loss)",
            diagnostics);
  }
}

std::int64_t count_decoder(const ModelParams& params, bool parallel_block) {
  std::int64_t vocab = params.integer("vocab_size");
  std::int64_t hidden = params.integer("hidden_size");
  std::int64_t ffn = params.integer("filter_size");
  std::int64_t kv_width = kv_heads(params) * head_dim(params);
  std::string norm = params.text("norm_type");
  bool gated = is_gated_activation(params.text("nonlinearity"));
  const Node* position = params.find("position_embedding_type");
  bool learned = position && position->is_string() && position->as_string() == "learned";

  std::int64_t embeddings =
      vocab * hidden + (learned ? params.integer("max_position_embeddings") * hidden : 0) +
      (params.flag("embedding_layer_norm") ? norm_parameters(norm, hidden) : 0);
  std::int64_t attention =
      2 * hidden * hidden + 2 * hidden * kv_width +
      (params.flag("use_projection_bias_in_attention") ? hidden + 2 * kv_width : 0) +
      (params.flag("use_ffn_bias_in_attention") ? hidden : 0);
  std::int64_t feed_forward = (gated ? 3 : 2) * hidden * ffn +
                              (params.flag("use_ffn_bias") ? (gated ? 2 : 1) * ffn + hidden : 0);
  bool single_norm = parallel_block && !params.flag("use_untied_layer_norm");
  std::int64_t norms = (single_norm ? 1 : 2) * norm_parameters(norm, hidden);
  std::int64_t head = (params.flag("share_embedding_weights") ? 0 : vocab * hidden) +
                      (params.flag("use_bias_in_output") ? vocab : 0);
  return embeddings + params.integer("num_hidden_layers") * (attention + feed_forward + norms) +
         norm_parameters(norm, hidden) + head;
}

std::int64_t sequence_length(const ModelParams& params, const DataHints& hints) {
  return hints.max_sequence_length.value_or(params.integer("max_position_embeddings"));
}

BatchLayout gpt_layout(const ModelParams& params, std::int64_t batch, const DataHints& hints) {
  graph::Shape tokens = {batch, sequence_length(params, hints)};
  return {{"input_ids", {tokens, graph::DType::i32}},
          {"attention_mask", {tokens, graph::DType::i32}},
          {"labels", {tokens, graph::DType::i32}}};
}

double dropout_or(const ModelParams& params, const char* key) {
  return params.has(key) ? params.number(key) : params.number("dropout_rate");
}

void refuse_unsupported(const ModelParams& p, const std::string& model) {
  refuse_if_set(
      p, model,
      {"rotary_dim", "pos_scaling_factor", "pos_scaling_type", "pos_scaling_extra_args",
       "alibi_trainable_slopes", "num_relative_attention_buckets", "fixed_sparse_attention",
       "attention_sliding_window_length", "attention_logit_softcapping", "final_logit_softcapping",
       "moe", "moe_params", "output_logits_scale", "attention_sink_tokens",
       "extra_attention_params", "lr_adjustment_groups"});
  refuse_unless_off(
      p, model,
      {"pad_rope", "constant_pos_embedding", "rel_distance_mode", "rel_distance_extra_args",
       "sliding_window_every_other_decoder_layer", "attention_vertical_column_spacing",
       "attention_vertical_column_width", "attention_chunk_size", "attention_qk_norm_layer",
       "attention_inner_dim", "memory_tokens", "cross_attention_layers",
       "num_extra_input_vocab_tokens", "norm_first_sandwich", "extra_ffn_params",
       "scale_glu_initialization", "lora_params"});
  refuse_mup(p, model);
  const Node* position = p.find("position_embedding_type");
  bool learned_or_none = !position->is_string() || position->as_string() == "learned";
  refuse_unless(p, model, "position_embedding_type", learned_or_none, "learned, null");
  refuse_unless(p, model, "attention_module", p.text("attention_module") == "aiayn_attention",
                "aiayn_attention");
  refuse_unless(p, model, "attention_type", p.text("attention_type") != "scaled_cosine",
                "scaled_dot_product, dot_product");
  refuse_unless(p, model, "nonlinearity", nn::is_supported_activation(p.text("nonlinearity")),
                "gelu, gelu_new, relu, silu, ... (not the gated swiglu, geglu, reglu)");
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
}

// The Model Zoo's GPT2LMHeadModel: embeddings, pre-LayerNorm decoder layers with causal
// self-attention, a final norm and the language-model head (tied to the word embeddings by
// default); cross entropy over the tokens the attention mask keeps.
ModelOutputs build_gpt(ModelBuild& b, const std::string& model_name) {
  const ModelParams& p = b.params;
  refuse_unsupported(p, model_name);
  nn::Scope model(b.context, "model");
  std::int64_t vocab = p.integer("vocab_size");
  std::int64_t hidden = p.integer("hidden_size");
  std::int64_t layers = p.integer("num_hidden_layers");
  double range = p.number("initializer_range");
  graph::Initializer init =
      nn::initializer_from(p.find("initializer"), nn::normal_initializer(range));
  graph::Initializer embedding_init = nn::initializer_from(p.find("embedding_initializer"), init);
  graph::Initializer output_init = nn::initializer_from(
      p.find("output_layer_initializer"),
      nn::normal_initializer(range / std::sqrt(2.0 * static_cast<double>(layers))));
  graph::Initializer ffn_init = nn::initializer_from(p.find("ffn_initializer"), init);
  graph::Initializer ffn_output_init =
      nn::initializer_from(p.find("ffn_output_layer_initializer"), output_init);
  double eps = p.number("layer_norm_epsilon");
  std::string norm = p.text("norm_type");

  const graph::Tensor& ids = b.input("input_ids");
  std::int64_t batch = ids.dim(0);
  std::int64_t length = ids.dim(1);
  nn::Scope embeddings = model.child("embedding_layer");
  std::int64_t positions =
      p.find("position_embedding_type")->is_string() ? p.integer("max_position_embeddings") : 0;
  nn::TokenEmbeddings embedded =
      nn::token_embeddings(embeddings, ids, vocab, positions, hidden, embedding_init);
  graph::Tensor word_table = embedded.word_table;
  graph::Tensor x = embedded.embedded;
  {
    auto entered = embeddings.enter();
    if (p.flag("embedding_layer_norm")) x = nn::norm(norm, model.child("embedding_ln_f"), x, eps);
    x = nn::dropout(b.context, x, dropout_or(p, "embedding_dropout_rate"));
  }

  nn::AttentionOptions attention{p.integer("num_heads"),
                                 true,
                                 p.text("attention_type") == "scaled_dot_product",
                                 p.flag("use_projection_bias_in_attention"),
                                 p.flag("use_ffn_bias_in_attention"),
                                 dropout_or(p, "attention_dropout_rate"),
                                 init,
                                 output_init};
  double dropout = p.number("dropout_rate");
  for (std::int64_t i = 0; i < layers; ++i) {
    nn::Scope layer = model.child("transformer_decoder").child("layers").child(i);
    auto entered = layer.enter();
    graph::Tensor attended =
        nn::self_attention(layer.child("self_attn"), nn::norm(norm, layer.child("norm1"), x, eps),
                           std::nullopt, attention);
    x = x + nn::dropout(b.context, attended, dropout);
    graph::Tensor transformed = nn::feed_forward(
        layer.child("ffn"), nn::norm(norm, layer.child("norm3"), x, eps), p.integer("filter_size"),
        p.text("nonlinearity"), p.flag("use_ffn_bias"), dropout, ffn_init, ffn_output_init);
    x = x + transformed;
  }
  x = nn::norm(norm, model.child("transformer_decoder").child("norm"), x, eps);

  // The head's scope also holds the loss and metrics.
  nn::Scope head = model.child("lm_head");
  auto entered = head.enter();
  graph::Tensor rows = graph::reshape(x, {batch * length, hidden});
  graph::Tensor logits;
  if (p.flag("share_embedding_weights")) {
    logits = graph::matmul(rows, graph::swap_last_axes(word_table));
    if (p.flag("use_bias_in_output"))
      logits = logits + head.parameter("bias", {vocab}, nn::zeros_initializer());
  } else {
    logits = nn::linear(head, rows, vocab,
                        {p.flag("use_bias_in_output"), init, nn::zeros_initializer()});
  }
  graph::Tensor labels = graph::reshape(b.input("labels"), {batch * length});
  graph::Tensor mask =
      graph::cast(graph::reshape(b.input("attention_mask"), {batch * length}), graph::DType::f32);
  graph::Tensor total = graph::sum(nn::cross_entropy(logits, labels) * mask);
  graph::Tensor tokens = graph::maximum(graph::sum(mask), 1.0);
  ModelOutputs result;
  result.loss = p.text("loss_scaling") == "num_tokens"
                    ? total / tokens
                    : total / static_cast<double>(batch) * p.number("loss_weight");
  if (p.flag("compute_eval_metrics")) {
    graph::Tensor hits =
        graph::cast(graph::equal(graph::argmax(logits, -1), labels), graph::DType::f32);
    result.metrics.push_back(
        {"eval/lm_perplexity", graph::exp(total / tokens), nn::MetricAverage::geometric});
    result.metrics.push_back({"eval/accuracy", graph::sum(hits * mask) / tokens});
  }
  return result;
}

ModelDefinition decoder(const std::string& name, const std::string& description,
                        const DecoderDefaults& defaults, bool parallel_block) {
  return ModelDefinition{
      name,
      description,
      {"GptHDF5DataProcessor", "GptHDF5MapDataProcessor", "GptTfRecordsProcessor"},
      make_schema("model " + name, decoder_fields(defaults, parallel_block)),
      check_decoder,
      [parallel_block](const ModelParams& params, const DataHints&) {
        return count_decoder(params, parallel_block);
      },
      {},  // buildable_decoder adds the builder for the networks csrun traces
      {}};
}

// GPT-2 and GPT-3 are the same network; csrun traces both.
ModelDefinition buildable_decoder(const std::string& name, const std::string& description) {
  ModelDefinition definition = decoder(name, description, DecoderDefaults{}, false);
  definition.batch_layout = gpt_layout;
  definition.build = [name](ModelBuild& b) { return build_gpt(b, name); };
  return definition;
}

}  // namespace

ModelDefinition gpt2_definition() {
  return buildable_decoder(
      "gpt2", "GPT-2 decoder: learned positions, pre-LayerNorm, GELU, tied embeddings");
}

ModelDefinition gpt3_definition() {
  return buildable_decoder("gpt3",
                           "GPT-3 / Cerebras-GPT decoder (the GPT-2 network at larger sizes)");
}

ModelDefinition gptj_definition() {
  DecoderDefaults defaults;
  defaults.position_embedding = "rotary";
  defaults.share_embedding_weights = false;
  defaults.projection_bias = false;
  defaults.max_position_embeddings = 2048;
  return decoder("gptj", "GPT-J decoder: rotary positions, parallel attention and feed-forward",
                 defaults, true);
}

ModelDefinition llama_definition() {
  DecoderDefaults defaults;
  defaults.nonlinearity = "swiglu";
  defaults.norm = "rmsnorm";
  defaults.position_embedding = "rotary";
  defaults.share_embedding_weights = false;
  defaults.projection_bias = false;
  defaults.ffn_bias = false;
  defaults.max_position_embeddings = 2048;
  return decoder("llama", "LLaMA decoder: RMSNorm, SwiGLU, rotary positions, grouped KV heads",
                 defaults, false);
}

}  // namespace csrun::models
