// 20-step training curves of tiny fc_mnist, gpt2 and bert models against PyTorch
// (test/data/golden/curves.json, made by scripts/golden/curves.py): same initial weights, same
// batches; the traced training step runs on the fp64 reference evaluator. Relative error <= 1e-4.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>

#include "graph/reference_evaluator.hpp"
#include "models/step_trace.hpp"
#include "support/golden.hpp"
#include "support/params_fixture.hpp"

using namespace csrun;
using graph::HostTensor;
using nlohmann::json;

namespace {

std::vector<double> uniforms(const std::string& stream, std::size_t count) {
  std::vector<double> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = test::golden_value(stream, i);
  return values;
}

std::vector<double> integers(const std::string& stream, std::size_t count, double limit) {
  std::vector<double> values = uniforms(stream, count);
  for (double& v : values)
    v = std::floor(v * limit);
  return values;
}

// The batch of `step` as scripts/golden/curves.py makes it, for every field of the layout.
graph::Feeds golden_batch(const models::BatchLayout& layout, int step, double vocab) {
  graph::Feeds feeds;
  for (const models::BatchField& field : layout) {
    const graph::Shape& shape = field.type.shape;
    auto count = static_cast<std::size_t>(graph::element_count(shape));
    std::string stream = "data." + field.name + "." + std::to_string(step);
    std::vector<double> values;
    if (field.name == "input") {
      for (double v : uniforms(stream, count))
        values.push_back(static_cast<float>(v));
    } else if (field.name == "labels" && shape.size() == 1) {
      values = integers(stream, count, 10);
    } else if (field.name == "input_ids" || field.name == "labels" ||
               field.name == "masked_lm_labels") {
      values = integers(stream, count, vocab);
    } else if (field.name == "masked_lm_positions") {
      values = integers(stream, count, static_cast<double>(layout[0].type.shape[1]));
    } else if (field.name == "next_sentence_label") {
      values = integers(stream, count, 2);
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
    } else if (field.name == "token_type_ids") {
      std::size_t length = static_cast<std::size_t>(shape[1]);
      for (std::size_t i = 0; i < count; ++i)
        values.push_back(i % length >= length / 2 ? 1.0 : 0.0);
    } else if (field.name == "masked_lm_weights") {
      values.assign(count, 1.0);
      values[static_cast<std::size_t>(shape[1]) - 1] = 0.0;
    }
    REQUIRE(values.size() == count);
    feeds[field.name] = HostTensor{shape, field.type.dtype, std::move(values)};
  }
  return feeds;
}

// A dataloader for the model's hints (sequence length, masked positions).
std::string loader_for(const json& model) {
  std::string name = model["name"];
  if (name == "fc_mnist") return "{data_processor: MNISTDataProcessor, batch_size: 4}";
  if (name == "gpt2")
    return "{data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 2, "
           "max_sequence_length: 8}";
  return "{data_processor: BertCSVDynamicMaskDataProcessor, data_dir: d, vocab_file: v, "
         "batch_size: 2, "
         "max_sequence_length: 8, max_predictions_per_seq: 3}";
}

}  // namespace

TEST_CASE("20-step training curves match PyTorch") {
  std::ifstream file(std::string(CSRUN_TEST_DATA) + "/golden/curves.json");
  REQUIRE(file);
  json golden = json::parse(file);
  for (const json& c : golden["cases"]) {
    std::string name = c["name"];
    INFO(name);
    json init = c["params"];
    init["loop"] = {{"max_steps", 20}};
    auto loaded = test::load_params_text(
        "trainer:\n  init: " + init.dump() +
        "\n  fit:\n    train_dataloader: " + loader_for(init["model"]) + "\n");
    INFO(loaded.dump());
    REQUIRE_FALSE(loaded.diagnostics.has_errors());
    const config::TrainerSpec& trainer = loaded.trainer();
    config::Diagnostics diagnostics;
    auto model = models::check_model(trainer, diagnostics);
    REQUIRE(model);
    models::TraceOptions options{
        models::StepKind::train, 1, {*trainer.optimizer, trainer.schedulers, trainer.precision}};
    models::TracedStep step =
        models::trace_step(*model, c["batch_size"].get<std::int64_t>(), options);

    // Parameter names and shapes are PyTorch's.
    std::set<std::pair<std::string, graph::Shape>> ours;
    graph::Feeds state;
    for (const graph::Variable& variable : step.graph.variables()) {
      graph::TensorType type = step.graph.node(variable.node).type;
      std::vector<double> values(static_cast<std::size_t>(graph::element_count(type.shape)),
                                 variable.init.name == "constant" ? variable.init.value : 0.0);
      if (variable.role == graph::VariableRole::parameter) {
        ours.insert({variable.name, type.shape});
        values = test::golden_initial_weight(variable.name, values.size());
      }
      state[variable.name] = HostTensor{type.shape, type.dtype, std::move(values)};
    }
    std::set<std::pair<std::string, graph::Shape>> theirs;
    for (const json& p : c["parameters"])
      theirs.insert({p["name"], p["shape"].get<graph::Shape>()});
    for (const auto& [name, shape] : ours) {
      INFO("csrun has " << name << " " << graph::shape_string(shape));
      CHECK(theirs.count({name, shape}) == 1);
    }
    for (const auto& [name, shape] : theirs) {
      INFO("PyTorch has " << name << " " << graph::shape_string(shape));
      CHECK(ours.count({name, shape}) == 1);
    }
    CHECK(step.parameter_count == model->parameter_count);

    std::vector<graph::NodeId> fetch;
    for (const graph::NamedNode& update : step.graph.updates())
      fetch.push_back(update.node);
    std::size_t updates = fetch.size();
    fetch.push_back(*step.graph.find_output("loss"));
    auto scale_output = step.graph.find_output("loss_scale");
    if (scale_output) fetch.push_back(*scale_output);
    double vocab =
        init["model"].contains("vocab_size") ? init["model"]["vocab_size"].get<double>() : 10.0;
    std::vector<double> losses = c["losses"].get<std::vector<double>>();
    double worst = 0.0;
    for (std::size_t s = 0; s < losses.size(); ++s) {
      graph::Feeds feeds = state;
      graph::Feeds batch = golden_batch(step.batch, static_cast<int>(s), vocab);
      feeds.insert(batch.begin(), batch.end());
      std::vector<HostTensor> values = graph::evaluate_reference(step.graph, feeds, fetch);
      for (std::size_t u = 0; u < updates; ++u)
        state[step.graph.updates()[u].name] = values[u];
      double loss = values[updates].values[0];
      worst = std::max(worst, std::fabs(loss - losses[s]) / std::fabs(losses[s]));
      if (scale_output) CHECK(values[updates + 1].values[0] == c["loss_scales"][s].get<double>());
    }
    CHECK(worst <= 1e-4);
  }
}
