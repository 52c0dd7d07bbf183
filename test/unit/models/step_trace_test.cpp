#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "graph/fingerprint.hpp"
#include "models/step_trace.hpp"
#include "nn/training_step.hpp"
#include "support/params_fixture.hpp"
#include "support/step_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

using Traced = test::CheckedTrainerModel;

}  // namespace

TEST_CASE("traced parameters agree with the registry's closed-form counts") {
  for (const char* yaml :
       {"{name: fc_mnist, hidden_sizes: [64, 32]}",
        "{name: gpt2, vocab_size: 100, hidden_size: 32, num_heads: 4, num_hidden_layers: 2, "
        "filter_size: 64, "
        "max_position_embeddings: 16}",
        "{name: gpt3, vocab_size: 100, hidden_size: 32, num_heads: 4, num_hidden_layers: 2, "
        "filter_size: 64, "
        "max_position_embeddings: 16, share_embedding_weights: false, use_bias_in_output: true, "
        "embedding_layer_norm: true}",
        "{name: bert, vocab_size: 100, hidden_size: 32, num_heads: 4, num_hidden_layers: 2, "
        "filter_size: 64, "
        "max_position_embeddings: 16}",
        "{name: roberta, vocab_size: 100, hidden_size: 32, num_heads: 4, num_hidden_layers: 2, "
        "filter_size: 64, max_position_embeddings: 16}",
        "{name: roberta, vocab_size: 100, hidden_size: 32, num_heads: 4, num_hidden_layers: 2, "
        "filter_size: 64, max_position_embeddings: 16, mask_padding_in_positional_embed: true, "
        "pad_token_id: 1}"}) {
    INFO(yaml);
    Traced t = test::checked_model(yaml);
    models::TracedStep step = models::trace_step(t.model, 2, t.training_options());
    CHECK(step.parameter_count == t.model.parameter_count);
    CHECK(step.flops > 0);
  }
}

TEST_CASE("a training step updates every parameter, its optimizer state and the global step") {
  Traced t = test::checked_model("{name: fc_mnist, hidden_sizes: [8]}");
  models::TracedStep step = models::trace_step(t.model, 4, t.training_options());
  std::set<std::string> updated;
  for (const graph::NamedNode& update : step.graph.updates())
    updated.insert(update.name);
  for (const graph::Variable& variable : step.graph.variables()) {
    INFO(variable.name);
    CHECK(updated.count(variable.name) == 1);
  }
  CHECK(step.graph.find_variable("model.fc_layers.0.weight"));
  CHECK(step.graph.find_variable("optimizer.state.0.exp_avg"));
  CHECK(step.graph.find_output("loss"));
  CHECK(step.graph.find_output("lr/0"));
}

TEST_CASE("an eval step computes the loss and the model's metrics, and updates nothing") {
  Traced gpt = test::checked_model(
      "{name: gpt2, vocab_size: 50, hidden_size: 16, num_heads: 2, num_hidden_layers: 1, "
      "filter_size: 32, "
      "max_position_embeddings: 8}");
  models::TracedStep step = models::trace_step(gpt.model, 2, {models::StepKind::eval, 1, {}});
  CHECK(step.graph.updates().empty());
  CHECK(step.graph.find_output("eval/lm_perplexity"));
  CHECK(step.graph.find_output("eval/accuracy"));
  // Both are ratios of sums over the evaluation's tokens, as the Model Zoo's metrics.
  CHECK(step.metric_averages.at("eval/lm_perplexity") == nn::MetricAverage::exp_of_ratio);
  CHECK(step.metric_averages.at("eval/accuracy") == nn::MetricAverage::ratio);
  Traced fc =
      test::checked_model("{name: fc_mnist, hidden_sizes: [8], compute_eval_metrics: true}");
  CHECK(models::trace_step(fc.model, 4, {models::StepKind::eval, 1, {}})
            .graph.find_output("accuracy"));
}

TEST_CASE(
    "nodes record their module and phase, gradients belong to the module they differentiate") {
  Traced t = test::checked_model(
      "{name: gpt2, vocab_size: 50, hidden_size: 16, num_heads: 2, num_hidden_layers: 2, "
      "filter_size: 32, max_position_embeddings: 8}");
  models::TracedStep step = models::trace_step(t.model, 2, t.training_options());
  const graph::Graph& g = step.graph;
  std::map<graph::Phase, std::set<std::string>> scopes;
  for (const graph::Node& node : g.nodes())
    scopes[node.phase].insert(g.scope_name(node.scope));
  std::string attention = "model.transformer_decoder.layers.1.self_attn.proj_q_dense_layer";
  CHECK(scopes[graph::Phase::forward].count(attention) == 1);
  CHECK(scopes[graph::Phase::backward].count(attention) == 1);
  CHECK(scopes[graph::Phase::forward].count("model.lm_head") == 1);
  CHECK(scopes[graph::Phase::update].count("optimizer") == 1);
  CHECK(scopes[graph::Phase::update].count(attention) == 0);
  // The weight's new value is computed in the update phase.
  for (const graph::NamedNode& update : g.updates())
    CHECK(g.node(update.node).phase == graph::Phase::update);
}

TEST_CASE("a split step's micro-step adds each gradient to a sum its update reads") {
  Traced t = test::checked_model(
      "{name: gpt2, vocab_size: 50, hidden_size: 16, num_heads: 2, num_hidden_layers: 1, "
      "filter_size: 32, max_position_embeddings: 8}");
  models::TracedSplitStep split = models::trace_split_step(t.model, 1, 4, t.training_options());
  const graph::Graph& micro = split.micro_step.graph;
  std::size_t sums = 0;
  for (const graph::Variable& variable : micro.variables()) {
    if (variable.role != graph::VariableRole::parameter) continue;
    INFO(variable.name);
    std::string name = nn::gradient_name(variable.name);
    const graph::Variable* sum = micro.find_variable(name);
    REQUIRE(sum != nullptr);
    CHECK(sum->role == graph::VariableRole::gradient_sum);
    CHECK(micro.node(sum->node).type == micro.node(variable.node).type);
    // sum + gradient, in the update phase (scheduled as soon as the gradient is there); the
    // update reads the sum as its input of the same name.
    auto update = std::find_if(micro.updates().begin(), micro.updates().end(),
                               [&](const graph::NamedNode& u) { return u.name == name; });
    REQUIRE(update != micro.updates().end());
    const graph::Node& add = micro.node(update->node);
    CHECK(add.op == graph::OpKind::add);
    CHECK(add.inputs.front() == sum->node);
    CHECK(add.phase == graph::Phase::update);
    CHECK(split.update.find_input(name));
    ++sums;
  }
  CHECK(sums > 0);
  // The micro-step returns its loss alone; every variable it updates is a sum.
  CHECK(micro.outputs().size() == 1);
  CHECK(micro.find_output("loss"));
  CHECK(micro.updates().size() == sums);
}

TEST_CASE("tracing is deterministic: the same params give the same fingerprint") {
  Traced a = test::checked_model(
      "{name: bert, vocab_size: 60, hidden_size: 16, num_heads: 2, num_hidden_layers: 2, "
      "filter_size: 32, "
      "max_position_embeddings: 8, dropout_rate: 0.1}");
  std::string first =
      graph::fingerprint(models::trace_step(a.model, 2, a.training_options()).graph);
  CHECK(graph::fingerprint(models::trace_step(a.model, 2, a.training_options()).graph) == first);
  CHECK(graph::fingerprint(models::trace_step(a.model, 4, a.training_options()).graph) != first);
}

TEST_CASE("keys a builder does not implement are refused with the key named") {
  Traced alibi =
      test::checked_model("{name: gpt2, vocab_size: 50, position_embedding_type: alibi}");
  try {
    models::trace_step(alibi.model, 2, alibi.training_options());
    FAIL("no error");
  } catch (const models::UnsupportedModel& error) {
    CHECK(error.key() == "position_embedding_type");
    CHECK(std::string(error.what()) ==
          "position_embedding_type 'alibi' is not supported yet by csrun's gpt2 builder "
          "(supported: learned, rotary, null)");
  }
  Traced mup = test::checked_model(
      "{name: bert/classifier, vocab_size: 50, num_labels: 2, "
      "mup_base_hidden_size: 256, mup_base_filter_size: 1024}");
  CHECK_THROWS_AS(models::trace_step(mup.model, 2, mup.training_options()),
                  models::UnsupportedModel);
  Traced half_mup = test::checked_model("{name: t5, src_vocab_size: 100, mup_base_d_model: 256}");
  try {
    models::trace_step(half_mup.model, 2, half_mup.training_options());
    FAIL("muP with mup_base_d_model alone traced");
  } catch (const models::UnsupportedModel& error) {
    CHECK(error.key() == "mup_base_d_model");
    CHECK(std::string(error.what()).find("needs both mup_base_d_model and mup_base_d_ff") !=
          std::string::npos);
  }
}

TEST_CASE("GPT-J and Llama trace: rotary positions, grouped key/value heads, gated feed-forward") {
  Traced gptj = test::checked_model(
      "{name: gptj, vocab_size: 64, hidden_size: 32, num_heads: 4, num_hidden_layers: 2, "
      "filter_size: 64, rotary_dim: 4, use_bias_in_output: true}");
  models::TracedStep j = models::trace_step(gptj.model, 2, gptj.training_options());
  CHECK(j.parameter_count == gptj.model.parameter_count);
  Traced llama = test::checked_model(
      "{name: llama, vocab_size: 64, hidden_size: 32, num_heads: 4, num_hidden_layers: 2, "
      "filter_size: 48, position_embedding_type: rotary, rotary_dim: 8, norm_type: rmsnorm, "
      "nonlinearity: swiglu, share_embedding_weights: false, attention_module: "
      "multiquery_attention, extra_attention_params: {num_kv_groups: 2}, "
      "attention_sliding_window_length: 4, attention_sink_tokens: 1}");
  models::TracedStep l = models::trace_step(llama.model, 2, llama.training_options());
  CHECK(l.parameter_count == llama.model.parameter_count);
  bool grouped_keys = false;
  for (const graph::Variable& variable : l.graph.variables()) {
    if (variable.name == "model.transformer_decoder.layers.0.self_attn.proj_k_dense_layer.weight")
      grouped_keys = l.graph.node(variable.node).type.shape == graph::Shape{16, 32};
  }
  CHECK(grouped_keys);
}

TEST_CASE("GPT-2 small and GPT-3 6.7B trace shape-only") {
  Traced small =
      test::checked_model("{name: gpt2, vocab_size: 50257, max_position_embeddings: 1024}");
  models::TracedStep gpt2 = models::trace_step(small.model, 8, small.training_options());
  CHECK(gpt2.parameter_count == 124'439'808);
  // 6 N tokens for the weights' forward and backward, plus attention: about 6.9e12 for 8 x 1024.
  CHECK(gpt2.flops > 6.0 * 124e6 * 8192);
  Traced large = test::checked_model(
      "{name: gpt3, vocab_size: 50257, hidden_size: 4096, num_hidden_layers: 32, num_heads: 32, "
      "filter_size: 16384, max_position_embeddings: 2048}");
  models::TracedStep gpt3 = models::trace_step(large.model, 1, large.training_options());
  CHECK(gpt3.parameter_count == large.model.parameter_count);
  CHECK(gpt3.parameter_count > 6'600'000'000);
}

namespace {

// A tiny gpt3 trainer with these model keys and optimizer, its step traced.
models::TracedStep traced_trainer(const std::string& model_keys, const std::string& optimizer) {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CPU\n    model: {name: gpt3, vocab_size: 32, "
      "hidden_size: 16, filter_size: 32, num_hidden_layers: 2, num_heads: 2, "
      "max_position_embeddings: 8, embeddings_scale: 10.0, scale_qk_dot_by_d: true, " +
      model_keys + "}\n    optimizer: " + optimizer +
      "\n    loop: {max_steps: 1}\n  fit:\n    train_dataloader: {data_processor: "
      "GptHDF5DataProcessor, data_dir: d, batch_size: 2, max_sequence_length: 8}\n");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  config::Diagnostics diagnostics;
  auto model = models::check_model(loaded.trainer(), diagnostics);
  REQUIRE(model);
  const config::TrainerSpec& trainer = loaded.trainer();
  return models::trace_step(
      *model, 2, {models::StepKind::train, 1, {*trainer.optimizer, {}, trainer.precision}});
}

}  // namespace

// Release 2.2 wrote muP as pre-scaled initializers, output_logits_scale and the optimizer's
// adjust_learning_rate {decoder_kernel: 1/width}; 2.3's converter turns that into base widths,
// output_logits_alpha and unscaled initializers, which the network scales itself. Both spell the
// same step (width 2, 2 layers: the projections' std 0.08/sqrt(2), the outputs' 0.08/sqrt(2*2*2)).
TEST_CASE("Release 2.2's muP and its 2.3 spelling trace the same step") {
  models::TracedStep old_spelling = traced_trainer(
      "initializer: {name: truncated_normal, mean: 0.0, std: 0.056568542494923796, a: "
      "-0.11313708498984759, b: 0.11313708498984759}, output_layer_initializer: {name: "
      "truncated_normal, mean: 0.0, std: 0.028284271247461898, a: -0.056568542494923796, b: "
      "0.056568542494923796}, embedding_initializer: {name: "
      "truncated_normal, mean: 0.0, std: 0.08, a: -0.16, b: 0.16}, output_logits_scale: 0.5",
      "{AdamW: {lr: 0.001, adjust_learning_rate: {decoder_kernel: 0.5}}}");
  models::TracedStep new_spelling = traced_trainer(
      "initializer: {name: truncated_normal, mean: 0.0, std: 0.08, a: -0.16, b: 0.16}, "
      "output_layer_initializer: {name: truncated_normal, mean: 0.0, std: 0.08, a: -0.16, b: "
      "0.16}, embedding_initializer: {name: truncated_normal, mean: 0.0, std: 0.08, a: -0.16, b: "
      "0.16}, mup_base_hidden_size: 8, mup_base_filter_size: 16, output_logits_alpha: 1.0",
      "{AdamW: {lr: 0.001}}");
  CHECK(graph::fingerprint(old_spelling.graph) == graph::fingerprint(new_spelling.graph));
}

TEST_CASE("adjust_learning_rate names the network's groups, and an unknown one is refused") {
  CHECK_THROWS_WITH(
      traced_trainer("output_logits_scale: 0.5",
                     "{AdamW: {lr: 0.001, adjust_learning_rate: "
                     "{decoder_kernal: 0.5}}}"),
      Catch::Contains("adjust_learning_rate names the group 'decoder_kernal', which this network "
                      "does not define (its groups: embedding, decoder_attention"));
}

TEST_CASE("BERT's kernels start from the Model Zoo's truncated normal") {
  Traced bert = test::checked_model(
      "{name: bert, vocab_size: 50, hidden_size: 16, num_heads: 2, "
      "num_hidden_layers: 1, filter_size: 32, initializer_range: 0.03}");
  models::TracedStep step = models::trace_step(bert.model, 2, bert.training_options());
  for (const char* name : {"model.bert_encoder.transformer_encoder.layers.0.self_attn."
                           "proj_q_dense_layer.weight",
                           "model.bert_encoder.embedding_layer.word_embeddings.weight"}) {
    INFO(name);
    const graph::Variable* variable = step.graph.find_variable(name);
    REQUIRE(variable);
    CHECK(variable->init.name == "truncated_normal");
    CHECK(variable->init.std == 0.03);
    CHECK(variable->init.a == -0.06);
    CHECK(variable->init.b == 0.06);
  }
}

TEST_CASE("BERT's embedding dropout is embedding_dropout_rate, dropout_rate without it") {
  auto fingerprint = [](const std::string& keys) {
    Traced bert = test::checked_model(
        "{name: bert, vocab_size: 50, hidden_size: 16, num_heads: 2, "
        "num_hidden_layers: 1, filter_size: 32, dropout_rate: 0.1" +
        keys + "}");
    return graph::fingerprint(models::trace_step(bert.model, 2, bert.training_options()).graph);
  };
  std::string plain = fingerprint("");
  CHECK(fingerprint(", embedding_dropout_rate: 0.1") == plain);
  CHECK(fingerprint(", embedding_dropout_rate: 0.3") != plain);
}

TEST_CASE("BERT's muP traces with BERT's learning-rate groups") {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CPU\n    model: {name: bert, vocab_size: 32, "
      "hidden_size: 16, filter_size: 32, num_hidden_layers: 2, num_heads: 2, "
      "max_position_embeddings: 8, mup_base_hidden_size: 8, mup_base_filter_size: 16, "
      "output_logits_alpha: 2.0}\n    optimizer: {AdamW: {lr: 0.001, adjust_learning_rate: "
      "{decoder_attention: 0.5}}}\n    loop: {max_steps: 1}\n  fit:\n    train_dataloader: "
      "{data_processor: BertCSVDataProcessor, data_dir: d, batch_size: 2}\n");
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  config::Diagnostics diagnostics;
  auto model = models::check_model(loaded.trainer(), diagnostics);
  REQUIRE(model);
  const config::TrainerSpec& trainer = loaded.trainer();
  CHECK_THROWS_WITH(
      models::trace_step(*model, 2,
                         {models::StepKind::train, 1, {*trainer.optimizer, {}, trainer.precision}}),
      Catch::Contains("(its groups: embedding, encoder_attention, encoder_input_ffn, "
                      "encoder_output_ffn, pooler)"));
}

TEST_CASE("MNLI's evaluation reports each set's accuracy, summed over the whole evaluation") {
  Traced mnli = test::checked_model(
      "{name: bert/classifier, vocab_size: 50, hidden_size: 16, num_heads: 2, "
      "num_hidden_layers: 1, filter_size: 32, num_labels: 3, compute_eval_metrics: true}");
  CHECK_FALSE(models::trace_step(mnli.model, 4, {models::StepKind::eval, 1, {}})
                  .graph.find_output("eval/accuracy_matched"));
  mnli.model.hints.matched_partitions = true;
  models::TracedStep step = models::trace_step(mnli.model, 4, {models::StepKind::eval, 1, {}});
  CHECK(step.metric_averages.at("eval/accuracy_matched") == nn::MetricAverage::ratio);
  CHECK(step.metric_averages.at("eval/accuracy_mismatched") == nn::MetricAverage::ratio);
  graph::Feeds feeds = test::sample_feeds(step.graph);
  feeds["labels"].values = {0, 1, 2, 1};
  feeds["is_matched"].values = {1, 1, 1, 0};
  feeds["is_mismatched"].values = {0, 0, 0, 1};
  std::vector<graph::NodeId> fetch = {*step.graph.find_output("eval/accuracy"),
                                      *step.graph.find_output("eval/accuracy_matched"),
                                      *step.graph.find_output("eval/accuracy_mismatched")};
  auto values = graph::evaluate_reference(step.graph, feeds, fetch);
  // [numerator, denominator]: hits within the set, and the set's size.
  CHECK(values[1].values[1] == 3.0);
  CHECK(values[2].values[1] == 1.0);
  CHECK(values[1].values[0] + values[2].values[0] == values[0].values[0] * 4.0);
}

TEST_CASE("a token classifier's F1 averages the classes its label_vocab_file labels B or I") {
  test::TempDir dir;
  const std::string model =
      "{name: bert/token_classifier, vocab_size: 50, hidden_size: 16, num_heads: 2, "
      "num_hidden_layers: 1, filter_size: 32, num_classes: 6, compute_eval_metrics: true";
  auto f1_classes = [&](const std::string& extra) {
    models::TracedStep step = test::traced_step(model + extra + "}", 2, false);
    // Only the Model Zoo's metric.
    CHECK_FALSE(step.graph.find_output("eval/accuracy"));
    // [2, C]: each averaged class's numerator, then its denominator.
    return step.graph.node(*step.graph.find_output("eval/f1_score")).type.shape.back();
  };
  std::string labels = dir.write(
      "labels.json", R"({"O": 0, "B-PER": 1, "I-PER": 2, "B-LOC": 3, "I-LOC": 4, "X": 5})");
  CHECK(f1_classes(", label_vocab_file: '" + labels + "'") == 4);
  CHECK(f1_classes("") == 6);  // without the file, every class

  auto findings = [&](const std::string& file) {
    auto loaded =
        test::load_params_text("trainer:\n  init:\n    model: " + model + ", label_vocab_file: '" +
                               file + "'}\n    optimizer: {AdamW: {lr: 0.001}}\n");
    config::Diagnostics diagnostics;
    (void)models::check_model(loaded.trainer(), diagnostics);
    return diagnostics.all();
  };
  // A file that cannot be read (as with --fake_data): a warning, and every class.
  auto missing = findings((dir.path() / "none.json").string());
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].severity == config::Severity::warning);
  CHECK(missing[0].message.find("eval/f1_score averages over all 6 classes") != std::string::npos);
  auto list = findings(dir.write("list.json", "[1, 2]"));
  REQUIRE_FALSE(list.empty());
  CHECK(list[0].message.find("is not a JSON object of labels and their ids") != std::string::npos);
  auto no_entity = findings(
      dir.write("o.json", R"({"O": 0, "X": 1, "[PAD]": 2, "[CLS]": 3, "[SEP]": 4, "E": 5})"));
  REQUIRE(no_entity.size() == 1);
  CHECK(no_entity[0].message.find("gives none of the 6 classes a label that starts with B or I") !=
        std::string::npos);
}

TEST_CASE("extractive summarization asked for eval metrics says it has none") {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    model: {name: bert/extractive_summarization, vocab_size: 50, "
      "hidden_size: 16, num_heads: 2, num_hidden_layers: 1, filter_size: 32, "
      "compute_eval_metrics: true}\n    optimizer: {AdamW: {lr: 0.001}}\n");
  config::Diagnostics diagnostics;
  REQUIRE(models::check_model(loaded.trainer(), diagnostics));
  REQUIRE(diagnostics.all().size() == 1);
  CHECK(diagnostics.all()[0].severity == config::Severity::warning);
  CHECK(diagnostics.all()[0].message.find("has no eval metric in csrun") != std::string::npos);
}

namespace {

// The eval step's loss of `model_yaml` over `batch` samples of test::sample_feeds, with every
// mask and weight 1 but the first sample's second half of `mask` (a field of [B, T] or [B, P]).
double eval_loss(const std::string& model_yaml, const std::string& mask,
                 void (*hint)(models::DataHints&) = nullptr) {
  test::CheckedTrainerModel checked = test::checked_model(model_yaml);
  if (hint) hint(checked.model.hints);
  models::TracedStep step = models::trace_step(checked.model, 2, {models::StepKind::eval, 1, {}});
  graph::Feeds feeds = test::sample_feeds(step.graph);
  for (auto& [name, tensor] : feeds) {
    bool weights =
        name.find("mask") != std::string::npos || name.find("weights") != std::string::npos;
    if (!weights) continue;
    std::fill(tensor.values.begin(), tensor.values.end(), 1.0);
    if (name != mask) continue;
    std::size_t width = tensor.values.size() / 2;
    std::fill(tensor.values.begin() + static_cast<std::ptrdiff_t>(width / 2),
              tensor.values.begin() + static_cast<std::ptrdiff_t>(width), 0.0);
  }
  std::vector<graph::NodeId> fetch = {*step.graph.find_output("loss")};
  return graph::evaluate_reference(step.graph, feeds, fetch)[0].values[0];
}

}  // namespace

TEST_CASE("the data's dynamic loss scales make a summed loss the mean over the counted tokens") {
  // BERT: dynamic_mlm_scale is the masked tokens' mean, without mlm_loss_weight, as num_masked
  // is with mlm_loss_weight 1.
  const std::string bert =
      "{name: bert, vocab_size: 50, hidden_size: 16, num_heads: 2, num_hidden_layers: 1, "
      "filter_size: 32, max_position_embeddings: 8, disable_nsp: true, ";
  double scaled = eval_loss(bert + "mlm_loss_weight: 0.25}", "masked_lm_weights",
                            [](models::DataHints& hints) { hints.dynamic_mlm_scale = true; });
  double mean = eval_loss(bert + "mlm_loss_scaling: num_masked}", "masked_lm_weights");
  double summed = eval_loss(bert + "mlm_loss_weight: 0.25}", "masked_lm_weights");
  CHECK(scaled == Approx(mean));
  CHECK(summed != Approx(mean * 0.25));

  // T5: the data's loss weights (dynamic_loss_weight) make the target tokens' mean, without
  // lm_loss_weight, under precomputed_num_masked or no mlm_loss_scaling (1.6 had none); an eval
  // step reads the eval data's. batch_size, written, decides.
  const std::string t5 =
      "{name: t5, src_vocab_size: 50, d_model: 16, d_kv: 8, d_ff: 32, num_heads: 2, "
      "encoder_num_hidden_layers: 1, decoder_num_hidden_layers: 1, lm_loss_weight: 0.25";
  const std::string mask = "decoder_attention_mask";
  auto weighted_eval = [](models::DataHints& hints) { hints.eval_dynamic_loss_weight = true; };
  double weighted = eval_loss(t5 + "}", mask, weighted_eval);
  CHECK(weighted == Approx(eval_loss(t5 + ", mlm_loss_scaling: num_masked}", mask)));
  CHECK(eval_loss(t5 + ", mlm_loss_scaling: precomputed_num_masked}", mask, weighted_eval) ==
        Approx(weighted));
  double batch = eval_loss(t5 + ", mlm_loss_scaling: batch_size}", mask, weighted_eval);
  CHECK(batch != Approx(weighted));
  // Without them precomputed_num_masked falls back to batch_size, as the Model Zoo's loss does:
  // the training data's weights do not reach an eval step.
  auto weighted_training = [](models::DataHints& hints) { hints.dynamic_loss_weight = true; };
  CHECK(eval_loss(t5 + ", mlm_loss_scaling: precomputed_num_masked}", mask, weighted_training) ==
        Approx(batch));
}

TEST_CASE(
    "Model Zoo 1.9 to 2.4 give T5's training data the loss weights precomputed_num_masked "
    "asks for, 2.6 on read the data's key") {
  auto weights = [](const std::string& params, bool& warned) {
    auto loaded = test::load_params_text(params);
    config::Diagnostics diagnostics;
    auto model = models::check_model(loaded.trainer(), diagnostics);
    REQUIRE(model);
    warned = false;
    for (const config::Diagnostic& d : diagnostics.all())
      warned = warned || d.to_string().find(
                             "precomputed_num_masked needs the training data's "
                             "loss weights") != std::string::npos;
    return model->hints.dynamic_loss_weight;
  };
  const std::string legacy =
      "train_input: {data_processor: T5DynamicDataProcessor, batch_size: 2, "
      "src_max_sequence_length: 8, tgt_max_sequence_length: 8}\n"
      "model: {name: t5, src_vocab_size: 50, mlm_loss_scaling: precomputed_num_masked}\n"
      "optimizer: {optimizer_type: AdamW, learning_rate: 0.001}\nrunconfig: {max_steps: 1}\n";
  bool warned = false;
  CHECK(weights(legacy, warned));
  CHECK_FALSE(warned);
  const std::string trainer =
      "trainer:\n  init:\n    model: {name: t5, src_vocab_size: 50, mlm_loss_scaling: "
      "precomputed_num_masked";
  const std::string fit =
      "}\n    optimizer: {AdamW: {lr: 0.001}}\n  fit:\n    train_dataloader: {data_processor: "
      "T5DynamicDataProcessor, batch_size: 2, src_max_sequence_length: 8, "
      "tgt_max_sequence_length: 8";
  // 2.4's trainer files still switch mixed precision in the model section.
  CHECK(weights(trainer + ", mixed_precision: true" + fit + "}\n", warned));
  CHECK_FALSE(warned);
  CHECK_FALSE(weights(trainer + fit + "}\n", warned));
  CHECK(warned);
  CHECK(weights(trainer + fit + ", dynamic_loss_weight: true}\n", warned));
  CHECK_FALSE(warned);
}

TEST_CASE("a token classifier's include_padding_in_loss counts every position, loss_mask or not") {
  const std::string model =
      "{name: bert/token_classifier, vocab_size: 50, hidden_size: 16, num_heads: 2, "
      "num_hidden_layers: 1, filter_size: 32, max_position_embeddings: 8, num_classes: 3, "
      "include_padding_in_loss: ";
  // The mask no longer decides: half of one sample's positions masked gives the loss of none.
  CHECK(eval_loss(model + "true}", "loss_mask") == Approx(eval_loss(model + "true}", "")));
  CHECK(eval_loss(model + "false}", "loss_mask") != Approx(eval_loss(model + "false}", "")));
}

TEST_CASE("dynamic_mlm_scale takes effect with masks made on the fly, not with stored ones") {
  auto hinted = [](const std::string& processor) {
    auto loaded = test::load_params_text(
        "trainer:\n  init:\n    model: {name: bert, vocab_size: 50}\n    optimizer: {AdamW: "
        "{lr: 0.001}}\n  fit:\n    train_dataloader: {data_processor: " +
        processor + ", data_dir: d, vocab_file: v, batch_size: 2, dynamic_mlm_scale: true}\n");
    config::Diagnostics diagnostics;
    auto model = models::check_model(loaded.trainer(), diagnostics);
    REQUIRE(model);
    return model->hints.dynamic_mlm_scale;
  };
  CHECK(hinted("BertCSVDynamicMaskDataProcessor"));
  CHECK_FALSE(hinted("BertCSVDataProcessor"));
}
