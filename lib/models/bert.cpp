#include <cmath>

#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"
#include "mup.hpp"
#include "nn/initializers.hpp"
#include "nn/layers.hpp"

namespace csrun::models {

using namespace config;
using T = ValueType;

std::vector<Field> bert_encoder_fields(bool disable_nsp) {
  std::vector<Field> fields = {
      default_field("vocab_size", dimension(), value(30522)),
      default_field("hidden_size", dimension(), value(768)),
      default_field("num_hidden_layers", layer_count(), value(12)),
      default_field("num_heads", dimension(), value(12)),
      default_field("filter_size", dimension(), value(3072)),
      default_field("encoder_nonlinearity", activation_type(), value("gelu")),
      default_field("pooler_nonlinearity", activation_type(), value("tanh")),
      default_field("mlm_nonlinearity", activation_type(), value("gelu")),
      default_field("dropout_rate", dropout_type(), value(0.1)),
      optional_field("attention_dropout_rate", dropout_type().or_null()),
      optional_field("embedding_dropout_rate", dropout_type().or_null()),
      default_field("max_position_embeddings", dimension(), value(512)),
      default_field("position_embedding_type", position_embedding_type(), value("learned")),
      default_field("layer_norm_epsilon", positive_number(), value(1e-5)),
      default_field("mlm_loss_weight", positive_number(), value(1.0)),
      default_field("mlm_loss_scaling",
                    T::choice({"num_masked", "batch_size", "precomputed_num_masked"}),
                    value("batch_size")),
      default_field("disable_nsp", T::boolean(), value(disable_nsp)),
      default_field("use_segment_embedding", T::boolean(), value(true)),
      default_field("num_segments", dimension(), value(2)),
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
      // 2.4's names of the initializers: default_initializer is initializer, embeddings_ the
      // embedding one; the position and segment tables may have their own.
      optional_field("default_initializer", initializer_type()),
      optional_field("embeddings_initializer", initializer_type()),
      optional_field("position_embeddings_initializer", initializer_type()),
      optional_field("segment_embeddings_initializer", initializer_type()),
      default_field("compute_eval_metrics", T::boolean(), value(true)),
      default_field("attention_softmax_fp32", T::boolean(), value(true)),
      default_field("mask_padding_in_positional_embed", T::boolean(), value(false)),
      optional_field("label_smoothing", T::number({0.0, 1.0, false, true})),
      optional_field("num_classes", dimension()),
      default_field("attention_module", T::choice({"aiayn_attention", "multiquery_attention"}),
                    value("aiayn_attention")),
      optional_field("extra_attention_params", T::mapping().or_null()),
      optional_field("freeze_ffn_bias_in_glu", T::boolean()),
      optional_field("scale_output_logits_by_d", T::boolean().or_null()),
      optional_field("lr_adjustment_groups", T::mapping().or_null()),
      default_field("norm_first", T::boolean(), value(false)),
      default_field("embedding_layer_norm", T::boolean(), value(true)),
      default_field("use_final_layer_norm", T::boolean(), value(false)),
      optional_field("lora_params", T::any_of({T::mapping(), T::list_of(T::mapping())}).or_null()),
      derived_field("nonlinearity", "encoder_nonlinearity decides"),
      derived_field("embedding_pad_token_id", "pad_token_id decides"),
      derived_field("add_pooling_layer", "disable_nsp decides"),
      derived_field("dtype", "the precision section sets the compute dtype"),
      earlier_release_field("to_float16", "1.x-2.2", "the precision section decides"),
      // Release 1.6's TensorFlow BERT.
      optional_field("embedding_size", dimension()),
      optional_field("use_pre_normalization", T::boolean()),
      optional_field("num_cls_classes", dimension()),
      optional_field("pooler_type", T::string()),
      earlier_release_field("enable_gpu_optimizations", "TensorFlow-era", "a GPU-only switch"),
      earlier_release_field("multireplica", "TensorFlow-era", "replicas are runconfig.num_csx"),
      earlier_release_field("use_position_embedding", "1.x", "position_embedding_type decides"),
      earlier_release_field("enable_vts", "1.x pipeline-mode", "variable tensor shapes"),
      earlier_release_field("boundary_casting", "1.x"),
      earlier_release_field("tf_summary", "TensorFlow-era"),
      earlier_release_field("use_vsl", "TensorFlow-era",
                            "variable sequence length, a speed option of the CS-1/CS-2 compiler"),
      earlier_release_field("dropout_seed", "TensorFlow-era", "runconfig.seed seeds the run"),
      earlier_release_field("weight_initialization_seed", "TensorFlow-era",
                            "runconfig.seed seeds the run"),
  };
  for (std::vector<Field> more : {position_encoding_fields(), mup_fields()}) {
    for (Field& field : more)
      fields.push_back(std::move(field));
  }
  return fields;
}

void check_bert_encoder(const ModelParams& params, const DataHints& hints,
                        Diagnostics& diagnostics) {
  check_mup(params, diagnostics);
  check_heads_divide_hidden(params, diagnostics);
  check_sequence_fits_positions(params, hints, diagnostics);
}

namespace {

std::int64_t bert_pad_id(const ModelParams& params) {
  return params.has("pad_token_id") ? params.integer("pad_token_id") : 0;
}

// With mask_padding_in_positional_embed the Model Zoo offsets the positions by the pad id and
// keeps a row for the padding.
std::int64_t bert_position_rows(const ModelParams& params) {
  std::int64_t rows = params.integer("max_position_embeddings");
  if (!params.flag("mask_padding_in_positional_embed")) return rows;
  return rows + bert_pad_id(params) + 1;
}

}  // namespace

std::int64_t count_bert_encoder_body(const ModelParams& params) {
  std::int64_t vocab = params.integer("vocab_size");
  std::int64_t hidden = params.integer("hidden_size");
  std::int64_t ffn = params.integer("filter_size");
  const Node* position = params.find("position_embedding_type");
  bool learned = position && position->is_string() && position->as_string() == "learned";
  std::int64_t embeddings =
      vocab * hidden + (learned ? bert_position_rows(params) * hidden : 0) +
      (params.flag("use_segment_embedding") ? params.integer("num_segments") * hidden : 0) +
      2 * hidden;
  std::int64_t attention = 4 * hidden * hidden +
                           (params.flag("use_projection_bias_in_attention") ? 3 * hidden : 0) +
                           (params.flag("use_ffn_bias_in_attention") ? hidden : 0);
  std::int64_t feed_forward = 2 * hidden * ffn + (params.flag("use_ffn_bias") ? ffn + hidden : 0);
  std::int64_t layer = attention + feed_forward + 4 * hidden;
  return embeddings + params.integer("num_hidden_layers") * layer;
}

namespace {

std::vector<Field> linformer_fields() {
  std::vector<Field> fields = bert_encoder_fields(true);
  fields.push_back(required_field("projected_dims", dimension()));
  fields.push_back(default_field(
      "attention_style",
      T::choice({"linformer-shared-kv", "linformer-shared-heads", "linformer-shared-layers"}),
      value("linformer-shared-kv")));
  fields.push_back(no_effect_field(
      "disable_attention",
      "disable_attention is not read by the Model Zoo's Linformer; it has no effect"));
  fields.push_back(earlier_release_field("future_implementations", "TensorFlow-era"));
  return fields;
}

std::int64_t count_encoder(const ModelParams& params) {
  std::int64_t vocab = params.integer("vocab_size");
  std::int64_t hidden = params.integer("hidden_size");
  bool nsp = !params.flag("disable_nsp");
  std::int64_t pooler_and_nsp = nsp ? hidden * hidden + hidden + 2 * hidden + 2 : 0;
  std::int64_t mlm_head = hidden * hidden + (params.flag("use_ffn_bias_in_mlm") ? hidden : 0) +
                          2 * hidden +
                          (params.flag("share_embedding_weights") ? 0 : vocab * hidden) +
                          (params.flag("use_output_bias_in_mlm") ? vocab : 0);
  return count_bert_encoder_body(params) + pooler_and_nsp + mlm_head;
}

// Each layer's key projection (and value projection with linformer-shared-heads): a weight
// [projected_dims, length] and a bias; none with linformer-shared-layers, which the Model Zoo
// runs as full attention.
std::int64_t count_linformer(const ModelParams& params, const DataHints& hints) {
  std::int64_t length =
      hints.max_sequence_length.value_or(params.integer("max_position_embeddings"));
  std::int64_t projected = params.integer("projected_dims");
  std::int64_t projection = projected * length + projected;
  std::string style = params.text("attention_style");
  std::int64_t per_layer = style == "linformer-shared-layers"  ? 0
                           : style == "linformer-shared-heads" ? 2 * projection
                                                               : projection;
  return count_encoder(params) + per_layer * params.integer("num_hidden_layers");
}

void check_linformer(const ModelParams& params, const DataHints& hints, Diagnostics& diagnostics) {
  check_bert_encoder(params, hints, diagnostics);
  if (params.text("attention_style") == "linformer-shared-layers") {
    warn_at(params, "attention_style",
            "the Model Zoo's Linformer projects keys and values only with linformer-shared-kv and "
            "linformer-shared-heads; linformer-shared-layers runs full attention (without a "
            "padding mask), and so does csrun",
            diagnostics);
  }
}

std::int64_t bert_length(const ModelParams& params, const DataHints& hints) {
  return hints.max_sequence_length.value_or(params.integer("max_position_embeddings"));
}

// Masked positions per sequence: the data's max_predictions_per_seq, else 15% of the length.
std::int64_t bert_predictions(const ModelParams& params, const DataHints& hints) {
  if (hints.max_predictions) return *hints.max_predictions;
  return std::max<std::int64_t>(
      1,
      static_cast<std::int64_t>(std::ceil(0.15 * static_cast<double>(bert_length(params, hints)))));
}

BatchLayout bert_layout(const ModelParams& params, std::int64_t batch, const DataHints& hints) {
  graph::Shape tokens = {batch, bert_length(params, hints)};
  graph::Shape masked = {batch, bert_predictions(params, hints)};
  std::int64_t positions = hints.max_sequence_length.value_or(masked.back());
  BatchLayout layout = {{"input_ids", {tokens, graph::DType::i32}, 0},
                        {"attention_mask", {tokens, graph::DType::i32}, 0},
                        {"token_type_ids", {tokens, graph::DType::i32}, 2},
                        {"masked_lm_positions", {masked, graph::DType::i32}, positions},
                        {"masked_lm_labels", {masked, graph::DType::i32}, 0},
                        {"masked_lm_weights", {masked, graph::DType::f32}, 0}};
  if (!params.flag("disable_nsp"))
    layout.push_back({"next_sentence_label", {{batch}, graph::DType::i32}, 2});
  return layout;
}

double attention_dropout(const ModelParams& p) {
  return p.has("attention_dropout_rate") ? p.number("attention_dropout_rate")
                                         : p.number("dropout_rate");
}

void refuse_unsupported_encoder(const ModelParams& p, const std::string& model_name) {
  const Node* position = p.find("position_embedding_type");
  refuse_unless(p, model_name, "position_embedding_type",
                position->is_string() && position->as_string() == "learned", "learned");
  for (const char* key : {"encoder_nonlinearity", "pooler_nonlinearity", "mlm_nonlinearity"}) {
    refuse_unless(p, model_name, key, nn::is_supported_activation(p.text(key)),
                  "gelu, relu, tanh, ...");
  }
  refuse_unless(p, model_name, "attention_kernel",
                !p.has("attention_kernel") || p.text("attention_kernel") == "default", "default");
  refuse_if_set(p, model_name,
                {"rotary_dim", "pos_scaling_factor", "pos_scaling_type", "pos_scaling_extra_args",
                 "num_relative_attention_buckets", "extra_attention_params", "lr_adjustment_groups",
                 "position_embeddings_initializer", "segment_embeddings_initializer"});
  refuse_unless_off(p, model_name,
                    {"alibi_trainable_slopes", "pad_rope", "fold_rope_consts", "label_smoothing",
                     "freeze_ffn_bias_in_glu", "norm_first", "use_final_layer_norm", "lora_params",
                     "use_pre_normalization"});
  refuse_unless(p, model_name, "attention_module", p.text("attention_module") == "aiayn_attention",
                "aiayn_attention");
  refuse_unless(p, model_name, "embedding_layer_norm", p.flag("embedding_layer_norm"), "true");
  refuse_unless(p, model_name, "embedding_size",
                !p.has("embedding_size") || p.integer("embedding_size") == p.integer("hidden_size"),
                "hidden_size");
  refuse_unless(p, model_name, "pooler_type",
                !p.has("pooler_type") || p.text("pooler_type") == "first", "first");
}

}  // namespace

namespace {

// The positions the Model Zoo looks up with mask_padding_in_positional_embed: 1 + the index for a
// token, 0 for padding, plus the pad id. The index counts the padding too, so a sequence padded
// anywhere but at its end gets other positions than Hugging Face's RoBERTa gives it.
graph::Tensor padding_masked_positions(const graph::Tensor& ids, std::int64_t pad) {
  graph::Tensor index = graph::iota(ids.graph(), {ids.dim(0), ids.dim(1)}, 1);
  auto offset = static_cast<double>(pad);
  graph::Tensor position = index + (1.0 + offset);
  return graph::where(graph::not_equal(ids, offset), position, offset);
}

}  // namespace

BertEncoding encode_bert(ModelBuild& b, const nn::Scope& encoder, const std::string& model_name,
                         const Mup& mup) {
  const ModelParams& p = b.params;
  refuse_unsupported_encoder(p, model_name);
  std::int64_t vocab = p.integer("vocab_size");
  std::int64_t hidden = p.integer("hidden_size");
  double eps = p.number("layer_norm_epsilon");
  double dropout = p.number("dropout_rate");
  BertEncoding result;
  result.init = nn::initializer_from(
      p.find("initializer"), nn::truncated_normal_initializer(p.number("initializer_range")));
  result.init = nn::initializer_from(p.find("default_initializer"), result.init);
  graph::Initializer embedding_init =
      nn::initializer_from(p.find("embedding_initializer"), result.init);
  embedding_init = nn::initializer_from(p.find("embeddings_initializer"), embedding_init);

  const graph::Tensor& ids = b.input("input_ids");
  std::optional<graph::Tensor> positions;
  if (p.flag("mask_padding_in_positional_embed"))
    positions = padding_masked_positions(ids, bert_pad_id(p));
  nn::Scope embeddings = encoder.child("embedding_layer");
  nn::TokenEmbeddings tokens = nn::token_embeddings(embeddings, ids, vocab, bert_position_rows(p),
                                                    hidden, embedding_init, positions);
  result.word_table = tokens.word_table;
  graph::Tensor x = tokens.embedded;
  {
    auto entered = embeddings.enter();
    if (p.flag("use_segment_embedding")) {
      x = x + graph::gather(nn::embedding_table(embeddings.child("segment_embeddings"),
                                                p.integer("num_segments"), hidden, embedding_init),
                            b.input("token_type_ids"));
    }
    // Unlike the decoders, BERT scales the embeddings before their norm.
    if (p.has("embeddings_scale") && p.number("embeddings_scale") != 1.0)
      x = x * p.number("embeddings_scale");
    double embedding_dropout =
        p.has("embedding_dropout_rate") ? p.number("embedding_dropout_rate") : dropout;
    x = nn::dropout(b.context, nn::layer_norm(encoder.child("embed_ln_f"), x, eps),
                    embedding_dropout);
  }

  nn::AttentionOptions attention;
  attention.heads = p.integer("num_heads");
  attention.score_scale = attention_score_scale(p, mup, hidden / attention.heads);
  attention.projection_bias = p.flag("use_projection_bias_in_attention");
  attention.output_bias = p.flag("use_ffn_bias_in_attention");
  attention.dropout = attention_dropout(p);
  attention.init = result.init;
  attention.output_init = result.init;
  std::optional<graph::Tensor> keep = b.input("attention_mask");
  // The Model Zoo's Linformer (its params have projected_dims) masks no padding, and projects keys
  // and values in two of its styles (each layer its own projections; linformer-shared-layers
  // runs full attention there).
  if (p.has("projected_dims")) {
    keep.reset();
    std::string style = p.text("attention_style");
    if (style != "linformer-shared-layers") {
      attention.projected_length = p.integer("projected_dims");
      attention.shared_projection = style == "linformer-shared-kv";
    }
  }
  for (std::int64_t i = 0; i < p.integer("num_hidden_layers"); ++i) {
    nn::Scope layer = encoder.child("transformer_encoder").child("layers").child(i);
    auto entered = layer.enter();
    graph::Tensor attended = nn::self_attention(layer.child("self_attn"), x, keep, attention);
    x = nn::layer_norm(layer.child("norm1"), x + nn::dropout(b.context, attended, dropout), eps);
    graph::Tensor transformed =
        nn::feed_forward(layer.child("ffn"), x,
                         {p.integer("filter_size"), p.text("encoder_nonlinearity"),
                          p.flag("use_ffn_bias"), dropout, result.init, result.init});
    x = nn::layer_norm(layer.child("norm2"), x + transformed, eps);
  }
  result.sequence = x;
  return result;
}

graph::Tensor bert_pooler(const ModelParams& p, const nn::Scope& encoder,
                          const BertEncoding& encoding) {
  const graph::Tensor& x = encoding.sequence;
  std::int64_t hidden = x.dim(2);
  graph::Tensor first = graph::reshape(graph::slice(x, 1, 0, 1), {x.dim(0), hidden});
  return nn::activation(
      p.text("pooler_nonlinearity"),
      nn::linear(
          encoder.child("pooler").child("pooler").child("ffn").child(0).child("linear_layer"),
          first, hidden, {true, encoding.init, nn::zeros_initializer()}));
}

namespace {

// The Model Zoo's learning-rate groups of BERT; muP runs the encoder's projections and the pooler
// at the base model's rate divided by the width (the second feed-forward layer's by the filter
// width).
std::vector<LearningRateGroup> bert_learning_rate_groups(const Mup& mup) {
  return {
      {"embedding", {"*embedding*weight"}, 1.0},
      {"encoder_attention", {"*transformer_encoder*attn*dense*weight"}, 1.0 / mup.width},
      {"encoder_input_ffn", {"*transformer_encoder*ffn.ffn.[!1]*weight"}, 1.0 / mup.width},
      {"encoder_output_ffn", {"*transformer_encoder*ffn.ffn.[1]*weight"}, 1.0 / mup.filter},
      {"pooler", {"*pooler*weight"}, 1.0 / mup.width},
  };
}

// The Model Zoo's BERT pre-training model: embeddings (word, position, segment) with a layer
// norm, post-LayerNorm encoder layers attending to the unpadded positions, the masked-LM head
// (dense, activation, norm, the word embeddings as decoder) and, unless disable_nsp, the pooler
// and next-sentence head.
ModelOutputs build_bert(ModelBuild& b, const std::string& model_name) {
  const ModelParams& p = b.params;
  for (const char* classes : {"num_classes", "num_cls_classes"}) {
    refuse_unless(p, model_name, classes, !p.has(classes) || p.integer(classes) == 2,
                  "2 (next-sentence prediction)");
  }
  nn::Scope model(b.context, "model");
  nn::Scope encoder = model.child("bert_encoder");
  Mup mup = mup_of(p);
  BertEncoding encoding = encode_bert(b, encoder, model_name, mup);
  const graph::Tensor& x = encoding.sequence;
  const graph::Tensor& word_table = encoding.word_table;
  const graph::Initializer& init = encoding.init;
  std::int64_t vocab = p.integer("vocab_size");
  std::int64_t hidden = p.integer("hidden_size");
  double eps = p.number("layer_norm_epsilon");
  std::int64_t batch = x.dim(0);
  std::int64_t length = x.dim(1);

  // Masked LM: the hidden states at the masked positions, through the transform, decoded by the
  // word embeddings.
  nn::Scope head = model.child("bert_mlm_head");
  auto head_scope = head.enter();  // also holds the losses and metrics
  const graph::Tensor& positions = b.input("masked_lm_positions");
  std::int64_t predictions = positions.dim(1);
  graph::Tensor at_masks = graph::matmul(graph::one_hot(positions, length), x);
  graph::Tensor h = nn::linear(
      head.child("mlm_transform").child("ffn").child("ffn").child(0).child("linear_layer"),
      at_masks, hidden, {p.flag("use_ffn_bias_in_mlm"), init, nn::zeros_initializer()});
  h = nn::layer_norm(head.child("mlm_transform").child("layer_norm"),
                     nn::activation(p.text("mlm_nonlinearity"), h), eps);
  graph::Tensor rows = graph::reshape(h, {batch * predictions, hidden});
  graph::Tensor logits =
      p.flag("share_embedding_weights")
          ? graph::matmul(rows, graph::swap_last_axes(word_table))
          : graph::matmul(rows,
                          graph::swap_last_axes(head.child("classifier")
                                                    .child("ffn")
                                                    .child(0)
                                                    .child("linear_layer")
                                                    .parameter("weight", {vocab, hidden}, init)));
  if (p.flag("use_output_bias_in_mlm")) {
    logits = logits + head.child("classifier")
                          .child("ffn")
                          .child(0)
                          .child("linear_layer")
                          .parameter("bias", {vocab}, nn::zeros_initializer());
  }
  double logits_scale = mup_logits_scale(p, mup);
  if (logits_scale != 1.0) logits = logits * logits_scale;
  graph::Tensor labels = graph::reshape(b.input("masked_lm_labels"), {batch * predictions});
  graph::Tensor weights = graph::reshape(b.input("masked_lm_weights"), {batch * predictions});
  graph::Tensor mlm_total = graph::sum(nn::cross_entropy(logits, labels) * weights);
  // precomputed_num_masked: the Model Zoo's data scales each batch's weights by
  // batch / sum(weights) and divides by the batch, which is the mean over the masked tokens.
  // The PyTorch data's dynamic_mlm_scale does the same, and its model then leaves out
  // mlm_loss_weight.
  bool over_batch = p.text("mlm_loss_scaling") == "batch_size" && !b.hints.dynamic_mlm_scale;
  graph::Tensor mlm_loss =
      over_batch ? b.context.average_over_samples(mlm_total, batch)
                 : b.context.average_over_field(mlm_total, weights, "masked_lm_weights");
  if (!b.hints.dynamic_mlm_scale) mlm_loss = mlm_loss * p.number("mlm_loss_weight");
  ModelOutputs result;
  result.learning_rate_groups = bert_learning_rate_groups(mup);
  result.loss = mlm_loss;
  graph::Tensor mlm_hits =
      graph::cast(graph::equal(graph::argmax(logits, -1), labels), graph::DType::f32);
  if (p.flag("compute_eval_metrics")) {
    graph::Tensor weight_total = graph::sum(weights);
    result.metrics.push_back({"eval/accuracy_masked_lm",
                              ratio_metric({graph::sum(mlm_hits * weights)}, {weight_total}),
                              nn::MetricAverage::ratio});
    result.metrics.push_back({"eval/mlm_perplexity", ratio_metric({mlm_total}, {weight_total}),
                              nn::MetricAverage::exp_of_ratio});
  }
  if (p.flag("disable_nsp")) return result;

  graph::Tensor pooled = bert_pooler(p, encoder, encoding);
  graph::Tensor nsp_logits = nn::linear(
      model.child("bert_cls_head").child("classifier").child("ffn").child(0).child("linear_layer"),
      pooled, 2, {true, init, nn::zeros_initializer()});
  if (logits_scale != 1.0) nsp_logits = nsp_logits * logits_scale;
  const graph::Tensor& nsp_labels = b.input("next_sentence_label");
  result.loss = result.loss + b.context.average_over_samples(
                                  graph::sum(nn::cross_entropy(nsp_logits, nsp_labels)), batch);
  if (p.flag("compute_eval_metrics")) {
    graph::Tensor nsp_hits =
        graph::cast(graph::equal(graph::argmax(nsp_logits, -1), nsp_labels), graph::DType::f32);
    result.metrics.push_back({"eval/accuracy_cls", graph::mean(nsp_hits)});
  }
  return result;
}

ModelDefinition encoder(const std::string& name, const std::string& description, bool disable_nsp,
                        std::vector<std::string> processors) {
  return ModelDefinition{
      name,
      description,
      std::move(processors),
      make_schema("model " + name, bert_encoder_fields(disable_nsp)),
      check_bert_encoder,
      [](const ModelParams& params, const DataHints&) { return count_encoder(params); },
      bert_layout,
      [name](ModelBuild& b) { return build_bert(b, name); }};
}

}  // namespace

ModelDefinition bert_definition() {
  return encoder("bert", "BERT encoder with the masked-LM head (and NSP unless disable_nsp)", false,
                 {"BertCSVDynamicMaskDataProcessor", "BertCSVDataProcessor",
                  "BertHDF5DataProcessor", "BertTfRecordsProcessor"});
}

ModelDefinition roberta_definition() {
  // Release 1.6's TensorFlow RoBERTa masks TF records on the fly, without segments or NSP.
  return encoder(
      "roberta", "RoBERTa: the BERT encoder and masked-LM head without NSP", true,
      {"BertCSVDynamicMaskDataProcessor", "BertCSVDataProcessor", "BertHDF5DataProcessor",
       "BertTfRecordsProcessor", "BertMlmOnlyTfRecordsDynamicMaskProcessor"});
}

ModelDefinition linformer_definition() {
  return ModelDefinition{
      "linformer",
      "Linformer: a BERT-style encoder whose attention projects keys and values to "
      "projected_dims positions",
      {"BertMlmOnlyTfRecordsDynamicMaskProcessor", "BertMlmOnlyTfRecordsStaticMaskProcessor",
       "BertCSVDynamicMaskDataProcessor", "BertCSVDataProcessor"},
      make_schema("model linformer", linformer_fields()),
      check_linformer,
      count_linformer,
      bert_layout,
      [](ModelBuild& b) { return build_bert(b, "linformer"); }};
}

}  // namespace csrun::models
