
#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"
#include "nn/initializers.hpp"
#include "nn/layers.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

constexpr std::int64_t kInputFeatures = 28 * 28;
constexpr std::int64_t kClasses = 10;

std::vector<std::int64_t> hidden_sizes(const ModelParams& params) {
  std::vector<std::int64_t> sizes;
  if (params.has("hidden_sizes")) {
    for (const Node& size : params.find("hidden_sizes")->items())
      sizes.push_back(size.as_int());
    return sizes;
  }
  if (params.has("depth") && params.has("hidden_size")) {
    sizes.assign(static_cast<std::size_t>(params.integer("depth")), params.integer("hidden_size"));
  }
  return sizes;
}

void check(const ModelParams& params, const DataHints&, Diagnostics& diagnostics) {
  if (params.has("hidden_sizes")) {
    if (params.has("depth") &&
        params.integer("depth") !=
            static_cast<std::int64_t>(params.find("hidden_sizes")->items().size())) {
      warn_at(params, "depth",
              "hidden_sizes gives the layers, so depth is ignored (it disagrees with the " +
                  std::to_string(params.find("hidden_sizes")->items().size()) + " sizes listed)",
              diagnostics);
    }
    return;
  }
  if (!params.has("depth") || !params.has("hidden_size")) {
    report_at(params, params.has("depth") ? "hidden_size" : "depth",
              "fc_mnist needs its hidden layers: give hidden_sizes (a list), or depth and "
              "hidden_size",
              diagnostics);
  }
}

std::int64_t count(const ModelParams& params, const DataHints&) {
  std::vector<std::int64_t> widths = {kInputFeatures};
  for (std::int64_t size : hidden_sizes(params))
    widths.push_back(size);
  widths.push_back(kClasses);
  bool bias = params.flag("use_bias");
  std::int64_t total = 0;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    total += widths[i] * widths[i + 1] + (bias ? widths[i + 1] : 0);
  }
  return total;
}

BatchLayout layout(const ModelParams&, std::int64_t batch, const DataHints&) {
  return {{"input", {{batch, kInputFeatures}, graph::DType::f32}},
          {"labels", {{batch}, graph::DType::i32}}};
}

// PyTorch's default nn.Linear initialization.
nn::LinearOptions torch_linear(std::int64_t in_features, bool bias) {
  graph::Initializer uniform = nn::torch_default_initializer(static_cast<double>(in_features));
  return {bias, uniform, uniform};
}

// The Model Zoo's MNIST model: fc_layers (linear, activation, dropout), last_layer, then
// log_softmax (unless disable_softmax) and the negative log-likelihood.
ModelOutputs build(ModelBuild& b) {
  const ModelParams& p = b.params;
  nn::Scope model(b.context, "model");
  bool bias = p.flag("use_bias");
  graph::Tensor x = b.input("input");
  std::vector<std::int64_t> sizes = hidden_sizes(p);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    nn::Scope layer = model.child("fc_layers").child(static_cast<std::int64_t>(i));
    auto entered = layer.enter();
    x = nn::linear(layer, x, sizes[i], torch_linear(x.dim(-1), bias));
    if (p.has("activation_fn")) x = nn::activation(p.text("activation_fn"), x);
    x = nn::dropout(b.context, x, p.number("dropout"));
  }
  nn::Scope last = model.child("last_layer");
  auto entered = last.enter();  // also holds the loss and metrics
  graph::Tensor logits = nn::linear(last, x, kClasses, torch_linear(x.dim(-1), bias));
  graph::Tensor outputs = p.flag("disable_softmax") ? logits : graph::log_softmax(logits, -1);
  const graph::Tensor& labels = b.input("labels");
  ModelOutputs result;
  result.loss = b.context.average_over_samples(
      -graph::sum(outputs * graph::one_hot(labels, kClasses)), labels.dim(0));
  if (p.flag("compute_eval_metrics")) {
    graph::Tensor hits =
        graph::cast(graph::equal(graph::argmax(logits, -1), labels), graph::DType::f32);
    result.metrics.push_back({"accuracy", graph::mean(hits)});
  }
  return result;
}

}  // namespace

ModelDefinition fc_mnist_definition() {
  auto schema =
      make_schema("model fc_mnist",
                  {
                      optional_field("depth", layer_count()),
                      optional_field("hidden_size", dimension()),
                      optional_field("hidden_sizes", T::list_of(dimension(), 1)),
                      default_field("activation_fn", T::choice({"relu"}).or_null(), value("relu")),
                      default_field("dropout", dropout_type(), value(0.0)),
                      default_field("use_bias", T::boolean(), value(true)),
                      default_field("disable_softmax", T::boolean(), value(false)),
                      default_field("compute_eval_metrics", T::boolean(), value(false)),
                      default_field("to_float16", T::boolean(), value(false)),
                  },
                  UnknownKeys::error_pydantic);
  return ModelDefinition{"fc_mnist",
                         "multi-layer perceptron on 28x28 digits (784 -> hidden... -> 10)",
                         {"MNISTDataProcessor"},
                         schema,
                         check,
                         count,
                         layout,
                         build};
}

}  // namespace csrun::models
