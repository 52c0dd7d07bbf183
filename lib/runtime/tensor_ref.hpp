#pragma once

// The runtime's internal view of a value in the arena (or in a kernel's scratch) and the
// per-node work a kernel does. Not part of the public header: it is how kernels see memory.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "chain_program.hpp"
#include "compiled_chain.hpp"
#include "graph/graph.hpp"
#include "graph/number_formats.hpp"
#include "half_precision.hpp"

namespace csrun::runtime {

class ThreadTeam;

inline constexpr int kMaxRank = 8;
using Dims = std::array<std::int64_t, kMaxRank>;

struct TensorRef {
  std::byte* data = nullptr;
  graph::DType dtype = graph::DType::f32;
  int rank = 0;
  Dims shape{};
  std::int64_t count = 0;

  float* f32() const { return reinterpret_cast<float*>(data); }
  std::int32_t* i32() const { return reinterpret_cast<std::int32_t*>(data); }
  std::uint8_t* boolean() const { return reinterpret_cast<std::uint8_t*>(data); }
  std::uint16_t* half() const { return reinterpret_cast<std::uint16_t*>(data); }
  std::int64_t dim(int axis) const { return shape[static_cast<std::size_t>(axis)]; }
};

// Element access for any dtype, through double: exact for every dtype the graph has.
inline double load(const TensorRef& t, std::int64_t i) {
  switch (t.dtype) {
    case graph::DType::f32:
      return t.f32()[i];
    case graph::DType::i32:
      return t.i32()[i];
    case graph::DType::boolean:
      return t.boolean()[i];
    default:
      return widen_from_half(t.half()[i], t.dtype);
  }
}

inline void store(const TensorRef& t, std::int64_t i, double value) {
  switch (t.dtype) {
    case graph::DType::f32:
      t.f32()[i] = static_cast<float>(value);
      return;
    case graph::DType::i32:
      t.i32()[i] = graph::to_i32(value);
      return;
    case graph::DType::boolean:
      t.boolean()[i] = value != 0.0 ? 1 : 0;
      return;
    default:
      t.half()[i] = narrow_to_half(static_cast<float>(value), t.dtype);
  }
}

// Row-major strides of a shape, in elements.
inline Dims strides_of(const TensorRef& t) {
  Dims strides{};
  std::int64_t stride = 1;
  for (int axis = t.rank; axis-- > 0;) {
    strides[static_cast<std::size_t>(axis)] = stride;
    stride *= t.dim(axis);
  }
  return strides;
}

// f32 work space of the kernels' tasks: one area the executable shares between its kernels, which
// run one at a time.
struct TaskScratch {
  float* data = nullptr;
  std::int64_t floats = 0;
};

// A softmax's or softmax_grad's row chain (compiler::HostStep::row_chain, softmax_chain): its
// program and, where the kernel set runs it so, its machine code (compiled_chain.hpp). No program:
// none.
struct RowChain {
  std::shared_ptr<const ChainProgram> program;
  std::optional<CompiledChain> compiled;

  explicit operator bool() const { return program != nullptr; }
};

// One node's work: its result and operands in memory and, for kernels that need it, scratch
// sized when the plan is loaded (operands widened to f32, a product before narrowing), so that
// running it allocates nothing.
// A dropout node a kernel applies as it goes, row by row: the node, its operand and its step
// counter. Null node: none.
struct DropoutRef {
  const graph::Node* node = nullptr;
  TensorRef source;
  TensorRef step;

  explicit operator bool() const { return node != nullptr; }
};

struct NodeTask {
  const graph::Node* node = nullptr;
  TensorRef out;
  std::vector<TensorRef> in;
  // A matmul reads operand i with its last two axes swapped: a transpose folded into the GEMM.
  std::array<bool, 2> transposed{};
  // A matmul whose rows start as this row of f32 values, the product added to it: a bias add
  // folded into the GEMM. Null data: none.
  TensorRef addend;
  // A matmul whose operand b is a convolution's windows of in[1] (compiler::HostStep::windows),
  // never stored: the window's extents, and how many of the windows' columns the kernel forms at
  // a time for the GEMM to read. Empty: b is in[1] itself.
  graph::Shape windows;
  std::int64_t windows_tile = 0;
  // With `windows` and `windows_tile`: the matmul's product (task.node, never stored) is the
  // gradient of windows of out, summed onto them (compiler::HostStep::windows_sum), a tile of its
  // columns at a time.
  bool sums_windows = false;
  // A softmax also writes each f32 row rounded into this 16-bit value: a cast of its result
  // folded into it (or of the softmax a softmax_grad computes). Null data: none.
  TensorRef rounded;
  // A dropout of the softmax (compiler::HostStep::dropout) that `rounded` holds instead: each row
  // is dropped out as it is rounded.
  DropoutRef dropout;
  // A softmax_grad's dropout that computes its upstream operand (in[1], never stored) from a
  // stored value (compiler::HostStep::upstream_dropout), a few rows at a time into a row buffer.
  DropoutRef upstream_dropout;
  // A softmax's or softmax_grad's row chain (compiler::HostStep::row_chain), run over each row as
  // the kernel computes it: a softmax's writes the row of its input where the kernel then
  // normalizes it (the result's row, or a row buffer when the result is kept per row); a
  // softmax_grad's reads the kernel's row buffer.
  RowChain row_chain;
  // A softmax_grad that computes its y operand (in[0], never stored), a softmax along f32 rows
  // (compiler::HostStep::row_softmax), a few rows at a time into a row buffer, and rounds them into
  // `rounded`: from `softmax_input`, or from the rows `softmax_chain` writes there.
  bool computes_softmax = false;
  TensorRef softmax_input;
  RowChain softmax_chain;
  // The floats of scratch the kernel needs (prepare sets it) and where they are: one area the
  // executable shares between its kernels, which run one at a time.
  std::int64_t scratch_floats = 0;
  const TaskScratch* scratch = nullptr;
  ThreadTeam* team = nullptr;  // the cores a large kernel splits across; null: the caller alone
};

}  // namespace csrun::runtime
