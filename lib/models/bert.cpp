#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

std::vector<Field> encoder_fields(bool disable_nsp) {
  return {
      default_field("vocab_size", positive_integer(), value(30522)),
      default_field("hidden_size", positive_integer(), value(768)),
      default_field("num_hidden_layers", positive_integer(), value(12)),
      default_field("num_heads", positive_integer(), value(12)),
      default_field("filter_size", positive_integer(), value(3072)),
      default_field("encoder_nonlinearity", activation_type(), value("gelu")),
      default_field("pooler_nonlinearity", activation_type(), value("tanh")),
      default_field("mlm_nonlinearity", activation_type(), value("gelu")),
      default_field("dropout_rate", dropout_type(), value(0.1)),
      optional_field("attention_dropout_rate", dropout_type().or_null()),
      optional_field("embedding_dropout_rate", dropout_type().or_null()),
      default_field("max_position_embeddings", positive_integer(), value(512)),
      default_field("position_embedding_type", position_embedding_type(), value("learned")),
      default_field("layer_norm_epsilon", positive_number(), value(1e-5)),
      default_field("mlm_loss_weight", positive_number(), value(1.0)),
      default_field("mlm_loss_scaling",
                    T::choice({"num_masked", "batch_size", "precomputed_num_masked"}),
                    value("batch_size")),
      default_field("disable_nsp", T::boolean(), value(disable_nsp)),
      default_field("use_segment_embedding", T::boolean(), value(true)),
      default_field("num_segments", positive_integer(), value(2)),
      optional_field("pad_token_id", non_negative_integer()),
      default_field("share_embedding_weights", T::boolean(), value(true)),
      default_field("attention_type", T::choice({"dot_product", "scaled_dot_product"}),
                    value("scaled_dot_product")),
      optional_field("attention_kernel", T::string().or_null()),
      default_field("use_projection_bias_in_attention", T::boolean(), value(true)),
      default_field("use_ffn_bias_in_attention", T::boolean(), value(true)),
      default_field("use_ffn_bias", T::boolean(), value(true)),
      default_field("use_ffn_bias_in_mlm", T::boolean(), value(true)),
      default_field("use_output_bias_in_mlm", T::boolean(), value(true)),
      default_field("initializer_range", non_negative_number(), value(0.02)),
      optional_field("initializer", initializer_type()),
      optional_field("embedding_initializer", initializer_type()),
      default_field("compute_eval_metrics", T::boolean(), value(true)),
      earlier_release_field("use_position_embedding", "1.x", "position_embedding_type decides"),
      earlier_release_field("enable_vts", "1.x pipeline-mode", "variable tensor shapes"),
      earlier_release_field("boundary_casting", "1.x"),
      earlier_release_field("tf_summary", "TensorFlow-era"),
      precision_key_field("mixed_precision", "enabled"),
      precision_key_field("fp16_type", "fp16_type"),
      precision_key_field("use_bfloat16", "fp16_type: bfloat16"),
  };
}

std::vector<Field> linformer_fields() {
  std::vector<Field> fields = encoder_fields(true);
  fields.push_back(required_field("projected_dims", positive_integer()));
  fields.push_back(default_field(
      "attention_style",
      T::choice({"linformer-shared-kv", "linformer-shared-heads", "linformer-shared-layers"}),
      value("linformer-shared-kv")));
  fields.push_back(default_field("disable_attention", T::boolean(), value(false)));
  for (const char* key : {"dropout_seed", "weight_initialization_seed", "future_implementations"}) {
    fields.push_back(earlier_release_field(key, "TensorFlow-era"));
  }
  return fields;
}

void check_encoder(const ModelParams& params, const DataHints& hints, Diagnostics& diagnostics) {
  check_heads_divide_hidden(params, diagnostics);
  check_sequence_fits_positions(params, hints, diagnostics);
}

std::int64_t count_encoder(const ModelParams& params) {
  std::int64_t vocab = params.integer("vocab_size");
  std::int64_t hidden = params.integer("hidden_size");
  std::int64_t ffn = params.integer("filter_size");
  const Node* position = params.find("position_embedding_type");
  bool learned = position && position->is_string() && position->as_string() == "learned";
  std::int64_t embeddings =
      vocab * hidden + (learned ? params.integer("max_position_embeddings") * hidden : 0) +
      (params.flag("use_segment_embedding") ? params.integer("num_segments") * hidden : 0) +
      2 * hidden;
  std::int64_t attention = 4 * hidden * hidden +
                           (params.flag("use_projection_bias_in_attention") ? 3 * hidden : 0) +
                           (params.flag("use_ffn_bias_in_attention") ? hidden : 0);
  std::int64_t feed_forward = 2 * hidden * ffn + (params.flag("use_ffn_bias") ? ffn + hidden : 0);
  std::int64_t layer = attention + feed_forward + 4 * hidden;
  bool nsp = !params.flag("disable_nsp");
  std::int64_t pooler_and_nsp = nsp ? hidden * hidden + hidden + 2 * hidden + 2 : 0;
  std::int64_t mlm_head = hidden * hidden + (params.flag("use_ffn_bias_in_mlm") ? hidden : 0) +
                          2 * hidden +
                          (params.flag("share_embedding_weights") ? 0 : vocab * hidden) +
                          (params.flag("use_output_bias_in_mlm") ? vocab : 0);
  return embeddings + params.integer("num_hidden_layers") * layer + pooler_and_nsp + mlm_head;
}

std::int64_t count_linformer(const ModelParams& params, const DataHints& hints) {
  std::int64_t length =
      hints.max_sequence_length.value_or(params.integer("max_position_embeddings"));
  std::int64_t projection = params.integer("projected_dims") * length;
  std::string style = params.text("attention_style");
  std::int64_t layers = params.integer("num_hidden_layers");
  std::int64_t projections = style == "linformer-shared-layers"  ? projection
                             : style == "linformer-shared-heads" ? 2 * projection * layers
                                                                 : projection * layers;
  return count_encoder(params) + projections;
}

ModelDefinition encoder(const std::string& name, const std::string& description, bool disable_nsp) {
  return ModelDefinition{
      name,
      description,
      {"BertCSVDynamicMaskDataProcessor", "BertCSVDataProcessor", "BertHDF5DataProcessor"},
      make_schema("model " + name, encoder_fields(disable_nsp)),
      check_encoder,
      [](const ModelParams& params, const DataHints&) { return count_encoder(params); }};
}

}  // namespace

ModelDefinition bert_definition() {
  return encoder("bert", "BERT encoder with the masked-LM head (and NSP unless disable_nsp)",
                 false);
}

ModelDefinition roberta_definition() {
  return encoder("roberta", "RoBERTa: the BERT encoder and masked-LM head without NSP", true);
}

ModelDefinition linformer_definition() {
  return ModelDefinition{
      "linformer",
      "Linformer: a BERT-style encoder whose attention projects keys and values to "
      "projected_dims positions",
      {"BertMlmOnlyTfRecordsDynamicMaskProcessor", "BertMlmOnlyTfRecordsStaticMaskProcessor",
       "BertCSVDynamicMaskDataProcessor"},
      make_schema("model linformer", linformer_fields()),
      check_encoder,
      count_linformer};
}

}  // namespace csrun::models
