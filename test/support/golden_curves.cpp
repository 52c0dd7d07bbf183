#include "golden_curves.hpp"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "golden.hpp"
#include "params_fixture.hpp"

namespace csrun::test {

using graph::HostTensor;
using nlohmann::json;

namespace {

std::vector<double> uniforms(const std::string& stream, std::size_t count) {
  std::vector<double> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = golden_value(stream, i);
  return values;
}

std::vector<double> integers(const std::string& stream, std::size_t count, double limit) {
  std::vector<double> values = uniforms(stream, count);
  for (double& v : values)
    v = std::floor(v * limit);
  return values;
}

// A grey level as the MNIST reader normalizes it (in float32, as scripts/golden/curves.py does).
float mnist_normalized(double pixel) {
  return (static_cast<float>(pixel) / 255.0f - 0.1307f) / 0.3081f;
}

// The batch of `step` as scripts/golden/curves.py makes it, for every field of the layout: integer
// fields uniform below their value limit, masks ones (a padded position or two), weights ones but
// the last, images grey levels normalized, float labels a binary mask.
graph::Feeds batch_of(const models::BatchLayout& layout, int step) {
  graph::Feeds feeds;
  for (const models::BatchField& field : layout) {
    const graph::Shape& shape = field.type.shape;
    auto count = static_cast<std::size_t>(graph::element_count(shape));
    std::string stream = "data." + field.name + "." + std::to_string(step);
    std::vector<double> values;
    if (field.name == "input" && shape.size() > 2) {
      // Images (the UNet's), normalized zero_centered as its reader does it, in float32.
      for (double pixel : integers(stream, count, 256))
        values.push_back(static_cast<float>(pixel) / 127.5f - 1.0f);
    } else if (field.name == "input") {
      for (double pixel : integers(stream, count, 256))
        values.push_back(mnist_normalized(pixel));
    } else if (field.name == "labels" && field.type.dtype == graph::DType::f32) {
      values = integers(stream, count, 2);  // a binary mask
    } else if (field.name == "attention_mask") {
      values.assign(count, 1.0);
      std::size_t length = static_cast<std::size_t>(shape[1]);
      bool bert = layout.size() > 3;
      if (bert) {
        values[length + length - 2] = 0.0;
        values[length + length - 1] = 0.0;
      } else {
        values[length - 1] = 0.0;
      }
    } else if (field.name == "loss_mask" || field.name == "decoder_attention_mask") {
      values.assign(count, 1.0);
      values[static_cast<std::size_t>(shape[1]) - 1] = 0.0;
    } else if (field.name == "token_type_ids") {
      std::size_t length = static_cast<std::size_t>(shape[1]);
      for (std::size_t i = 0; i < count; ++i)
        values.push_back(i % length >= length / 2 ? 1.0 : 0.0);
    } else if (field.name == "masked_lm_weights" || field.name == "cls_weights") {
      values.assign(count, 1.0);
      values[static_cast<std::size_t>(shape[1]) - 1] = 0.0;
    } else if (field.type.dtype == graph::DType::i32) {
      values = integers(stream, count, static_cast<double>(field.value_limit));
    } else {
      values = uniforms(stream, count);
    }
    feeds[field.name] = HostTensor{shape, field.type.dtype, std::move(values)};
  }
  return feeds;
}

// A dataloader for the model's hints (sequence length, masked positions).
std::string loader_for(const json& model) {
  std::string name = model["name"];
  if (name == "fc_mnist") return "{data_processor: MNISTDataProcessor, batch_size: 4}";
  if (name == "gpt2" || name == "gptj" || name == "llama")
    return "{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 2, "
           "max_sequence_length: 8}";
  if (name == "t5")
    return "{data_processor: T5DynamicDataProcessor, src_vocab_file: v, src_data_dir: d, "
           "batch_size: 2, src_max_sequence_length: 8, tgt_max_sequence_length: 6}";
  if (name == "transformer")
    return "{data_processor: TransformerDynamicDataProcessor, src_vocab_file: v, src_data_dir: d, "
           "batch_size: 2, src_max_sequence_length: 8, tgt_max_sequence_length: 6}";
  if (name == "unet") {
    std::string shape = model.value("use_conv3d", false) ? "[4, 4, 4]" : "[8, 8, 1]";
    return "{data_processor: Hdf5DataProcessor, data_dir: d, batch_size: 2, num_classes: " +
           std::to_string(model["num_classes"].get<int>()) + ", image_shape: " + shape + "}";
  }
  if (name == "bert/classifier")
    return "{data_processor: SST2DataProcessor, data_dir: d, batch_size: 2, "
           "max_sequence_length: 8}";
  if (name == "bert/token_classifier")
    return "{data_processor: BertTokenClassifierDataProcessor, data_dir: d, batch_size: 2, "
           "max_sequence_length: 8}";
  if (name == "bert/extractive_summarization")
    return "{data_processor: BertSumCSVDataProcessor, data_dir: d, batch_size: 2, "
           "max_sequence_length: 8, max_cls_tokens: 3}";
  return "{data_processor: BertCSVDynamicMaskDataProcessor, data_dir: d, vocab_file: v, "
         "batch_size: 2, "
         "max_sequence_length: 8, max_predictions_per_seq: 3}";
}

}  // namespace

std::vector<GoldenCurve> golden_curves(CurvePrecision precision) {
  std::ifstream file(std::string(CSRUN_TEST_DATA) + "/golden/curves.json");
  if (!file) throw std::runtime_error("cannot read golden/curves.json");
  json golden = json::parse(file);
  std::vector<GoldenCurve> curves;
  for (const json& c : golden["cases"]) {
    bool autocast = c.contains("autocast");
    if (autocast != (precision == CurvePrecision::bfloat16_autocast)) continue;
    json init = c["params"];
    init["loop"] = {{"max_steps", 20}};
    auto loaded =
        load_params_text("trainer:\n  init: " + init.dump() +
                         "\n  fit:\n    train_dataloader: " + loader_for(init["model"]) + "\n");
    if (loaded.diagnostics.has_errors()) throw std::runtime_error(loaded.dump());
    const config::TrainerSpec& trainer = loaded.trainer();
    config::Diagnostics diagnostics;
    auto model = models::check_model(trainer, diagnostics);
    if (!model) throw std::runtime_error("golden model does not check: " + init.dump());
    models::TraceOptions options{
        models::StepKind::train, 1, {*trainer.optimizer, trainer.schedulers, trainer.precision}};
    GoldenCurve curve{
        .name = c["name"],
        .batch_size = c["batch_size"],
        .losses = c["losses"].get<std::vector<double>>(),
        .loss_scales = c.value("loss_scales", std::vector<double>{}),
        .parameters = {},
        .init = init.dump(),
        .statistics = {},
        .eval_loss = std::nullopt,
        .model = *model,
        .step = models::trace_step(*model, c["batch_size"].get<std::int64_t>(), options)};
    for (const json& p : c["parameters"])
      curve.parameters.emplace_back(p["name"], p["shape"].get<graph::Shape>());
    if (c.contains("statistics")) {
      for (const auto& [name, values] : c["statistics"].items())
        curve.statistics[name] = values.get<std::vector<double>>();
      curve.eval_loss = c["eval_loss"].get<double>();
    }
    curves.push_back(std::move(curve));
  }
  return curves;
}

graph::Feeds golden_batch(const GoldenCurve& curve, int step) {
  return batch_of(curve.step.batch, step);
}

graph::Feeds golden_initial_state(const graph::Graph& graph) {
  graph::Feeds state;
  for (const graph::Variable& variable : graph.variables()) {
    graph::TensorType type = graph.node(variable.node).type;
    double start = variable.init.name == "constant" ? variable.init.value
                   : variable.init.name == "ones"   ? 1.0
                                                    : 0.0;
    std::vector<double> values(static_cast<std::size_t>(graph::element_count(type.shape)), start);
    if (variable.role == graph::VariableRole::parameter)
      values = golden_initial_weight(variable.name, values.size());
    state[variable.name] = HostTensor{type.shape, type.dtype, std::move(values)};
  }
  return state;
}

}  // namespace csrun::test
