#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"

namespace csrun::models {

namespace {

using namespace config;
using T = ValueType;

std::vector<std::int64_t> integers(const ModelParams& params, const char* key) {
  std::vector<std::int64_t> values;
  for (const Node& item : params.find(key)->items())
    values.push_back(item.as_int());
  return values;
}

void check(const ModelParams& params, const DataHints& hints, Diagnostics& diagnostics) {
  std::size_t encoder = params.find("encoder_filters")->items().size();
  std::size_t decoder = params.find("decoder_filters")->items().size();
  if (decoder + 1 != encoder) {
    report_at(params, "decoder_filters",
              "UNet needs one decoder block per encoder block but the bottleneck: " +
                  std::to_string(encoder) + " encoder_filters need " + std::to_string(encoder - 1) +
                  " decoder_filters, found " + std::to_string(decoder),
              diagnostics);
  }
  if (!hints.image_shape.empty() && hints.image_shape.size() != 3) {
    report_at(params, "encoder_filters",
              "the dataloader's image_shape must be [height, width, channels]", diagnostics);
  }
}

// Convolutions of kernel k from `in` to `out` channels, with the normalization after each.
std::int64_t conv(std::int64_t k, std::int64_t in, std::int64_t out, bool bias, bool norm) {
  return k * k * in * out + (bias ? out : 0) + (norm ? 2 * out : 0);
}

std::int64_t count(const ModelParams& params, const DataHints& hints) {
  std::vector<std::int64_t> encoder = integers(params, "encoder_filters");
  std::vector<std::int64_t> decoder = integers(params, "decoder_filters");
  std::int64_t convs = static_cast<std::int64_t>(params.find("convs_per_block")->items().size());
  bool bias = params.flag("enable_bias");
  bool norm = params.has("norm_layer");
  std::int64_t channels =
      hints.image_shape.size() == 3 ? hints.image_shape[2] : params.integer("input_channels");
  std::int64_t total = 0;
  for (std::int64_t filters : encoder) {
    for (std::int64_t i = 0; i < convs; ++i) {
      total += conv(3, i == 0 ? channels : filters, filters, bias, norm);
    }
    channels = filters;
  }
  for (std::size_t j = 0; j < decoder.size(); ++j) {
    std::int64_t skip = encoder[encoder.size() - 2 - j];
    total += 2 * 2 * channels * decoder[j] + (bias ? decoder[j] : 0);  // transposed 2x2 upsample
    for (std::int64_t i = 0; i < convs; ++i) {
      total += conv(3, i == 0 ? decoder[j] + skip : decoder[j], decoder[j], bias, norm);
    }
    channels = decoder[j];
  }
  std::int64_t classes = hints.num_classes.value_or(params.integer("num_classes"));
  std::int64_t outputs = params.has("num_output_channels") ? params.integer("num_output_channels")
                         : classes > 2                     ? classes
                                                           : 1;
  return total + conv(1, channels, outputs, true, false);
}

}  // namespace

ModelDefinition unet_definition() {
  auto schema = make_schema(
      "model unet",
      {
          default_field("nonlinearity", activation_type(), value("ReLU")),
          default_field("skip_connect", T::boolean(), value(true)),
          default_field("enable_bias", T::boolean(), value(true)),
          default_field("downscale_method", T::choice({"max_pool", "strided_conv"}),
                        value("max_pool")),
          default_field("convs_per_block", T::list_of(T::choice({"3x3_conv"}), 1),
                        [] {
                          Node list = Node::make_list();
                          list.push_back(value("3x3_conv"));
                          list.push_back(value("3x3_conv"));
                          return list;
                        }()),
          required_field("encoder_filters", T::list_of(dimension(), 2)),
          required_field("decoder_filters", T::list_of(dimension(), 1)),
          default_field("residual_blocks", T::boolean(), value(false)),
          optional_field("initializer", initializer_type()),
          optional_field("bias_initializer", initializer_type()),
          default_field("loss", T::choice({"bce", "multilabel_bce", "ssce", "ssce_dice"}),
                        value("bce")),
          // 1.9's UNet also named its group norms 'group' and 'group_instance'.
          optional_field("norm_layer", norm_type({"group", "group_instance"}).or_null()),
          optional_field("norm_kwargs", T::mapping().or_null()),
          default_field("num_classes", dimension(), value(2)),
          optional_field("num_output_channels", dimension()),
          default_field("input_channels", dimension(), value(1)),
          optional_field("downscale_first_conv", T::boolean()),
          optional_field("downscale_encoder_blocks",
                         T::any_of({T::boolean(), T::list_of(T::boolean())})),
          optional_field("downscale_bottleneck", T::boolean()),
          optional_field("use_conv3d", T::boolean()),
          optional_field("eval_ignore_classes", T::list_of(non_negative_integer()).or_null()),
          optional_field("eval_metrics", T::list_of(T::string())),
          // Release 1.9 and 2.0.
          default_field("ignore_background_class", T::boolean(), value(true)),
          default_field("dropout_rate", dropout_type(), value(0.0)),
          optional_field("initial_conv_filters", dimension().or_null()),
          optional_field("norm_weight_initializer", initializer_type()),
          default_field("compute_eval_metrics", T::boolean(), value(true)),
      });
  return ModelDefinition{"unet",
                         "UNet segmentation network: convolutional encoder, bottleneck, decoder "
                         "with skip connections",
                         {"SeverstalBinaryClassDataProcessor", "InriaAerialDataProcessor",
                          "SkmDataProcessor", "CityscapesDataProcessor"},
                         schema,
                         check,
                         count,
                         {},  // no builder yet: checked and sized only
                         {}};
}

}  // namespace csrun::models
