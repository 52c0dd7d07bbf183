// The Model Zoo's BERT fine-tuning networks: the BERT encoder under a sequence classifier, a
// token classifier or an extractive-summarization head. csrun checks and sizes them.

#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

std::shared_ptr<const Schema> head_schema(const std::string& name, std::vector<Field> head) {
  std::vector<Field> fields = bert_encoder_fields(true);
  fields.insert(fields.end(), head.begin(), head.end());
  fields.push_back(earlier_release_field("pretrain_params_path", "TensorFlow-era",
                                         "fit.ckpt_path loads a pre-trained checkpoint"));
  return make_schema("model " + name, std::move(fields));
}

ModelDefinition head(const std::string& name, const std::string& description,
                     std::vector<std::string> processors, std::vector<Field> fields,
                     std::function<std::int64_t(const ModelParams&)> count_head) {
  return ModelDefinition{name,
                         description,
                         std::move(processors),
                         head_schema(name, std::move(fields)),
                         check_bert_encoder,
                         [count_head](const ModelParams& params, const DataHints&) {
                           return count_bert_encoder_body(params) + count_head(params);
                         },
                         {},  // no builder yet: checked and sized only
                         {}};
}

}  // namespace

ModelDefinition bert_classifier_definition() {
  return head(
      "bert/classifier",
      "BERT sequence classifier (SST-2, MNLI): the pooled [CLS] output through a linear layer",
      {"SST2DataProcessor", "MNLIDataProcessor"},
      {
          default_field("num_labels", dimension(), value(2)),
          optional_field("problem_type", T::choice({"single_label_classification",
                                                    "multi_label_classification", "regression"})
                                             .or_null()),
          default_field("task_dropout", dropout_type(), value(0.1)),
          default_field("add_pooling_layer", T::boolean(), value(true)),
          optional_field("is_mnli_dataset", T::boolean()),
      },
      [](const ModelParams& p) {
        std::int64_t hidden = p.integer("hidden_size");
        std::int64_t labels = p.integer("num_labels");
        std::int64_t pooler = p.flag("add_pooling_layer") ? hidden * hidden + hidden : 0;
        return pooler + hidden * labels + labels;
      });
}

ModelDefinition bert_token_classifier_definition() {
  return head("bert/token_classifier",
              "BERT token classifier (named-entity recognition): a linear layer per token",
              {"BertTokenClassifierDataProcessor"},
              {
                  required_field("num_classes", dimension()),
                  default_field("encoder_output_dropout_rate", dropout_type(), value(0.1)),
                  default_field("loss_weight", positive_number(), value(1.0)),
                  default_field("include_padding_in_loss", T::boolean(), value(false)),
                  optional_field("label_vocab_file", T::string()),
                  default_field("add_pooling_layer", T::boolean(), value(false)),
              },
              [](const ModelParams& p) {
                std::int64_t classes = p.integer("num_classes");
                return p.integer("hidden_size") * classes + classes;
              });
}

ModelDefinition bert_summarization_definition() {
  return head("bert/extractive_summarization",
              "BERT extractive summarization (BertSum): a score per sentence's [CLS] token",
              {"BertSumCSVDataProcessor"},
              {
                  optional_field("loss_weight", positive_number().or_null()),
                  default_field("use_cls_bias", T::boolean(), value(true)),
                  optional_field("vocab_file", T::string()),
                  default_field("num_labels", T::integer(1, 2), value(2)),
                  default_field("add_pooling_layer", T::boolean(), value(false)),
              },
              [](const ModelParams& p) {
                std::int64_t labels = p.integer("num_labels");
                return p.integer("hidden_size") * labels + (p.flag("use_cls_bias") ? labels : 0);
              });
}

}  // namespace csrun::models
