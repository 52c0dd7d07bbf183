#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "types.hpp"

namespace csrun::graph {

// Every operation of the IR. Each is defined in one place per concern: its type rule
// (shape_inference.cpp), its value (reference_evaluator.cpp), its gradient (vjp_rules.cpp).
enum class OpKind : std::uint8_t {
  // Leaves.
  input,     // a batch tensor fed each step
  variable,  // state kept across steps: a parameter, optimizer state, the global step
  constant,  // attrs.values: one value (splat) or one per element
  iota,      // the index along attrs.axis, of type attrs.dtype and shape attrs.shape
  // Elementwise, with NumPy broadcasting.
  add,
  sub,
  mul,
  div,
  pow,
  maximum,
  minimum,
  less,
  less_equal,
  greater,
  greater_equal,
  equal,
  not_equal,
  logical_and,
  logical_or,
  logical_not,
  where,  // (condition, a, b)
  neg,
  abs,
  exp,
  log,
  sqrt,
  rsqrt,
  sin,
  cos,
  tanh,
  sigmoid,
  relu,
  erf,
  gelu,       // attrs.approximate: the tanh form
  is_finite,  // true where the value is neither infinite nor NaN
  cast,       // to attrs.dtype, rounding to nearest even
  // Reductions over attrs.axes (attrs.keepdims).
  reduce_sum,
  reduce_mean,
  reduce_max,
  argmax,  // along attrs.axis, to i32
  // Layout.
  reshape,       // to attrs.shape
  transpose,     // by attrs.perm
  slice,         // attrs.begins / attrs.ends per axis
  pad,           // zeros: attrs.begins before, attrs.ends after, per axis
  concat,        // along attrs.axis
  broadcast_to,  // attrs.shape
  // Linear algebra and neural-network primitives.
  matmul,       // [..., M, K] x [..., K, N], batch dimensions broadcast; the result is
                // attrs.dtype: the operands' dtype, or f32 (16-bit operands, f32 accumulation)
  softmax,      // along attrs.axis
  log_softmax,  // along attrs.axis
  // (logits [..., C], labels [...] i32): -log_softmax(logits)[label] per row, computed in one
  // pass; a label outside [0, C) gives 0 (as a one-hot product would)
  softmax_cross_entropy,
  // (logits, labels, g [...]): g * (softmax(logits) - one_hot(labels)) per row, the gradient of
  // softmax_cross_entropy; 0 on a row whose label is outside [0, C)
  softmax_cross_entropy_grad,
  layer_norm,   // (x - mean) / sqrt(var + attrs.eps) over the last axis, no affine
  gather,       // rows of a [V, ...] table at integer indices of any shape
  scatter_add,  // (indices, updates) summed into attrs.depth rows: gather's gradient
  one_hot,      // integer indices to attrs.dtype vectors of length attrs.depth
  dropout,      // (x, step): zero with probability attrs.rate, deterministic in
                // (attrs.seed, attrs.salt, step, element)
};

const char* op_name(OpKind op);

enum class OpClass : std::uint8_t { leaf, elementwise, reduction, layout, compute };
OpClass op_class(OpKind op);

bool is_binary_elementwise(OpKind op);
bool is_unary_elementwise(OpKind op);
bool is_comparison(OpKind op);  // produces booleans

// The parameters of a node; which fields an op reads is listed at the op above.
struct Attributes {
  Shape shape;
  std::vector<std::int64_t> axes;
  std::vector<std::int64_t> perm;
  std::vector<std::int64_t> begins;
  std::vector<std::int64_t> ends;
  std::vector<double> values;
  std::int64_t axis = 0;
  std::int64_t depth = 0;
  bool keepdims = false;
  bool approximate = false;
  double eps = 0.0;
  double rate = 0.0;
  std::uint64_t seed = 0;
  std::uint64_t salt = 0;
  DType dtype = DType::f32;

  friend bool operator==(const Attributes&, const Attributes&) = default;
};

// A transpose permutation that swaps the last two axes and keeps the others: a matrix transpose
// of each batch element, which a GEMM can read in place.
bool swaps_last_two_axes(std::span<const std::int64_t> perm);

}  // namespace csrun::graph
