#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"

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

}  // namespace

ModelDefinition fc_mnist_definition() {
  auto schema =
      make_schema("model fc_mnist",
                  {
                      optional_field("depth", positive_integer()),
                      optional_field("hidden_size", positive_integer()),
                      optional_field("hidden_sizes", T::list_of(positive_integer(), 1)),
                      default_field("activation_fn", T::choice({"relu"}).or_null(), value("relu")),
                      default_field("dropout", dropout_type(), value(0.0)),
                      default_field("use_bias", T::boolean(), value(true)),
                      default_field("disable_softmax", T::boolean(), value(false)),
                      default_field("compute_eval_metrics", T::boolean(), value(false)),
                      default_field("to_float16", T::boolean(), value(false)),
                      precision_key_field("mixed_precision", "enabled"),
                      precision_key_field("fp16_type", "fp16_type"),
                  },
                  UnknownKeys::error_pydantic);
  return ModelDefinition{"fc_mnist",
                         "multi-layer perceptron on 28x28 digits (784 -> hidden... -> 10)",
                         {"MNISTDataProcessor"},
                         schema,
                         check,
                         count};
}

}  // namespace csrun::models
