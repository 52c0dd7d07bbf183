#pragma once

#include <cstdint>

#include "graph/tensor.hpp"
#include "initializers.hpp"
#include "scope.hpp"

namespace csrun::nn {

// Convolutional layers over channels-first tensors [N, C, spatial...] of one to three spatial
// axes, as PyTorch's Conv{1,2,3}d, ConvTranspose and MaxPool lay them out. They are lowered
// while tracing to ops the graph has: a convolution is im2col (the `windows` of its padded input;
// with a stride, a strided slice per kernel offset, concatenated) and one matrix product, so
// kernels, costs, placement and gradients are those of windows (their gradient `windows_sum`),
// slices and GEMMs.

struct ConvolutionOptions {
  std::int64_t out_channels = 0;
  std::int64_t kernel = 1;  // along every spatial axis
  std::int64_t stride = 1;
  std::int64_t padding = 0;  // zeros on both sides of every spatial axis
  bool bias = true;
  graph::Initializer weight_init;
  graph::Initializer bias_init;
};

// The convolution of x [N, C, spatial...] with weight [out, C, kernel...] (the same kernel along
// every axis), zero-padded by `padding` on both sides of each spatial axis.
graph::Tensor convolve(const graph::Tensor& x, const graph::Tensor& weight, std::int64_t stride,
                       std::int64_t padding);
// The layer: scope.weight [out, C, kernel...] and scope.bias [out].
graph::Tensor convolution(const Scope& scope, const graph::Tensor& x,
                          const ConvolutionOptions& options);

// The transposed convolution of x [N, C, spatial...] with weight [C, out, kernel...] (PyTorch's
// ConvTranspose layout) whose stride equals its kernel (the UNet's upsampling: the kernel's
// outputs do not overlap); each spatial axis grows by the kernel.
graph::Tensor upsample_convolve(const graph::Tensor& x, const graph::Tensor& weight);
// The layer: scope.weight [C, out, kernel...] and scope.bias [out].
graph::Tensor upsampling_convolution(const Scope& scope, const graph::Tensor& x,
                                     const ConvolutionOptions& options);

// The maximum over windows of `window` elements along every spatial axis, stepping by the window
// (PyTorch's MaxPool with kernel = stride; trailing elements that fill no window are dropped).
graph::Tensor max_pool(const graph::Tensor& x, std::int64_t window);

// The initial values of a normalization's scale and shift (PyTorch's: ones and zeros).
struct NormInit {
  graph::Initializer weight = ones_initializer();
  graph::Initializer bias = zeros_initializer();
};

// Each sample's channels in `groups` groups, each normalized over its channels and spatial
// positions (PyTorch's group_norm without weight and bias).
graph::Tensor group_normalize(const graph::Tensor& x, std::int64_t groups, double eps);
// Each channel normalized over the batch and its spatial positions with the batch's (biased)
// variance (PyTorch's batch_norm in training mode, without weight and bias).
graph::Tensor batch_normalize(const graph::Tensor& x, double eps);

// PyTorch's GroupNorm: group_normalize, then scaled and shifted per channel (scope.weight,
// scope.bias). One group per channel is InstanceNorm with affine parameters.
graph::Tensor group_norm(const Scope& scope, const graph::Tensor& x, std::int64_t groups,
                         double eps, const NormInit& init);

// PyTorch's BatchNorm: while training, batch_normalize, and the running statistics
// (scope.running_mean, scope.running_var) move by `momentum` toward the mean and unbiased variance
// of the step's global batch (StepContext::add_running_moments); in evaluation, normalized by the
// running statistics. Then scaled and shifted (scope.weight, scope.bias).
graph::Tensor batch_norm(const Scope& scope, const graph::Tensor& x, double eps,
                         const NormInit& init, double momentum);

}  // namespace csrun::nn
