#include <cmath>

#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"
#include "mup.hpp"
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
      optional_field("ffn_initializer", initializer_type()),
      optional_field("ffn_output_layer_initializer", initializer_type()),
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

void check_grouped_heads(const ModelParams& params, Diagnostics& diagnostics) {
  if (params.text("attention_module") != "multiquery_attention") return;
  std::int64_t heads = params.integer("num_heads");
  const Node* extra = params.find("extra_attention_params");
  const Node* groups = extra && extra->is_map() ? extra->find("num_kv_groups") : nullptr;
  if (!groups) {
    warn_at(params, "attention_module",
            "multiquery_attention without extra_attention_params.num_kv_groups has one key/value "
            "head (multi-query attention), as the Model Zoo reads it",
            diagnostics);
    return;
  }
  if (!groups->is_int() || groups->as_int() < 1 || heads % groups->as_int() != 0) {
    report_at(params, "extra_attention_params",
              "extra_attention_params.num_kv_groups must be a positive integer that divides "
              "num_heads (" +
                  std::to_string(heads) + "); found " + groups->render(),
              diagnostics);
  }
}

// What rotary positions need: an even rotary_dim within the head, and the extra arguments of the
// scaling type.
void check_rotary(const ModelParams& params, Diagnostics& diagnostics) {
  const Node* position = params.find("position_embedding_type");
  if (!position || !position->is_string() || position->as_string() != "rotary") return;
  std::int64_t rotary = decoder_rotary_dim(params);
  if (rotary > head_dim(params) || rotary % 2 != 0 || rotary < 2) {
    report_at(params, params.has("rotary_dim") ? "rotary_dim" : "num_heads",
              "rotary_dim " + std::to_string(rotary) +
                  " must be even, at least 2 and at most the head size hidden_size / num_heads "
                  "= " +
                  std::to_string(head_dim(params)),
              diagnostics);
  }
  std::string type = params.has("pos_scaling_type") ? params.text("pos_scaling_type") : "linear";
  const Node* extra = params.find("pos_scaling_extra_args");
  bool has_original = extra && extra->is_map() && extra->find("original_max_position_embeddings");
  if ((type == "yarn" || type == "YaRN" || type == "longrope") && !has_original) {
    report_at(params, "pos_scaling_type",
              type + " scaling needs pos_scaling_extra_args.original_max_position_embeddings",
              diagnostics);
  }
  if (type != "longrope" || !extra || !extra->is_map()) return;
  for (const char* key : {"long_factor", "short_factor"}) {
    const Node* factors = extra->find(key);
    if (factors && factors->is_list() &&
        static_cast<std::int64_t>(factors->items().size()) == rotary / 2)
      continue;
    report_at(params, "pos_scaling_extra_args",
              std::string("longrope scaling needs pos_scaling_extra_args.") + key + ", a list of " +
                  std::to_string(rotary / 2) + " numbers (one per rotated pair)",
              diagnostics);
  }
}

// 2.2's output_logits_scale is what 2.3's converter turns into muP's bases: one or the other.
void check_mup_logits(const ModelParams& params, Diagnostics& diagnostics) {
  if (params.has("mup_base_hidden_size") && params.has("output_logits_scale")) {
    report_at(params, "output_logits_scale",
              "output_logits_scale is Release 2.2's muP; with mup_base_hidden_size give "
              "output_logits_alpha instead (2.3's converter sets it to output_logits_scale x "
              "hidden_size / mup_base_hidden_size)",
              diagnostics);
  }
}

void check_decoder(const ModelParams& params, const DataHints& hints, Diagnostics& diagnostics) {
  check_mup(params, diagnostics);
  check_mup_logits(params, diagnostics);
  if (!check_heads_divide_hidden(params, diagnostics)) return;
  check_grouped_heads(params, diagnostics);
  check_rotary(params, diagnostics);
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
  std::int64_t kv_width = decoder_kv_heads(params) * head_dim(params);
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
      {},  // buildable_decoder adds the builder
      {}};
}

ModelDefinition buildable_decoder(const std::string& name, const std::string& description,
                                  const DecoderDefaults& defaults, bool parallel_block) {
  ModelDefinition definition = decoder(name, description, defaults, parallel_block);
  definition.batch_layout = gpt_layout;
  definition.build = [name, parallel_block](ModelBuild& b) {
    return build_decoder(b, name, parallel_block);
  };
  return definition;
}

}  // namespace

ModelDefinition gpt2_definition() {
  return buildable_decoder("gpt2",
                           "GPT-2 decoder: learned positions, pre-LayerNorm, GELU, tied embeddings",
                           DecoderDefaults{}, false);
}

ModelDefinition gpt3_definition() {
  return buildable_decoder("gpt3",
                           "GPT-3 / Cerebras-GPT decoder (the GPT-2 network at larger sizes)",
                           DecoderDefaults{}, false);
}

ModelDefinition gptj_definition() {
  DecoderDefaults defaults;
  defaults.position_embedding = "rotary";
  defaults.share_embedding_weights = false;
  defaults.projection_bias = false;
  defaults.max_position_embeddings = 2048;
  return buildable_decoder("gptj",
                           "GPT-J decoder: rotary positions, parallel attention and feed-forward",
                           defaults, true);
}

// The Model Zoo's llama is its GPT-2 class under another name, with the GPT-2 defaults: a Llama
// config writes its rotary positions, RMSNorm, SwiGLU, untied head and no biases, as every
// shipped one does.
ModelDefinition llama_definition() {
  return buildable_decoder("llama",
                           "LLaMA decoder (the GPT-2 network with rotary positions, RMSNorm, "
                           "SwiGLU, grouped KV heads as configured)",
                           DecoderDefaults{}, false);
}

}  // namespace csrun::models
