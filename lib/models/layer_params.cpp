#include "layer_params.hpp"

#include "config/param_types.hpp"

namespace csrun::models {

using config::ValueType;
using T = config::ValueType;

namespace {

// The Model Zoo reads an initializer's number given as a nonlinearity's name as that
// nonlinearity's gain (torch.nn.init.calculate_gain), as in {name: xavier_uniform, gain: relu}.
ValueType number_or_gain(ValueType number) {
  return T::any_of(
      {std::move(number),
       T::choice({"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu"})});
}

}  // namespace

config::ValueType initializer_type() {
  static const auto schema = config::make_schema(
      "initializer",
      {
          config::required_field(
              "name",
              T::choice({"normal", "truncated_normal", "uniform", "xavier_uniform", "xavier_normal",
                         "glorot_uniform", "glorot_normal", "kaiming_uniform", "kaiming_normal",
                         "he_uniform", "he_normal", "lecun_uniform", "lecun_normal",
                         "variance_scaling", "zeros", "ones", "constant", "eye"})),
          config::optional_field("mean", number_or_gain(T::number())),
          config::optional_field("std", number_or_gain(config::non_negative_number())),
          config::optional_field("a", number_or_gain(T::number())),
          config::optional_field("b", number_or_gain(T::number())),
          config::optional_field("gain", number_or_gain(config::non_negative_number())),
          config::optional_field("val", number_or_gain(T::number())),
          config::optional_field("value", number_or_gain(T::number())),
          config::optional_field("scale", number_or_gain(config::non_negative_number())),
          config::optional_field("mode", T::choice({"fan_in", "fan_out", "fan_avg"})),
          config::optional_field("distribution",
                                 T::choice({"normal", "truncated_normal", "uniform"})),
          config::optional_field("nonlinearity", T::string()),
      },
      config::UnknownKeys::error_plain);
  return T::any_of(
      {T::choice({"zeros", "ones", "eye", "normal", "truncated_normal", "uniform", "xavier_uniform",
                  "xavier_normal", "glorot_uniform", "glorot_normal", "kaiming_uniform",
                  "kaiming_normal", "lecun_normal", "lecun_uniform"}),
       T::record(schema), T::null()});
}

config::ValueType activation_type() {
  return T::choice({"gelu",   "gelu_new", "gelu_fast", "quick_gelu", "relu",  "relu6", "leaky_relu",
                    "silu",   "swish",    "swiglu",    "geglu",      "reglu", "tanh",  "sigmoid",
                    "linear", "ReLU",     "LeakyReLU", "GELU",       "SiLU",  "Tanh",  "Sigmoid"});
}

config::ValueType dropout_type() {
  return T::number({0.0, 1.0, false, true});
}

config::ValueType norm_type(const std::vector<std::string>& earlier_spellings) {
  std::vector<std::string> words = {"layernorm",      "rmsnorm",       "biasless-layernorm",
                                    "batchnorm2d",    "batchnorm3d",   "groupnorm",
                                    "instancenorm2d", "instancenorm3d"};
  words.insert(words.end(), earlier_spellings.begin(), earlier_spellings.end());
  return T::choice(std::move(words));
}

config::ValueType position_embedding_type() {
  return T::any_of({T::choice({"learned", "fixed", "relative", "rotary", "alibi"}), T::null()});
}

bool is_gated_activation(const std::string& name) {
  return name == "swiglu" || name == "geglu" || name == "reglu";
}

std::int64_t norm_parameters(const std::string& norm, std::int64_t width) {
  return norm == "layernorm" || norm == "batchnorm2d" || norm == "groupnorm" ? 2 * width : width;
}

std::vector<config::Field> mup_fields() {
  return {
      config::optional_field("output_logits_alpha", T::number().or_null()),
      config::optional_field("mup_base_hidden_size", config::positive_number().or_null()),
      config::optional_field("mup_base_filter_size", config::positive_number().or_null()),
      config::optional_field("embeddings_scale", T::number()),
      config::optional_field("scale_qk_dot_by_d", T::boolean()),
      config::optional_field("attention_logits_alpha", T::number().or_null()),
  };
}

std::vector<config::Field> position_encoding_fields() {
  return {
      config::optional_field("rotary_dim", config::dimension().or_null()),
      config::default_field("rope_theta", config::positive_number(), config::value(10000.0)),
      config::optional_field("fold_rope_consts", T::boolean()),
      config::optional_field("pad_rope", T::boolean()),
      config::optional_field("pos_scaling_factor", config::positive_number()),
      config::optional_field("pos_scaling_type",
                             T::choice({"linear", "yarn", "YaRN", "llama3", "longrope"}).or_null()),
      config::optional_field("pos_scaling_extra_args", T::mapping().or_null()),
      config::optional_field("alibi_trainable_slopes", T::boolean()),
      config::optional_field("num_relative_attention_buckets", config::positive_integer()),
  };
}

std::vector<config::Field> generation_fields() {
  std::vector<config::Field> fields;
  for (const char* key : {"start_token", "loop_dim", "stop_sequences", "max_tokens", "temperature",
                          "top_k", "top_p"}) {
    fields.push_back(config::no_effect_field(
        key, std::string(key) +
                 " is a text-generation key of the Model Zoo's inference; csrun trains and "
                 "evaluates, so it has no effect"));
  }
  return fields;
}

config::Field derived_field(const std::string& name, const std::string& decided_by) {
  return config::no_effect_field(
      name, name + " is set by the Model Zoo itself; it has no effect (" + decided_by + ")");
}

config::Field earlier_release_field(const std::string& name, const std::string& release,
                                    const std::string& instead) {
  return config::no_effect_field(name,
                                 name + " is a Model Zoo " + release + " key; it has no effect" +
                                     (instead.empty() ? std::string() : " (" + instead + ")"));
}

}  // namespace csrun::models
