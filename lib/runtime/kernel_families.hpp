#pragma once

// The kernels of each op family, and the loops they share: the sources of every kernel set
// (kernel_set.hpp). Internal to lib/runtime.

#include <array>
#include <cstring>

#include "kernel_set.hpp"
#include "tensor_ref.hpp"

namespace csrun::runtime {

// This set's KernelSet entries.
void prepare_node(NodeTask& task);
void run_node(NodeTask& task);
void run_elementwise(NodeTask& task);
void run_chain_program(const ChainProgram& program, float* registers, std::int64_t first,
                       std::int64_t last, double* chunk_sums);
// The same for a program without sums whose row register (ChainProgram::row_register) holds
// `row`'s values, or whose row result (ChainProgram::row_result) it writes there: element i of
// the run at row[i - first].
void run_chain_program_on_row(const ChainProgram& program, float* registers, std::int64_t first,
                              std::int64_t last, float* row);
void run_layout(NodeTask& task);
void run_windows_sum(NodeTask& task);  // windows' gradient (layout_kernels.cpp, beside windows)
void run_reduction(NodeTask& task);
void prepare_reduction(NodeTask& task);      // a long row's sum takes scratch for its chunks
void run_normalization(NodeTask& task);      // softmax, log_softmax, softmax_grad, layer_norm
void prepare_normalization(NodeTask& task);  // a row chain's registers and rows
void run_cross_entropy(NodeTask& task);      // softmax_cross_entropy and its gradient
void prepare_cross_entropy(NodeTask& task);
void run_matmul(NodeTask& task);
void prepare_matmul(NodeTask& task);
// A matmul whose operand b is a convolution's windows of in[1], formed a tile at a time
// (NodeTask::windows; windowed_product.cpp).
void run_windowed_product(NodeTask& task);
void prepare_windowed_product(NodeTask& task);
// A matmul whose product is the gradient of a convolution's windows, summed onto them in out a
// tile at a time (NodeTask::sums_windows; windows_sum_product.cpp).
void run_windows_sum_product(NodeTask& task);
void prepare_windows_sum_product(NodeTask& task);

// One GEMM call of a kernel that lays out its own operands (tiled_product.hpp), through the
// library this set multiplies such a shape with (matmul_kernel.cpp): row-major out += op(a) op(b),
// op(a) m x k and op(b) k x n, with the leading dimensions given; f32 operands, or with `bf16`
// two bfloat16 operands in a set that multiplies them in hardware. The result is f32.
struct TileGemm {
  const void* a = nullptr;
  bool a_transposed = false;
  std::int64_t lda = 0;
  const void* b = nullptr;
  bool b_transposed = false;
  std::int64_t ldb = 0;
  float* out = nullptr;
  std::int64_t ldc = 0;
  std::int64_t m = 0, n = 0, k = 0;
  bool bf16 = false;
};
// Once per shape, before a step makes such calls (oneDNN makes its kernel); pointers unused.
void prepare_tile_gemm(const TileGemm& gemm);
void multiply_tile_gemm(const TileGemm& gemm);
// Whether this set's products of two bfloat16 operands run as bfloat16 GEMMs (amx, avx512bf16),
// not widened to f32 first (matmul_kernel.cpp: the AVX-512 sets share every other kernel).
bool multiplies_bf16_in_hardware();
void run_table(NodeTask& task);         // gather, scatter_add, one_hot, dropout
void fill_static_leaf(NodeTask& task);  // constant, iota

// `count` values rounded to, or widened from, the 16-bit format `dtype`, across `team` when
// that repays waking it (null: on the caller).
void narrow_on_team(ThreadTeam* team, const float* values, std::uint16_t* out, std::int64_t count,
                    graph::DType dtype);
void widen_on_team(ThreadTeam* team, const std::uint16_t* bits, float* out, std::int64_t count,
                   graph::DType dtype);

// Strides of `operand` as it is read for each element of a result of rank `rank` (NumPy
// broadcasting: 0 along the axes it is broadcast over).
inline Dims broadcast_strides(const TensorRef& operand, int rank) {
  Dims strides{};
  Dims own = strides_of(operand);
  int skip = rank - operand.rank;
  for (int axis = 0; axis < operand.rank; ++axis) {
    auto a = static_cast<std::size_t>(axis);
    strides[a + static_cast<std::size_t>(skip)] = operand.dim(axis) == 1 ? 0 : own[a];
  }
  return strides;
}

// Walks rows [first_row, last_row) of `shape` (rows along its last axis), keeping, for each of N
// strided operands, the offset of the row's first element. Calls row(position, offsets, length,
// steps), where `position` is the row's row-major position in `shape` and steps are the
// operands' strides along the last axis. No allocation.
template <std::size_t N, class Row>
void for_each_row(const TensorRef& shape, const std::array<Dims, N>& strides,
                  std::int64_t first_row, std::int64_t last_row, Row&& row) {
  using Offsets = std::array<std::int64_t, N>;
  if (shape.count == 0 || first_row >= last_row) return;
  if (shape.rank == 0) {
    row(std::int64_t{0}, Offsets{}, std::int64_t{1}, Offsets{});
    return;
  }
  auto last = static_cast<std::size_t>(shape.rank - 1);
  std::int64_t length = shape.shape[last];
  Offsets steps{};
  for (std::size_t k = 0; k < N; ++k)
    steps[k] = strides[k][last];
  Dims index{};
  Offsets offsets{};
  std::int64_t rest = first_row;
  for (std::size_t axis = last; axis-- > 0;) {
    index[axis] = rest % shape.shape[axis];
    rest /= shape.shape[axis];
    for (std::size_t k = 0; k < N; ++k)
      offsets[k] += index[axis] * strides[k][axis];
  }
  for (std::int64_t r = first_row; r < last_row; ++r) {
    row(r * length, offsets, length, steps);
    for (std::size_t axis = last; axis-- > 0;) {
      if (++index[axis] < shape.shape[axis]) {
        for (std::size_t k = 0; k < N; ++k)
          offsets[k] += strides[k][axis];
        break;
      }
      for (std::size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][axis] * (shape.shape[axis] - 1);
      index[axis] = 0;
    }
  }
}

// Offset, in matrices, of batch `index` of `operand` (NumPy broadcasting of batch axes).
inline std::int64_t batch_offset(std::int64_t index, const TensorRef& out,
                                 const TensorRef& operand) {
  int out_batch_rank = out.rank - 2;
  int operand_batch_rank = operand.rank - 2;
  std::int64_t offset = 0;
  std::int64_t stride = 1;
  for (int axis = out_batch_rank; axis-- > 0;) {
    std::int64_t size = out.dim(axis);
    std::int64_t position = index % size;
    index /= size;
    int operand_axis = axis - (out_batch_rank - operand_batch_rank);
    if (operand_axis < 0) continue;
    std::int64_t operand_size = operand.dim(operand_axis);
    if (operand_size != 1) offset += position * stride;
    stride *= operand_size;
  }
  return offset;
}

// The rows of `shape`: its elements over its last axis's length (a scalar is one row).
inline std::int64_t rows_of(const TensorRef& shape) {
  if (shape.count == 0) return 0;
  return shape.rank == 0 ? 1 : shape.count / shape.shape[static_cast<std::size_t>(shape.rank - 1)];
}

// Every row of `shape`, as above.
template <std::size_t N, class Row>
void for_each_row(const TensorRef& shape, const std::array<Dims, N>& strides, Row&& row) {
  for_each_row(shape, strides, 0, rows_of(shape), row);
}

// A value viewed as [outer, length, inner] around `axis`.
struct AxisSplit {
  std::int64_t outer = 1;
  std::int64_t length = 1;
  std::int64_t inner = 1;
};

inline AxisSplit split_at(const TensorRef& t, int first_axis, int last_axis) {
  AxisSplit split;
  for (int axis = 0; axis < t.rank; ++axis) {
    if (axis < first_axis) {
      split.outer *= t.dim(axis);
    } else if (axis <= last_axis) {
      split.length *= t.dim(axis);
    } else {
      split.inner *= t.dim(axis);
    }
  }
  return split;
}

}  // namespace csrun::runtime
