#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>

#include "config/param_types.hpp"
#include "layer_params.hpp"
#include "model_definitions.hpp"
#include "nn/convolution.hpp"
#include "nn/initializers.hpp"
#include "nn/layers.hpp"

namespace csrun::models {

namespace {

using namespace config;
using graph::Tensor;
using T = ValueType;

std::vector<std::int64_t> integers(const ModelParams& params, const char* key) {
  std::vector<std::int64_t> values;
  for (const Node& item : params.find(key)->items())
    values.push_back(item.as_int());
  return values;
}

// The eval_metrics names segmentation_metrics computes.
constexpr std::array<std::string_view, 4> kEvalMetrics = {"mIOU", "DSC", "Acc", "MPCA"};

bool three_dimensional(const ModelParams& params) {
  return params.has("use_conv3d") && params.flag("use_conv3d");
}

// The image's spatial axes ([H, W], or [D, H, W] for 3D) and channels: the dataloader's
// image_shape is [H, W, C] in 2D, [D, H, W] in 3D (input_channels gives the channels).
struct ImageShape {
  graph::Shape spatial;
  std::int64_t channels = 1;
};

ImageShape image_shape(const ModelParams& params, const DataHints& hints) {
  ImageShape image;
  std::vector<std::int64_t> shape = hints.image_shape;
  if (shape.empty() && params.has("image_shape")) shape = integers(params, "image_shape");
  if (three_dimensional(params)) {
    image.spatial = shape;
    image.channels = params.has("input_channels") ? params.integer("input_channels") : 1;
    return image;
  }
  if (shape.size() == 3) image.spatial = {shape[0], shape[1]};
  image.channels = shape.size() == 3              ? shape[2]
                   : params.has("input_channels") ? params.integer("input_channels")
                                                  : 1;
  return image;
}

std::int64_t classes(const ModelParams& params, const DataHints& hints) {
  return hints.num_classes.value_or(params.integer("num_classes"));
}

// The Model Zoo's default: binary cross-entropy for two classes, else softmax cross-entropy.
std::string loss_of(const ModelParams& params, const DataHints& hints) {
  if (params.has("loss")) return params.text("loss");
  return classes(params, hints) <= 2 ? "bce" : "ssce";
}

std::int64_t output_channels(const ModelParams& params, const DataHints& hints) {
  if (params.has("num_output_channels")) return params.integer("num_output_channels");
  return loss_of(params, hints) == "bce" ? 1 : classes(params, hints);
}

bool enable_bias(const ModelParams& params) {
  return params.has("enable_bias") ? params.flag("enable_bias") : !params.has("norm_layer");
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
              three_dimensional(params)
                  ? "the dataloader's image_shape must be [depth, height, width] for use_conv3d"
                  : "the dataloader's image_shape must be [height, width, channels]",
              diagnostics);
  }
  if (loss_of(params, hints) == "bce" && classes(params, hints) != 2) {
    report_at(params, "loss",
              "loss 'bce' (binary cross-entropy) takes num_classes 2, not " +
                  std::to_string(classes(params, hints)) + "; use ssce for more classes",
              diagnostics);
  }
  if (const Node* listed = params.find("eval_metrics"); listed && listed->is_list()) {
    for (const Node& name : listed->items()) {
      std::string text = name.as_string();
      if (std::ranges::find(kEvalMetrics, text) == kEvalMetrics.end()) {
        warn_at(params, "eval_metrics",
                "eval metric '" + text + "' is not computed (csrun computes mIOU, DSC, Acc, MPCA)",
                diagnostics);
      }
    }
  }
}

// A kernel's elements: k along each of `axes` axes.
std::int64_t kernel_window(std::int64_t k, std::int64_t axes) {
  std::int64_t window = 1;
  for (std::int64_t a = 0; a < axes; ++a)
    window *= k;
  return window;
}

// Convolutions of kernel k (along `axes` axes) from `in` to `out` channels, with the affine
// normalization after each.
std::int64_t conv(std::int64_t k, std::int64_t axes, std::int64_t in, std::int64_t out, bool bias,
                  bool norm) {
  return kernel_window(k, axes) * in * out + (bias ? out : 0) + (norm ? 2 * out : 0);
}

std::int64_t kernel_of(const std::string& conv_type) {
  return conv_type == "1x1_conv" ? 1 : 3;
}

std::int64_t count(const ModelParams& params, const DataHints& hints) {
  std::vector<std::int64_t> encoder = integers(params, "encoder_filters");
  std::vector<std::int64_t> decoder = integers(params, "decoder_filters");
  std::vector<std::int64_t> kernels;
  for (const Node& item : params.find("convs_per_block")->items())
    kernels.push_back(kernel_of(item.as_string()));
  std::int64_t axes = three_dimensional(params) ? 3 : 2;
  bool bias = enable_bias(params);
  bool norm = params.has("norm_layer");
  std::int64_t channels = image_shape(params, hints).channels;
  std::int64_t total = 0;
  if (params.has("initial_conv_filters")) {
    total += conv(3, axes, channels, params.integer("initial_conv_filters"), bias, false);
    channels = params.integer("initial_conv_filters");
  }
  auto block = [&](std::int64_t in, std::int64_t out) {
    for (std::size_t i = 0; i < kernels.size(); ++i)
      total += conv(kernels[i], axes, i == 0 ? in : out, out, bias, norm);
  };
  for (std::int64_t filters : encoder) {
    block(channels, filters);
    channels = filters;
  }
  bool skip = params.flag("skip_connect");
  for (std::size_t j = 0; j < decoder.size() && j + 2 <= encoder.size(); ++j) {
    total += conv(2, axes, channels, decoder[j], bias, false);  // the transposed upsampling
    block(decoder[j] + (skip ? encoder[encoder.size() - 2 - j] : 0), decoder[j]);
    channels = decoder[j];
  }
  return total + conv(1, axes, channels, output_channels(params, hints), true, false);
}

BatchLayout layout(const ModelParams& params, std::int64_t batch, const DataHints& hints) {
  ImageShape image = image_shape(params, hints);
  if (image.spatial.empty()) {
    throw UnsupportedModel("encoder_filters",
                           "unet needs the dataloader's image_shape to know its input's size");
  }
  auto with_batch = [&](std::vector<std::int64_t> leading) {
    leading.insert(leading.begin(), batch);
    leading.insert(leading.end(), image.spatial.begin(), image.spatial.end());
    return leading;
  };
  std::string loss = loss_of(params, hints);
  std::int64_t classes_count = classes(params, hints);
  BatchField labels = {"labels", {with_batch({}), graph::DType::i32}, classes_count};
  if (loss == "bce") labels = {"labels", {with_batch({1}), graph::DType::f32}, 0};
  if (loss == "multilabel_bce")
    labels = {"labels", {with_batch({classes_count}), graph::DType::f32}, 0};
  return {{"input", {with_batch({image.channels}), graph::DType::f32}, 0}, labels};
}

// What the blocks of the network share, read once from the params.
struct UnetSettings {
  std::int64_t axes = 2;
  bool bias = true;
  bool strided = false;  // downscale_method strided_conv
  bool downscale_first_conv = false;
  bool residual = false;
  bool skip_connect = true;
  std::string activation;
  std::string norm;  // empty: none
  std::int64_t groups = 0;
  double eps = 1e-5;
  double momentum = 0.1;              // batch norms' running statistics
  std::vector<std::int64_t> kernels;  // per conv of a block
  graph::Initializer weight_init;
  graph::Initializer bias_init;
  nn::NormInit norm_init;
  double dropout = 0.0;
};

// A convolution of kernel k from `fan_in_channels` (the weight's dim 1) to `out` channels: the
// configured initializers in 2D, PyTorch's defaults in 3D (the Model Zoo re-initializes only 2D
// convolutions).
nn::ConvolutionOptions conv_options(const UnetSettings& s, std::int64_t out, std::int64_t kernel,
                                    std::int64_t stride, std::int64_t padding, bool bias,
                                    std::int64_t fan_in_channels) {
  nn::ConvolutionOptions options{out, kernel, stride, padding, bias, s.weight_init, s.bias_init};
  if (s.axes == 3) {
    options.weight_init = options.bias_init = nn::torch_default_initializer(
        static_cast<double>(fan_in_channels * kernel_window(kernel, s.axes)));
  }
  return options;
}

UnetSettings settings_of(const ModelParams& p) {
  UnetSettings s;
  s.axes = three_dimensional(p) ? 3 : 2;
  s.bias = enable_bias(p);
  s.strided = p.text("downscale_method") == "strided_conv";
  s.downscale_first_conv = p.has("downscale_first_conv") && p.flag("downscale_first_conv");
  s.residual = p.flag("residual_blocks");
  s.skip_connect = p.flag("skip_connect");
  s.activation = p.text("nonlinearity");
  std::ranges::transform(s.activation, s.activation.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (p.has("norm_layer")) s.norm = p.text("norm_layer");
  if (const Node* kwargs = p.find("norm_kwargs"); kwargs && kwargs->is_map()) {
    if (const Node* groups = kwargs->find("num_groups"); groups && groups->is_int())
      s.groups = groups->as_int();
    if (const Node* eps = kwargs->find("eps"); eps && eps->is_number()) s.eps = eps->as_number();
    if (const Node* momentum = kwargs->find("momentum"); momentum && momentum->is_number())
      s.momentum = momentum->as_number();
  }
  for (const Node& item : p.find("convs_per_block")->items())
    s.kernels.push_back(kernel_of(item.as_string()));
  graph::Initializer glorot;
  glorot.name = "xavier_uniform";
  s.weight_init = nn::initializer_from(p.find("initializer"), glorot);
  s.bias_init = nn::initializer_from(p.find("bias_initializer"), nn::zeros_initializer());
  s.norm_init = {nn::initializer_from(p.find("norm_weight_initializer"), nn::ones_initializer()),
                 s.bias_init};
  s.dropout = p.number("dropout_rate");
  return s;
}

void refuse_unsupported(const ModelParams& p) {
  static constexpr std::array<std::string_view, 7> kNorms = {
      "batchnorm2d",    "batchnorm3d",    "group",         "groupnorm",
      "group_instance", "instancenorm2d", "instancenorm3d"};
  refuse_unless(
      p, "unet", "norm_layer",
      !p.has("norm_layer") || std::ranges::find(kNorms, p.text("norm_layer")) != kNorms.end(),
      "batchnorm2d, batchnorm3d, group, group_instance, instancenorm2d, "
      "instancenorm3d or null");
  refuse_unless(p, "unet", "nonlinearity", nn::is_supported_activation(p.text("nonlinearity")),
                "relu, gelu, tanh, sigmoid, ...");
  const Node* kwargs = p.find("norm_kwargs");
  const Node* momentum = kwargs && kwargs->is_map() ? kwargs->find("momentum") : nullptr;
  refuse_unless(p, "unet", "norm_kwargs",
                !momentum || (momentum->is_number() && momentum->as_number() >= 0.0 &&
                              momentum->as_number() <= 1.0),
                "a momentum in [0, 1] (null, PyTorch's cumulative average, is not built)");
  const Node* convs = p.find("convs_per_block");
  refuse_unless(
      p, "unet", "convs_per_block",
      std::ranges::none_of(convs->items(),
                           [](const Node& conv) { return conv.as_string() == "3x3_dw_conv"; }),
      "3x3_conv and 1x1_conv (depthwise convolutions are not built yet)");
  refuse_unless(p, "unet", "residual_blocks",
                !p.flag("residual_blocks") || p.text("downscale_method") == "max_pool",
                "false with downscale_method strided_conv (the Model Zoo asserts max_pool)");
}

// The normalization of a ConvNormActBlock (its module 1). The Model Zoo re-initializes only
// BatchNorm2d and GroupNorm; the others keep PyTorch's ones and zeros.
Tensor normalize(const nn::Scope& scope, const Tensor& x, const UnetSettings& s) {
  if (s.norm.empty()) return x;
  if (s.norm == "batchnorm2d") return nn::batch_norm(scope, x, s.eps, s.norm_init, s.momentum);
  if (s.norm == "batchnorm3d") return nn::batch_norm(scope, x, s.eps, {}, s.momentum);
  if (s.norm == "group" || s.norm == "groupnorm") {
    if (s.groups <= 0) {
      throw UnsupportedModel("norm_kwargs",
                             "norm_layer '" + s.norm + "' needs norm_kwargs.num_groups");
    }
    return nn::group_norm(scope, x, s.groups, s.eps, s.norm_init);
  }
  // group_instance (a GroupNorm) and the instance norms: one group per channel, with affine
  // parameters (the Model Zoo turns InstanceNorm's affine on).
  return nn::group_norm(scope, x, x.dim(1), s.eps,
                        s.norm == "group_instance" ? s.norm_init : nn::NormInit{});
}

// ConvNormActBlock: conv (module 0, padding "same"), normalization (module 1), activation.
Tensor conv_norm_act(const nn::Scope& scope, const Tensor& x, std::int64_t out, std::int64_t kernel,
                     std::int64_t stride, const UnetSettings& s, const std::string& activation,
                     bool norm) {
  std::int64_t padding = ((stride - 1) + (kernel - 1)) / 2;
  Tensor y = nn::convolution(scope.child("0"), x,
                             conv_options(s, out, kernel, stride, padding, s.bias, x.dim(1)));
  if (norm) y = normalize(scope.child("1"), y, s);
  return nn::activation(activation, y);
}

// A UNetBlock: its convolutions in turn (one strided when it downscales by strided_conv), the
// residual sum; returns the block's output and the skip connection it offers the decoder.
std::pair<Tensor, Tensor> unet_block(const nn::Scope& scope, Tensor x, std::int64_t out,
                                     bool downscale, const UnetSettings& s,
                                     const std::string& activation) {
  auto entered = scope.enter();
  auto layers = static_cast<std::int64_t>(s.kernels.size());
  std::int64_t strided_layer = s.downscale_first_conv ? 0 : layers - 1;
  Tensor block_input;
  Tensor skip = x;
  for (std::int64_t i = 0; i < layers; ++i) {
    std::int64_t stride = downscale && s.strided && i == strided_layer ? 2 : 1;
    x = conv_norm_act(scope.child("layers").child(i), x, out,
                      s.kernels[static_cast<std::size_t>(i)], stride, s, activation, true);
    if (s.residual && i == 0) block_input = x;
    if (s.residual && i == layers - 1 && i > 0) x = x + block_input;
    if (s.strided && i == layers - 2) skip = x;
  }
  return {x, s.strided ? skip : x};
}

std::vector<bool> encoder_downscales(const ModelParams& p, std::size_t blocks, bool strided) {
  const Node* given = p.find("downscale_encoder_blocks");
  if (given && given->is_list()) {
    std::vector<bool> list;
    for (const Node& item : given->items())
      list.push_back(item.as_bool());
    if (list.size() < blocks) {
      throw UnsupportedModel("downscale_encoder_blocks",
                             "downscale_encoder_blocks lists " + std::to_string(list.size()) +
                                 " blocks; the encoder has " + std::to_string(blocks));
    }
    return list;
  }
  bool all = given && given->is_bool() ? given->as_bool() : strided;
  return std::vector<bool>(blocks, all);
}

Tensor network(ModelBuild& b, const UnetSettings& s) {
  const ModelParams& p = b.params;
  nn::Scope model(b.context, "model");
  Tensor x = b.input("input");
  if (p.has("initial_conv_filters")) {
    auto entered = model.child("initial_conv").enter();
    x = conv_norm_act(model.child("initial_conv"), x, p.integer("initial_conv_filters"), 3, 1, s,
                      "relu", false);
  }
  std::vector<std::int64_t> encoder = integers(p, "encoder_filters");
  std::vector<std::int64_t> decoder = integers(p, "decoder_filters");
  std::vector<bool> downscales = encoder_downscales(p, encoder.size() - 1, s.strided);
  std::vector<Tensor> skips;
  nn::Scope encoder_scope = model.child("encoder");
  for (std::size_t i = 0; i + 1 < encoder.size(); ++i) {
    auto [out, skip] =
        unet_block(encoder_scope.child("unet_blocks").child(static_cast<std::int64_t>(i)), x,
                   encoder[i], downscales[i], s, s.activation);
    if (s.skip_connect) skips.push_back(skip);
    x = s.strided ? out : nn::max_pool(out, 2);
    x = nn::dropout(b.context, x, s.dropout);
  }
  // The Model Zoo builds the bottleneck without its activation argument: always relu.
  bool downscale_bottleneck = p.has("downscale_bottleneck") && p.flag("downscale_bottleneck");
  x = unet_block(model.child("bottleneck"), x, encoder.back(), downscale_bottleneck, s, "relu")
          .first;
  nn::Scope decoder_scope = model.child("decoder");
  for (std::size_t j = 0; j < decoder.size(); ++j) {
    auto index = static_cast<std::int64_t>(j);
    nn::Scope upsample = decoder_scope.child("transpose_layers").child(index);
    // A transposed convolution's weight is [in, out, k...]: its dim 1 is the output.
    x = nn::upsampling_convolution(upsample, x,
                                   conv_options(s, decoder[j], 2, 2, 0, s.bias, decoder[j]));
    if (s.skip_connect) x = graph::concat({x, skips[skips.size() - 1 - j]}, 1);
    x = unet_block(decoder_scope.child("unet_blocks").child(index), x, decoder[j], false, s,
                   s.activation)
            .first;
    if (s.skip_connect) x = nn::dropout(b.context, x, s.dropout);
  }
  nn::Scope final_conv = model.child("final_conv");
  auto entered = final_conv.enter();
  return nn::convolution(final_conv.child("0"), x,
                         conv_options(s, output_channels(p, b.hints), 1, 1, 0, true, x.dim(1)));
}

// The Model Zoo's numerically stable binary cross-entropy with logits, per element:
// (1 - y) x + m + log(exp(-m) + exp(-x - m)), m = max(-x, 0).
Tensor binary_cross_entropy(const Tensor& logits, const Tensor& labels) {
  Tensor m = graph::relu(-logits);
  Tensor exp_shifted = graph::exp(-logits - m);
  Tensor log_sum = graph::log(graph::exp(-m) + exp_shifted);
  return (1.0 - labels) * logits + m + log_sum;
}

// Channels-first logits [N, C, spatial...] as one row of C per pixel: [N * positions, C].
Tensor pixel_rows(const Tensor& logits) {
  std::int64_t batch = logits.dim(0);
  std::int64_t channels = logits.dim(1);
  std::int64_t positions = graph::element_count(logits.shape()) / (batch * channels);
  Tensor flat = graph::reshape(logits, {batch, channels, positions});
  return graph::reshape(graph::swap_last_axes(flat), {batch * positions, channels});
}

// The Model Zoo's DiceCELoss's dice term per sample: the mean over classes of 2 sum(p t) /
// (sum t + sum p + 1e-6), p the softmax over channels and t the one-hot labels; with the
// background ignored, class 0 counts as 0 and the mean is rescaled to the other classes.
Tensor dice_per_sample(const Tensor& logits, const Tensor& labels, bool include_background) {
  std::int64_t batch = logits.dim(0);
  std::int64_t channels = logits.dim(1);
  std::int64_t positions = graph::element_count(logits.shape()) / (batch * channels);
  Tensor probabilities =
      graph::reshape(graph::softmax(pixel_rows(logits), -1), {batch, positions, channels});
  Tensor targets = graph::one_hot(graph::reshape(labels, {batch, positions}), channels);
  if (!include_background) {
    std::vector<double> keep(static_cast<std::size_t>(channels), 1.0);
    keep[0] = 0.0;
    Tensor mask = graph::constant_values(logits.graph(), keep, {channels});
    probabilities = probabilities * mask;
    targets = targets * mask;
  }
  Tensor overlap = graph::sum(probabilities * targets, {1});
  Tensor predicted = graph::sum(probabilities, {1});
  Tensor denominator = graph::sum(targets, {1}) + predicted + 1e-6;
  Tensor score = 2.0 * overlap / denominator;
  double counted =
      include_background ? static_cast<double>(channels) : static_cast<double>(channels - 1);
  return graph::sum(score, {1}) / counted;
}

// The loss of the batch as the Model Zoo's UNet computes it (a mean over the batch's elements),
// summed per sample and averaged over the (global) batch.
Tensor unet_loss(ModelBuild& b, const std::string& loss, const Tensor& logits,
                 const Tensor& labels) {
  std::int64_t batch = logits.dim(0);
  double per_sample = static_cast<double>(graph::element_count(labels.shape()) / batch);
  if (loss == "bce" || loss == "multilabel_bce") {
    return b.context.average_over_samples(
        graph::sum(binary_cross_entropy(logits, labels)) / per_sample, batch);
  }
  Tensor rows = pixel_rows(logits);
  Tensor cross_entropy =
      graph::sum(nn::cross_entropy(rows, graph::reshape(labels, {rows.dim(0)}))) / per_sample;
  if (loss == "ssce") return b.context.average_over_samples(cross_entropy, batch);
  bool include_background = !b.params.flag("ignore_background_class");
  Tensor dice = graph::sum(dice_per_sample(logits, labels, include_background));
  Tensor dice_loss = 0.5 * (static_cast<double>(batch) - dice);
  return b.context.average_over_samples(0.5 * cross_entropy + dice_loss, batch);
}

}  // namespace

std::vector<nn::Metric> segmentation_metrics(const ModelParams& p, const std::string& loss,
                                             const Tensor& logits, const Tensor& labels,
                                             std::int64_t classes_count) {
  Tensor predicted =
      loss == "bce" ? graph::cast(logits > 0.5, graph::DType::i32) : graph::argmax(logits, 1);
  Tensor actual = loss == "bce"              ? graph::cast(labels > 0.5, graph::DType::i32)
                  : loss == "multilabel_bce" ? graph::argmax(labels, 1)
                                             : labels;
  graph::Shape pixels = actual.shape();
  if (loss == "bce") pixels.erase(pixels.begin() + 1);
  predicted = graph::reshape(predicted, pixels);
  actual = graph::reshape(actual, pixels);
  std::set<std::int64_t> ignored;
  if (const Node* listed = p.find("eval_ignore_classes"); listed && listed->is_list()) {
    for (const Node& value : listed->items())
      ignored.insert(value.as_int());
  }
  // Every pixel counts, as in the Model Zoo's PyTorch UNet from 1.9 on: its mean IoU and Dice
  // leave the ignored classes out of their means, its accuracy counts them.
  auto count_of = [](const Tensor& condition) {
    return graph::sum(graph::cast(condition, graph::DType::f32));
  };
  std::vector<Tensor> hits, unions, doubled, totals, class_hits, class_counts;
  for (std::int64_t c = 0; c < classes_count; ++c) {
    if (ignored.contains(c)) {
      // TensorFlow's per-class accuracy (MPCA) weighs an ignored class's pixels 0: it counts 0.
      Tensor zero = graph::constant(logits.graph(), 0.0);
      class_hits.push_back(zero);
      class_counts.push_back(zero);
      continue;
    }
    Tensor is_actual = graph::equal(actual, static_cast<double>(c));
    Tensor is_predicted = graph::equal(predicted, static_cast<double>(c));
    Tensor hit = count_of(graph::logical_and(is_actual, is_predicted));
    Tensor actual_count = count_of(is_actual);
    Tensor both = actual_count + count_of(is_predicted);
    class_hits.push_back(hit);
    class_counts.push_back(actual_count);
    hits.push_back(hit);
    unions.push_back(both - hit);
    doubled.push_back(2.0 * hit);
    totals.push_back(both);
  }
  Tensor correct = count_of(graph::equal(predicted, actual));
  Tensor pixel_count =
      graph::constant(logits.graph(), static_cast<double>(graph::element_count(pixels)));
  std::vector<std::string> wanted = {"mIOU", "DSC", "Acc"};
  if (const Node* listed = p.find("eval_metrics"); listed && listed->is_list()) {
    wanted.clear();
    for (const Node& name : listed->items())
      wanted.push_back(name.as_string());
  }
  std::vector<nn::Metric> metrics;
  for (const std::string& name : wanted) {
    if (name == "mIOU")
      metrics.push_back(
          {"eval/mean_iou", ratio_metric(hits, unions), nn::MetricAverage::ratio_of_present});
    if (name == "DSC")
      metrics.push_back({"eval/dice_coefficient", ratio_metric(doubled, totals),
                         nn::MetricAverage::ratio_of_present});
    if (name == "Acc")
      metrics.push_back(
          {"eval/accuracy", ratio_metric({correct}, {pixel_count}), nn::MetricAverage::ratio});
    if (name == "MPCA")
      metrics.push_back({"eval/mean_per_class_accuracy", ratio_metric(class_hits, class_counts),
                         nn::MetricAverage::ratio});
  }
  return metrics;
}

namespace {

// The Model Zoo's UNet: an optional initial convolution, encoder blocks each followed by max
// pooling (or downscaled by a strided convolution), the bottleneck, decoder blocks that upsample
// by a transposed convolution and concatenate the encoder's skip connection, and a 1x1
// convolution to the output channels; its loss and eval metrics.
ModelOutputs build(ModelBuild& b) {
  const ModelParams& p = b.params;
  refuse_unsupported(p);
  UnetSettings s = settings_of(p);
  Tensor logits = network(b, s);
  const Tensor& labels = b.input("labels");
  std::string loss = loss_of(p, b.hints);
  ModelOutputs result;
  result.loss = unet_loss(b, loss, logits, labels);
  if (p.flag("compute_eval_metrics"))
    result.metrics = segmentation_metrics(p, loss, logits, labels, classes(p, b.hints));
  return result;
}

}  // namespace

ModelDefinition unet_definition() {
  auto schema = make_schema(
      "model unet",
      {
          default_field("nonlinearity", activation_type(), value("ReLU")),
          default_field("skip_connect", T::boolean(), value(true)),
          // The Model Zoo's default: a bias when there is no normalization.
          optional_field("enable_bias", T::boolean()),
          default_field("downscale_method", T::choice({"max_pool", "strided_conv"}),
                        value("max_pool")),
          default_field("convs_per_block",
                        T::list_of(T::choice({"3x3_conv", "1x1_conv", "3x3_dw_conv"}), 1),
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
          // The Model Zoo's default: bce for two classes, else ssce.
          optional_field("loss", T::choice({"bce", "multilabel_bce", "ssce", "ssce_dice"})),
          // 1.9's UNet also named its group norms 'group' and 'group_instance'.
          optional_field("norm_layer", norm_type({"group", "group_instance"}).or_null()),
          optional_field("norm_kwargs", T::mapping().or_null()),
          default_field("num_classes", dimension(), value(2)),
          optional_field("num_output_channels", dimension()),
          optional_field("input_channels", dimension()),
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
          // The Model Zoo copies the input's image_shape here; it sizes the network when no
          // dataloader says (a dataloader's image_shape wins).
          optional_field("image_shape", T::list_of(dimension(), 3, 3)),
      });
  return ModelDefinition{
      "unet",
      "UNet segmentation network: convolutional encoder, bottleneck, decoder "
      "with skip connections",
      {"Hdf5DataProcessor", "SeverstalBinaryClassDataProcessor", "InriaAerialDataProcessor",
       "SkmDataProcessor", "CityscapesDataProcessor"},
      schema,
      check,
      count,
      layout,
      build};
}

}  // namespace csrun::models
