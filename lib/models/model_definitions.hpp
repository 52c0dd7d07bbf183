#pragma once

// The definitions the registry lists, one per network. Internal to lib/models.

#include <string>
#include <vector>

#include "mup.hpp"
#include "registry.hpp"

namespace csrun::models {

ModelDefinition fc_mnist_definition();
ModelDefinition gpt2_definition();
ModelDefinition gpt3_definition();
ModelDefinition gptj_definition();
ModelDefinition llama_definition();
ModelDefinition bert_definition();
ModelDefinition bert_classifier_definition();
ModelDefinition bert_token_classifier_definition();
ModelDefinition bert_summarization_definition();
ModelDefinition roberta_definition();
ModelDefinition linformer_definition();
ModelDefinition t5_definition();
ModelDefinition transformer_definition();
ModelDefinition unet_definition();

// Reports a finding at a model key (its value's position, or the model section's).
void report_at(const ModelParams& params, const std::string& key, const std::string& message,
               config::Diagnostics& diagnostics);
void warn_at(const ModelParams& params, const std::string& key, const std::string& message,
             config::Diagnostics& diagnostics);

// The BERT encoder that the pre-training network and the fine-tuning heads share: its keys
// (with the pre-training heads' own when the Model Zoo's configs inherit them), its rules and
// its parameters without any head.
std::vector<config::Field> bert_encoder_fields(bool disable_nsp);
void check_bert_encoder(const ModelParams& params, const DataHints& hints,
                        config::Diagnostics& diagnostics);
std::int64_t count_bert_encoder_body(const ModelParams& params);

// The BERT encoder traced under `encoder` (model.bert_encoder for pre-training, model.bert for the
// heads): embeddings and their norm, post-LayerNorm layers attending to the unpadded positions;
// its output [B, T, H], the word table and the kernels' initializer; `mup` scales its attention
// scores. Refuses what csrun does not build yet (UnsupportedModel).
struct BertEncoding {
  graph::Tensor sequence;
  graph::Tensor word_table;
  graph::Initializer init;
};
BertEncoding encode_bert(ModelBuild& b, const nn::Scope& encoder, const std::string& model_name,
                         const Mup& mup);
// The pooler: pooler_nonlinearity of a dense layer over the first position, [B, H].
graph::Tensor bert_pooler(const ModelParams& params, const nn::Scope& encoder,
                          const BertEncoding& encoding);

// The decoder-only networks' traced step (decoder_network.cpp): GPT-2's sequential blocks, or
// GPT-J's parallel ones; their batch; the key/value heads and rotated features they have.
ModelOutputs build_decoder(ModelBuild& b, const std::string& model_name, bool parallel_block);
BatchLayout gpt_layout(const ModelParams& params, std::int64_t batch, const DataHints& hints);
std::int64_t decoder_kv_heads(const ModelParams& params);
std::int64_t decoder_rotary_dim(const ModelParams& params);

// The Model Zoo's T5 relative position bucket (of `buckets`) of a key `relative` positions after
// its query: the encoder's are bidirectional, the decoder's look back only.
std::int32_t relative_position_bucket(std::int64_t relative, bool bidirectional,
                                      std::int64_t buckets);

// The [2, C] value of a ratio metric (MetricAverage::ratio and ratio_of_present) from C
// numerators and C denominators.
graph::Tensor ratio_metric(const std::vector<graph::Tensor>& numerators,
                           const std::vector<graph::Tensor>& denominators);

// The UNet's eval metrics (`eval_metrics`: mIOU, DSC, Acc, MPCA) from the whole evaluation's
// confusion matrix of logits [B, C or 1, spatial...] against labels as `loss` takes them:
// eval/mean_iou, eval/dice_coefficient and eval/mean_per_class_accuracy over the classes present,
// eval/accuracy over the pixels; pixels labelled with one of eval_ignore_classes do not count.
std::vector<nn::Metric> segmentation_metrics(const ModelParams& params, const std::string& loss,
                                             const graph::Tensor& logits,
                                             const graph::Tensor& labels, std::int64_t classes);

// Rules every attention-based network shares, and the position embedding it asks for
// (`position_embedding_type`; "" when null or absent).
std::string position_embedding_of(const ModelParams& params);
bool check_heads_divide_hidden(const ModelParams& params, config::Diagnostics& diagnostics);
void check_sequence_fits_positions(const ModelParams& params, const DataHints& hints,
                                   config::Diagnostics& diagnostics);

}  // namespace csrun::models
