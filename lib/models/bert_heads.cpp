// The Model Zoo's BERT fine-tuning networks: the BERT encoder (model.bert) under a sequence
// classifier, a token classifier or an extractive-summarization head (model.classifier).

#include <fstream>
#include <sstream>

#include "config/param_types.hpp"
#include "config/yaml_reader.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"
#include "nn/initializers.hpp"
#include "nn/layers.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

// The heads take the encoder's keys; like the Model Zoo's they compute eval metrics only when
// asked.
std::shared_ptr<const Schema> head_schema(const std::string& name, std::vector<Field> head) {
  std::vector<Field> fields = bert_encoder_fields(true);
  for (Field& field : fields) {
    if (field.name == "compute_eval_metrics") field.default_value = value(false);
  }
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
                         {},
                         {}};
}

std::int64_t sequence_length(const ModelParams& params, const DataHints& hints) {
  return hints.max_sequence_length.value_or(params.integer("max_position_embeddings"));
}

// The encoder's inputs, then the head's fields. Callers read the params (a read can throw) before
// they build the fields: GCC 12 otherwise warns of uninitialized shapes on the exception path.
BatchLayout head_layout(const ModelParams& params, std::int64_t batch, const DataHints& hints,
                        std::initializer_list<BatchField> head_fields) {
  graph::Shape tokens = {batch, sequence_length(params, hints)};
  BatchLayout layout = {{"input_ids", {tokens, graph::DType::i32}, 0},
                        {"attention_mask", {tokens, graph::DType::i32}, 0},
                        {"token_type_ids", {tokens, graph::DType::i32}, 2}};
  layout.insert(layout.end(), head_fields);
  return layout;
}

graph::Tensor classifier(const nn::Scope& model, const graph::Tensor& x, std::int64_t outputs,
                         bool bias, const graph::Initializer& init) {
  return nn::linear(model.child("classifier"), x, outputs, {bias, init, nn::zeros_initializer()});
}

// A head's encoder, without muP: csrun does not build the fine-tuning models' muP yet.
BertEncoding encode_for_head(ModelBuild& b, const nn::Scope& encoder, const std::string& name) {
  refuse_mup(b.params, name);
  return encode_bert(b, encoder, name, Mup{});
}

// single_label_classification: cross entropy; regression: mean squared error of one output;
// without problem_type, one label means regression (as Hugging Face decides).
bool regression(const ModelParams& p) {
  if (!p.has("problem_type")) return p.integer("num_labels") == 1;
  return p.text("problem_type") == "regression";
}

BatchLayout classifier_layout(const ModelParams& params, std::int64_t batch,
                              const DataHints& hints) {
  bool regresses = regression(params);
  std::int64_t classes = regresses ? 0 : params.integer("num_labels");
  graph::DType type = regresses ? graph::DType::f32 : graph::DType::i32;
  if (!hints.matched_partitions)
    return head_layout(params, batch, hints, {{"labels", {{batch}, type}, classes}});
  return head_layout(params, batch, hints,
                     {{"labels", {{batch}, type}, classes},
                      {"is_matched", {{batch}, graph::DType::i32}, 2},
                      {"is_mismatched", {{batch}, graph::DType::i32}, 2}});
}

// BertForSequenceClassification: the pooled first position, dropout (task_dropout), the
// classifier; loss averaged over the batch.
ModelOutputs build_classifier(ModelBuild& b) {
  const ModelParams& p = b.params;
  const std::string name = "bert/classifier";
  refuse_unless(p, name, "problem_type",
                !p.has("problem_type") || p.text("problem_type") != "multi_label_classification",
                "single_label_classification, regression");
  refuse_unless(p, name, "add_pooling_layer", p.flag("add_pooling_layer"), "true");
  nn::Scope model(b.context, "model");
  nn::Scope encoder = model.child("bert");
  BertEncoding encoding = encode_for_head(b, encoder, name);
  graph::Tensor pooled =
      nn::dropout(b.context, bert_pooler(p, encoder, encoding), p.number("task_dropout"));
  std::int64_t labels_count = p.integer("num_labels");
  auto entered = model.child("classifier").enter();
  graph::Tensor logits = classifier(model, pooled, labels_count, true,
                                    nn::normal_initializer(p.number("initializer_range")));
  const graph::Tensor& labels = b.input("labels");
  ModelOutputs result;
  if (regression(p)) {
    graph::Tensor error = graph::reshape(logits, {labels.dim(0)}) - labels;
    result.loss = b.context.average_over_samples(graph::sum(error * error), labels.dim(0));
    return result;
  }
  result.loss =
      b.context.average_over_samples(graph::sum(nn::cross_entropy(logits, labels)), labels.dim(0));
  if (!p.flag("compute_eval_metrics")) return result;
  graph::Tensor hits =
      graph::cast(graph::equal(graph::argmax(logits, -1), labels), graph::DType::f32);
  result.metrics.push_back({"eval/accuracy", graph::mean(hits)});
  // The Model Zoo's F1 of a two-class task is scikit-learn's micro average: the accuracy.
  if (labels_count == 2) result.metrics.push_back({"eval/f1_score", graph::mean(hits)});
  // MNLI: the accuracy of each evaluation set, over the whole evaluation.
  for (const char* partition : {"matched", "mismatched"}) {
    std::string field = std::string("is_") + partition;
    if (!b.batch.contains(field)) continue;
    graph::Tensor in_set = graph::cast(b.input(field), graph::DType::f32);
    result.metrics.push_back({std::string("eval/accuracy_") + partition,
                              ratio_metric({graph::sum(hits * in_set)}, {graph::sum(in_set)}),
                              nn::MetricAverage::ratio});
  }
  return result;
}

BatchLayout token_classifier_layout(const ModelParams& params, std::int64_t batch,
                                    const DataHints& hints) {
  std::int64_t classes = params.integer("num_classes");
  graph::Shape tokens = {batch, sequence_length(params, hints)};
  return head_layout(params, batch, hints,
                     {{"labels", {tokens, graph::DType::i32}, classes},
                      {"loss_mask", {tokens, graph::DType::i32}, 2}});
}

// Leaves out of `averaged` the classes the model's label_vocab_file (a JSON object {label: id})
// gives labels that start with neither "B" nor "I" (O, X, [PAD], [CLS] and [SEP] of the Model Zoo's
// NER vocabulary). A file that cannot be read leaves every class in, with a warning (--fake_data
// runs need no files); what is wrong with one that can goes into `diagnostics`.
void leave_out_other_labels(const Node& key, std::vector<bool>& averaged,
                            Diagnostics& diagnostics) {
  std::string path = key.as_string();
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  if (!file || !(text << file.rdbuf())) {
    diagnostics.warning(key.mark(), key.path(),
                        "cannot read '" + path + "': eval/f1_score averages over all " +
                            std::to_string(averaged.size()) +
                            " classes, not over the B and I labels the file names");
    return;
  }
  Node vocabulary = read_yaml_text(text.str(), path, diagnostics);
  if (!vocabulary.is_map()) {
    diagnostics.error(key.mark(), key.path(),
                      "'" + path + "' is not a JSON object of labels and their ids");
    return;
  }
  for (const Node::Entry& entry : vocabulary.entries()) {
    if (!entry.value.is_int()) {
      diagnostics.error(entry.value.mark(), "",
                        "the id of the label '" + entry.key + "' is not an integer");
      continue;
    }
    std::int64_t id = entry.value.as_int();
    bool entity = entry.key.starts_with("B") || entry.key.starts_with("I");
    if (!entity && id >= 0 && id < static_cast<std::int64_t>(averaged.size()))
      averaged[static_cast<std::size_t>(id)] = false;
  }
}

// The classes whose F1 eval/f1_score averages, as the Model Zoo's: every class, less those
// leave_out_other_labels leaves out.
std::vector<std::int64_t> f1_classes(const ModelParams& p, Diagnostics& diagnostics) {
  std::int64_t classes = p.integer("num_classes");
  std::vector<bool> averaged(static_cast<std::size_t>(classes), true);
  if (const Node* key = p.find("label_vocab_file"))
    leave_out_other_labels(*key, averaged, diagnostics);
  std::vector<std::int64_t> result;
  for (std::int64_t c = 0; c < classes; ++c)
    if (averaged[static_cast<std::size_t>(c)]) result.push_back(c);
  if (result.empty()) {
    const Node& key = *p.find("label_vocab_file");
    diagnostics.error(key.mark(), key.path(),
                      "'" + key.as_string() + "' gives none of the " + std::to_string(classes) +
                          " classes a label that starts with B or I: eval/f1_score would "
                          "average over none");
  }
  return result;
}

void check_token_classifier(const ModelParams& p, const DataHints& hints,
                            Diagnostics& diagnostics) {
  check_bert_encoder(p, hints, diagnostics);
  if (p.flag("compute_eval_metrics")) (void)f1_classes(p, diagnostics);
}

// The Model Zoo computes none: 1.x took ROUGE from decoded text on the host, 2.x refuses.
void check_summarization(const ModelParams& p, const DataHints& hints, Diagnostics& diagnostics) {
  check_bert_encoder(p, hints, diagnostics);
  const Node* asked = p.find("compute_eval_metrics");
  if (!asked || !p.flag("compute_eval_metrics")) return;
  diagnostics.warning(asked->mark(), asked->path(),
                      "bert/extractive_summarization has no eval metric in csrun (Model Zoo 1.x "
                      "computed ROUGE-1 and ROUGE-2 from the decoded sentences on the host, 2.x "
                      "refuses compute_eval_metrics: true); an evaluation reports its loss");
}

// BertForTokenClassification: dropout (encoder_output_dropout_rate) and the classifier at every
// position; cross entropy where loss_mask is set, summed, over the batch (and the length with
// include_padding_in_loss), times loss_weight.
ModelOutputs build_token_classifier(ModelBuild& b) {
  const ModelParams& p = b.params;
  const std::string name = "bert/token_classifier";
  nn::Scope model(b.context, "model");
  BertEncoding encoding = encode_for_head(b, model.child("bert"), name);
  std::int64_t batch = encoding.sequence.dim(0);
  std::int64_t length = encoding.sequence.dim(1);
  std::int64_t hidden = encoding.sequence.dim(2);
  graph::Tensor x =
      nn::dropout(b.context, encoding.sequence, p.number("encoder_output_dropout_rate"));
  auto entered = model.child("classifier").enter();
  graph::Tensor logits =
      classifier(model, graph::reshape(x, {batch * length, hidden}), p.integer("num_classes"), true,
                 nn::normal_initializer(p.number("initializer_range")));
  graph::Tensor labels = graph::reshape(b.input("labels"), {batch * length});
  // With include_padding_in_loss the Model Zoo's data gives every position (padding labelled
  // [PAD]) a loss mask of 1, whatever the dataloader says, and the loss is over the length too.
  bool whole = p.flag("include_padding_in_loss");
  graph::Tensor cross_entropy = nn::cross_entropy(logits, labels);
  graph::Tensor counted =
      whole ? cross_entropy
            : cross_entropy * graph::cast(graph::reshape(b.input("loss_mask"), {batch * length}),
                                          graph::DType::f32);
  double per_sample = whole ? static_cast<double>(length) : 1.0;
  ModelOutputs result;
  result.loss = b.context.average_over_samples(graph::sum(counted), batch) / per_sample *
                p.number("loss_weight");
  if (!p.flag("compute_eval_metrics")) return result;
  Diagnostics findings;
  std::vector<std::int64_t> classes = f1_classes(p, findings);
  if (findings.has_errors()) throw std::runtime_error(findings.all().front().message);
  graph::Tensor predicted = graph::argmax(logits, -1);
  // Token-level F1 of each class over every position, macro-averaged: 2 TP / (predicted +
  // actual).
  std::vector<graph::Tensor> numerators;
  std::vector<graph::Tensor> denominators;
  for (std::int64_t label : classes) {
    auto value = static_cast<double>(label);
    graph::Tensor is_predicted = graph::cast(graph::equal(predicted, value), graph::DType::f32);
    graph::Tensor is_actual = graph::cast(graph::equal(labels, value), graph::DType::f32);
    numerators.push_back(2.0 * graph::sum(is_predicted * is_actual));
    graph::Tensor actual = graph::sum(is_actual);
    denominators.push_back(graph::sum(is_predicted) + actual);
  }
  result.metrics.push_back(
      {"eval/f1_score", ratio_metric(numerators, denominators), nn::MetricAverage::ratio});
  return result;
}

// The sentences' [CLS] positions per sequence: the data's max_cls_tokens, else 50.
std::int64_t sentences(const DataHints& hints) {
  return hints.max_cls_tokens.value_or(50);
}

BatchLayout summarization_layout(const ModelParams& params, std::int64_t batch,
                                 const DataHints& hints) {
  std::int64_t classes = params.integer("num_labels");
  std::int64_t length = sequence_length(params, hints);
  graph::Shape per_sentence = {batch, sentences(hints)};
  return head_layout(params, batch, hints,
                     {{"labels", {per_sentence, graph::DType::i32}, classes},
                      {"cls_indices", {per_sentence, graph::DType::i32}, length},
                      {"cls_weights", {per_sentence, graph::DType::f32}, 0}});
}

// BertSummarizationModel (BertSum): the encoder's outputs at each sentence's [CLS] position
// through the classifier; cross entropy weighted by cls_weights, summed over the batch's
// sentences, over the batch, times loss_weight.
ModelOutputs build_summarization(ModelBuild& b) {
  const ModelParams& p = b.params;
  const std::string name = "bert/extractive_summarization";
  nn::Scope model(b.context, "model");
  BertEncoding encoding = encode_for_head(b, model.child("bert"), name);
  std::int64_t batch = encoding.sequence.dim(0);
  std::int64_t length = encoding.sequence.dim(1);
  std::int64_t hidden = encoding.sequence.dim(2);
  const graph::Tensor& positions = b.input("cls_indices");
  std::int64_t count = positions.dim(1);
  auto entered = model.child("classifier").enter();
  graph::Tensor at_sentences = graph::matmul(graph::one_hot(positions, length), encoding.sequence);
  graph::Tensor logits = classifier(model, graph::reshape(at_sentences, {batch * count, hidden}),
                                    p.integer("num_labels"), p.flag("use_cls_bias"),
                                    nn::normal_initializer(p.number("initializer_range")));
  graph::Tensor labels = graph::reshape(b.input("labels"), {batch * count});
  graph::Tensor weights = graph::reshape(b.input("cls_weights"), {batch * count});
  double loss_weight = p.has("loss_weight") ? p.number("loss_weight") : 1.0;
  ModelOutputs result;
  result.loss = b.context.average_over_samples(
                    graph::sum(nn::cross_entropy(logits, labels) * weights), batch) *
                loss_weight;
  return result;
}

}  // namespace

ModelDefinition bert_classifier_definition() {
  ModelDefinition definition = head(
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
  definition.batch_layout = classifier_layout;
  definition.build = build_classifier;
  return definition;
}

ModelDefinition bert_token_classifier_definition() {
  ModelDefinition definition =
      head("bert/token_classifier",
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
  definition.check = check_token_classifier;
  definition.batch_layout = token_classifier_layout;
  definition.build = build_token_classifier;
  return definition;
}

ModelDefinition bert_summarization_definition() {
  ModelDefinition definition =
      head("bert/extractive_summarization",
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
  definition.check = check_summarization;
  definition.batch_layout = summarization_layout;
  definition.build = build_summarization;
  return definition;
}

}  // namespace csrun::models
