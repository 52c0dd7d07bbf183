#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/tensor.hpp"
#include "learning_rate_groups.hpp"
#include "model_params.hpp"
#include "nn/metric.hpp"
#include "nn/scope.hpp"

namespace csrun::models {

// One tensor of a batch as the data pipeline delivers it to the model.
struct BatchField {
  std::string name;
  graph::TensorType type;
  // An integer field's values lie in [0, value_limit): token ids below the vocabulary, positions
  // below the sequence length, classes below their count (what fake data draws from).
  std::int64_t value_limit = 0;
};
using BatchLayout = std::vector<BatchField>;

// What a model's size depends on beyond its own params: the shapes its data brings.
struct DataHints {
  std::optional<std::int64_t> max_sequence_length;     // an encoder-decoder's source length
  std::optional<std::int64_t> target_sequence_length;  // an encoder-decoder's target length
  std::vector<std::int64_t> image_shape;               // [H, W, C]; 3D: [D, H, W]
  std::optional<std::int64_t> num_classes;
  std::optional<std::int64_t> max_predictions;  // masked positions per sequence (BERT)
  std::optional<std::int64_t> max_cls_tokens;   // sentences per sequence (BertSum)
  bool matched_partitions = false;  // is_matched and is_mismatched per sample (MNLI's evaluation)
  // The Model Zoo's data scales each batch's loss weights by B / the counted tokens, which turns
  // a loss summed over the batch into the mean over those tokens: BERT's dynamic_mlm_scale, the
  // encoder-decoders' dynamic_loss_weight.
  bool dynamic_mlm_scale = false;
  bool dynamic_loss_weight = false;       // of the training data
  bool eval_dynamic_loss_weight = false;  // of the eval data
  // The eval data's tokens per byte: TensorFlow-era GPT models (Model Zoo 1.6) report
  // eval/bits_per_byte with it.
  std::optional<double> tokens_per_byte;
};

// What a model builder receives: its checked params, the step being traced, the batch, and what
// the data says of its shapes.
struct ModelBuild {
  const ModelParams& params;
  nn::StepContext& context;
  std::map<std::string, graph::Tensor> batch;
  const DataHints& hints;

  const graph::Tensor& input(const std::string& name) const;
};

// What it returns: the loss (a scalar) and the metrics of an eval step, by their Model Zoo names.
struct ModelOutputs {
  graph::Tensor loss;
  std::vector<nn::Metric> metrics;
  // The network's learning-rate groups (muP's per-group factors; the optimizer's
  // adjust_learning_rate names them).
  std::vector<LearningRateGroup> learning_rate_groups;
};

// A model key whose value csrun cannot build yet ("not supported yet"); `key` lets the caller
// point at it in the params file.
class UnsupportedModel : public std::runtime_error {
 public:
  UnsupportedModel(std::string key, const std::string& message)
      : std::runtime_error(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// Builders call these to refuse what they do not implement.
void refuse_if_set(const ModelParams& params, const std::string& model,
                   std::initializer_list<const char*> keys);
void refuse_unless(const ModelParams& params, const std::string& model, const char* key,
                   bool supported, const std::string& supported_values);
// Refuses each of `keys` that is set to something other than "off": null, false, 0, an empty list
// or mapping, or 'default'.
void refuse_unless_off(const ModelParams& params, const std::string& model,
                       std::initializer_list<const char*> keys);

}  // namespace csrun::models
