#include "convolution.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "initializers.hpp"

namespace csrun::nn {

namespace {

using graph::Shape;
using graph::Tensor;

std::int64_t spatial_axes(const Tensor& x, const char* layer) {
  std::int64_t axes = x.rank() - 2;
  if (axes < 1 || axes > 3) {
    throw std::invalid_argument(std::string(layer) +
                                " takes [N, C, spatial...] with one to three spatial axes, not " +
                                graph::shape_string(x.shape()));
  }
  return axes;
}

Shape with_axis(Shape shape, std::size_t axis, std::int64_t size) {
  shape[axis] = size;
  return shape;
}

// `count` elements of `axis` from `begin`, every `stride`-th: the elements' phase 0 of a slice
// viewed as [count, stride] along the axis.
Tensor take(const Tensor& x, std::int64_t axis, std::int64_t begin, std::int64_t count,
            std::int64_t stride) {
  Tensor part = graph::slice(x, axis, begin, begin + count * stride);
  Shape split = part.shape();
  auto a = static_cast<std::size_t>(axis);
  split[a] = count;
  split.insert(split.begin() + axis + 1, stride);
  Tensor phases = graph::reshape(part, split);
  return graph::reshape(graph::slice(phases, axis + 1, 0, 1), with_axis(part.shape(), a, count));
}

// The window of `outputs` positions at kernel offset `offset`, every `stride`-th.
Tensor window_at(const Tensor& padded, const Shape& offset, const Shape& outputs,
                 std::int64_t stride) {
  Tensor piece = padded;
  for (std::size_t a = 0; a < offset.size(); ++a)
    piece = take(piece, static_cast<std::int64_t>(2 + a), offset[a], outputs[a], stride);
  return piece;
}

// The kernel offsets of `axes` spatial axes in row-major order (PyTorch's weight layout).
std::vector<Shape> kernel_offsets(std::int64_t axes, std::int64_t kernel) {
  std::vector<Shape> offsets = {{}};
  for (std::int64_t a = 0; a < axes; ++a) {
    std::vector<Shape> longer;
    for (const Shape& offset : offsets) {
      for (std::int64_t k = 0; k < kernel; ++k) {
        Shape next = offset;
        next.push_back(k);
        longer.push_back(next);
      }
    }
    offsets = std::move(longer);
  }
  return offsets;
}

// A strided convolution's windows [N, C, K, positions]: a strided slice per kernel offset,
// concatenated (the windows op takes every position; a stride takes one in `stride`).
Tensor strided_windows(const Tensor& padded, std::int64_t axes, std::int64_t kernel,
                       const Shape& outputs, std::int64_t stride) {
  std::int64_t positions = graph::element_count(outputs);
  std::vector<Tensor> columns;
  for (const Shape& offset : kernel_offsets(axes, kernel)) {
    Tensor piece = window_at(padded, offset, outputs, stride);
    columns.push_back(graph::reshape(piece, {padded.dim(0), padded.dim(1), 1, positions}));
  }
  return columns.size() == 1 ? columns.front() : graph::concat(columns, 2);
}

// x's channels broadcast over the spatial axes: a per-channel vector as [C, 1, ...].
Tensor per_channel(const Tensor& vector, std::int64_t spatial) {
  Shape shape = {vector.dim(0)};
  shape.insert(shape.end(), static_cast<std::size_t>(spatial), 1);
  return graph::reshape(vector, shape);
}

}  // namespace

Tensor convolve(const Tensor& x, const Tensor& weight, std::int64_t stride, std::int64_t padding) {
  std::int64_t axes = spatial_axes(x, "a convolution");
  if (weight.rank() != x.rank() || weight.dim(1) != x.dim(1)) {
    throw std::invalid_argument("a convolution of " + graph::shape_string(x.shape()) +
                                " takes a weight [out, " + std::to_string(x.dim(1)) +
                                ", kernel...], not " + graph::shape_string(weight.shape()));
  }
  std::int64_t k = weight.dim(2);
  bool square = std::all_of(weight.shape().begin() + 2, weight.shape().end(),
                            [k](std::int64_t size) { return size == k; });
  if (!square || stride < 1 || padding < 0) {
    throw std::invalid_argument(
        "csrun convolves with kernels of one size along every axis, a "
        "stride >= 1 and padding >= 0, not weight " +
        graph::shape_string(weight.shape()) + ", stride " + std::to_string(stride) + ", padding " +
        std::to_string(padding));
  }
  Shape outputs;
  std::vector<std::int64_t> before(2, 0);
  std::vector<std::int64_t> after(2, 0);
  for (std::int64_t a = 0; a < axes; ++a) {
    std::int64_t padded = x.dim(2 + a) + 2 * padding;
    if (padded < k) {
      throw std::invalid_argument("a convolution of kernel " + std::to_string(k) +
                                  " does not fit spatial axis " + std::to_string(a) + " of " +
                                  graph::shape_string(x.shape()) + " padded by " +
                                  std::to_string(padding));
    }
    std::int64_t out = (padded - k) / stride + 1;
    outputs.push_back(out);
    before.push_back(padding);
    // Room for the last kernel offset's strided window.
    after.push_back(padding + std::max<std::int64_t>(0, k - 1 + out * stride - padded));
  }
  // The weight's matrix first: a product that forms the windows as it multiplies (fuse-matmul)
  // takes operands made before the windows.
  std::int64_t out_channels = weight.dim(0);
  Shape window_extents(static_cast<std::size_t>(axes), k);
  Tensor weights =
      graph::reshape(weight, {out_channels, x.dim(1) * graph::element_count(window_extents)});
  Tensor padded = graph::pad(x, before, after);
  std::int64_t batch = x.dim(0);
  std::int64_t positions = graph::element_count(outputs);
  Tensor im2col = stride == 1 ? graph::windows(padded, window_extents)
                              : strided_windows(padded, axes, k, outputs, stride);
  im2col = graph::reshape(im2col, {batch, weights.dim(1), positions});
  Tensor y = graph::matmul(weights, im2col);
  Shape result = {batch, out_channels};
  result.insert(result.end(), outputs.begin(), outputs.end());
  return graph::reshape(y, result);
}

Tensor convolution(const Scope& scope, const Tensor& x, const ConvolutionOptions& options) {
  auto entered = scope.enter();
  std::int64_t axes = spatial_axes(x, "a convolution");
  Shape weight_shape = {options.out_channels, x.dim(1)};
  weight_shape.insert(weight_shape.end(), static_cast<std::size_t>(axes), options.kernel);
  Tensor weight = scope.parameter("weight", weight_shape, options.weight_init);
  Tensor y = convolve(x, weight, options.stride, options.padding);
  if (!options.bias) return y;
  Tensor bias = scope.parameter("bias", {options.out_channels}, options.bias_init);
  return y + per_channel(bias, axes);
}

Tensor upsample_convolve(const Tensor& x, const Tensor& weight) {
  std::int64_t axes = spatial_axes(x, "a transposed convolution");
  if (weight.rank() != x.rank() || weight.dim(0) != x.dim(1)) {
    throw std::invalid_argument("a transposed convolution of " + graph::shape_string(x.shape()) +
                                " takes a weight [" + std::to_string(x.dim(1)) +
                                ", out, kernel...], not " + graph::shape_string(weight.shape()));
  }
  std::int64_t k = weight.dim(2);
  std::int64_t batch = x.dim(0);
  std::int64_t channels = x.dim(1);
  std::int64_t out = weight.dim(1);
  Shape inputs(x.shape().begin() + 2, x.shape().end());
  std::int64_t positions = graph::element_count(inputs);
  std::int64_t window = graph::element_count(weight.shape()) / (channels * out);
  // [out * window, C] x [N, C, P]: each input position's kernel-sized block of outputs.
  Tensor columns = graph::reshape(x, {batch, channels, positions});
  Tensor blocks = graph::matmul(
      graph::swap_last_axes(graph::reshape(weight, {channels, out * window})), columns);
  // [N * out, k..., I...] -> [N * out, I_0, k, I_1, k, ...]: one axis's kernel moved beside its
  // input axis at a time, so no transpose has more than five axes.
  std::int64_t done = batch * out;  // the leading axes already in place
  std::int64_t kernels_left = window;
  std::int64_t inputs_left = positions;
  for (std::int64_t a = 0; a < axes; ++a) {
    std::int64_t length = inputs[static_cast<std::size_t>(a)];
    kernels_left /= k;
    inputs_left /= length;
    Tensor view = graph::reshape(blocks, {done, k, kernels_left, length, inputs_left});
    blocks = graph::transpose(view, {0, 3, 1, 2, 4});
    done *= length * k;
  }
  Shape result = {batch, out};
  for (std::int64_t length : inputs)
    result.push_back(length * k);
  return graph::reshape(blocks, result);
}

Tensor upsampling_convolution(const Scope& scope, const Tensor& x,
                              const ConvolutionOptions& options) {
  auto entered = scope.enter();
  std::int64_t axes = spatial_axes(x, "a transposed convolution");
  if (options.kernel != options.stride || options.padding != 0) {
    throw std::invalid_argument(
        "csrun builds transposed convolutions whose kernel equals their stride, without padding");
  }
  Shape weight_shape = {x.dim(1), options.out_channels};
  weight_shape.insert(weight_shape.end(), static_cast<std::size_t>(axes), options.kernel);
  Tensor weight = scope.parameter("weight", weight_shape, options.weight_init);
  Tensor y = upsample_convolve(x, weight);
  if (!options.bias) return y;
  Tensor bias = scope.parameter("bias", {options.out_channels}, options.bias_init);
  return y + per_channel(bias, axes);
}

Tensor max_pool(const Tensor& x, std::int64_t window) {
  std::int64_t axes = spatial_axes(x, "max pooling");
  Tensor y = x;
  for (std::int64_t a = 0; a < axes; ++a) {
    auto axis = static_cast<std::size_t>(2 + a);
    std::int64_t windows = y.dim(static_cast<std::int64_t>(axis)) / window;
    if (windows == 0) {
      throw std::invalid_argument("max pooling by " + std::to_string(window) +
                                  " does not fit spatial axis " + std::to_string(a) + " of " +
                                  graph::shape_string(x.shape()));
    }
    y = graph::slice(y, static_cast<std::int64_t>(axis), 0, windows * window);
    std::int64_t outer = 1;
    for (std::size_t i = 0; i < axis; ++i)
      outer *= y.shape()[i];
    std::int64_t inner = graph::element_count(y.shape()) / (outer * windows * window);
    Tensor view = graph::reshape(y, {outer, windows, window, inner});
    y = graph::reshape(graph::reduce_max(view, {2}), with_axis(y.shape(), axis, windows));
  }
  return y;
}

Tensor group_normalize(const Tensor& x, std::int64_t groups, double eps) {
  std::int64_t channels = x.dim(1);
  if (groups <= 0 || channels % groups != 0) {
    throw std::invalid_argument("group normalization of " + std::to_string(channels) +
                                " channels needs a number of groups that divides them, not " +
                                std::to_string(groups));
  }
  std::int64_t batch = x.dim(0);
  Tensor grouped =
      graph::reshape(x, {batch, groups, graph::element_count(x.shape()) / (batch * groups)});
  return graph::reshape(graph::layer_norm(grouped, eps), x.shape());
}

namespace {

// [N, C, spatial...] as [C, N * positions]: each channel's values in one row.
Tensor channel_rows(const Tensor& x) {
  std::int64_t batch = x.dim(0);
  std::int64_t channels = x.dim(1);
  std::int64_t positions = graph::element_count(x.shape()) / (batch * channels);
  return graph::reshape(
      graph::transpose(graph::reshape(x, {batch, channels, positions}), {1, 0, 2}),
      {channels, batch * positions});
}

}  // namespace

Tensor batch_normalize(const Tensor& x, double eps) {
  std::int64_t batch = x.dim(0);
  std::int64_t channels = x.dim(1);
  std::int64_t positions = graph::element_count(x.shape()) / (batch * channels);
  Tensor normalized = graph::transpose(
      graph::reshape(graph::layer_norm(channel_rows(x), eps), {channels, batch, positions}),
      {1, 0, 2});
  return graph::reshape(normalized, x.shape());
}

namespace {

Tensor scale_and_shift(const Scope& scope, const Tensor& normalized, const NormInit& init) {
  std::int64_t channels = normalized.dim(1);
  std::int64_t axes = normalized.rank() - 2;
  Tensor weight = scope.parameter("weight", {channels}, init.weight);
  Tensor bias = scope.parameter("bias", {channels}, init.bias);
  Tensor shift = per_channel(bias, axes);
  return normalized * per_channel(weight, axes) + shift;
}

}  // namespace

Tensor group_norm(const Scope& scope, const Tensor& x, std::int64_t groups, double eps,
                  const NormInit& init) {
  auto entered = scope.enter();
  scope.context().add_normalization_module(scope.prefix());
  return scale_and_shift(scope, group_normalize(x, groups, eps), init);
}

Tensor batch_norm(const Scope& scope, const Tensor& x, double eps, const NormInit& init,
                  double momentum) {
  auto entered = scope.enter();
  scope.context().add_normalization_module(scope.prefix());
  std::int64_t channels = x.dim(1);
  std::int64_t axes = x.rank() - 2;
  Tensor running_mean = scope.statistic("running_mean", {channels}, zeros_initializer());
  Tensor running_var = scope.statistic("running_var", {channels}, ones_initializer());
  StepContext& context = scope.context();
  if (!context.training()) {
    Tensor centered = x - per_channel(running_mean, axes);
    return scale_and_shift(scope, centered * per_channel(graph::rsqrt(running_var + eps), axes),
                           init);
  }
  Tensor rows = channel_rows(x);
  double positions = static_cast<double>(rows.dim(1) / x.dim(0));
  context.add_running_moments(
      {running_mean, running_var, graph::sum(rows, {1}), graph::sum(rows * rows, {1}),
       static_cast<double>(context.global_samples(x.dim(0))) * positions, momentum});
  return scale_and_shift(scope, batch_normalize(x, eps), init);
}

}  // namespace csrun::nn
