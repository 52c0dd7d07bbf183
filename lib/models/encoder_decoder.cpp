#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

struct Seq2SeqDefaults {
  const char* position_embedding = "relative";
  const char* nonlinearity = "relu";
  const char* norm = "rmsnorm";
  bool ffn_bias = false;
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
      optional_field("use_pre_encoder_decoder_dropout", T::boolean()),
      optional_field("use_pre_encoder_decoder_layer_norm", T::boolean()),
      optional_field("use_dropout_outside_residual_path", T::boolean()),
      optional_field("use_transformer_initialization", T::boolean()),
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

void check_seq2seq(const ModelParams& params, const DataHints&, Diagnostics& diagnostics) {
  const Node* position = params.find("position_embedding_type");
  bool learned = position && position->is_string() && position->as_string().starts_with("learned");
  if (learned && !params.has("src_max_position_embeddings")) {
    report_at(params, "position_embedding_type",
              "learned position embeddings need src_max_position_embeddings (and "
              "tgt_max_position_embeddings)",
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
  bool bias = params.flag("use_ffn_bias");
  auto feed_forward = [&](const std::string& nonlinearity) {
    return (gated(nonlinearity) ? 3 : 2) * d * ff +
           (bias ? (gated(nonlinearity) ? 2 : 1) * ff + d : 0);
  };
  std::string encoder_activation = params.text("encoder_nonlinearity");
  std::string decoder_activation =
      params.has("decoder_nonlinearity") ? params.text("decoder_nonlinearity") : encoder_activation;
  std::int64_t attention =
      4 * d * inner + (params.flag("use_projection_bias_in_attention") ? 3 * inner + d : 0);
  std::int64_t encoder =
      encoder_layers * (attention + feed_forward(encoder_activation) + 2 * norm_size);
  std::int64_t decoder =
      decoder_layers * (2 * attention + feed_forward(decoder_activation) + 3 * norm_size);
  const Node* position = params.find("position_embedding_type");
  std::string positions = position && position->is_string() ? position->as_string() : "";
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

ModelDefinition seq2seq(const std::string& name, const std::string& description,
                        std::vector<std::string> processors, const Seq2SeqDefaults& defaults) {
  return ModelDefinition{
      name,
      description,
      std::move(processors),
      make_schema("model " + name, seq2seq_fields(defaults)),
      check_seq2seq,
      [](const ModelParams& params, const DataHints&) { return count_seq2seq(params); },
      {},  // no builder yet: checked and sized only
      {}};
}

}  // namespace

ModelDefinition t5_definition() {
  return seq2seq("t5", "T5 encoder-decoder: relative position buckets, RMS layer norm",
                 {"T5DynamicDataProcessor", "T5HDF5DataProcessor"}, Seq2SeqDefaults{});
}

ModelDefinition transformer_definition() {
  Seq2SeqDefaults defaults;
  defaults.position_embedding = "fixed";
  defaults.norm = "layernorm";
  defaults.ffn_bias = true;
  return seq2seq("transformer", "Transformer (Vaswani et al.) encoder-decoder for translation",
                 {"TransformerDynamicDataProcessor"}, defaults);
}

}  // namespace csrun::models
