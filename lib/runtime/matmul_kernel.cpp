#include <Eigen/Core>
#include <algorithm>
#include <memory>

#include "kernel_families.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;

// Eigen's GEMM (Goto's algorithm) called below its expression layer, with its packing buffers
// made once per kernel: a product expression would allocate them on every call once they
// outgrow the stack. Row-major operands and result, f32 accumulation.
using Blocking = Eigen::internal::gemm_blocking_space<Eigen::RowMajor, float, float, Eigen::Dynamic,
                                                      Eigen::Dynamic, Eigen::Dynamic>;
using Gemm = Eigen::internal::general_matrix_matrix_product<
    Eigen::Index, float, Eigen::RowMajor, false, float, Eigen::RowMajor, false, Eigen::RowMajor, 1>;

struct GemmState : KernelState {
  Blocking blocking;
  GemmState(std::int64_t m, std::int64_t n, std::int64_t k) : blocking(m, n, k, 1, true) {
    blocking.allocateA();
    blocking.allocateB();
  }
};

struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

GemmShape gemm_shape(const NodeTask& task) {
  const TensorRef& out = task.out;
  return {out.dim(out.rank - 2), out.dim(out.rank - 1), task.in[0].dim(task.in[0].rank - 1)};
}

// An operand as f32: in place, or widened into `scratch` (16-bit operands accumulate in f32).
const float* as_f32(const TensorRef& operand, float*& scratch) {
  if (operand.dtype == DType::f32) return operand.f32();
  float* widened = scratch;
  for (std::int64_t i = 0; i < operand.count; ++i)
    widened[i] = static_cast<float>(load(operand, i));
  scratch += operand.count;
  return widened;
}

// Offset, in matrices, of batch `index` of `operand` (NumPy broadcasting of batch axes).
std::int64_t batch_offset(std::int64_t index, const TensorRef& out, const TensorRef& operand) {
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

}  // namespace

void prepare_matmul(NodeTask& task) {
  std::int64_t floats = 0;
  for (const TensorRef& operand : task.in) {
    if (operand.dtype != DType::f32) floats += operand.count;
  }
  if (task.out.dtype != DType::f32) floats += task.out.count;
  task.scratch.assign(static_cast<std::size_t>(floats), 0.0f);
  GemmShape shape = gemm_shape(task);
  task.state = std::make_unique<GemmState>(shape.m, shape.n, shape.k);
}

void run_matmul(NodeTask& task) {
  const TensorRef& a = task.in[0];
  const TensorRef& b = task.in[1];
  const TensorRef& out = task.out;
  float* scratch = task.scratch.data();
  const float* a_data = as_f32(a, scratch);
  const float* b_data = as_f32(b, scratch);
  float* c_data = out.dtype == DType::f32 ? out.f32() : scratch;
  auto [m, n, k] = gemm_shape(task);
  auto& blocking = static_cast<GemmState&>(*task.state).blocking;
  std::fill(c_data, c_data + out.count, 0.0f);
  std::int64_t batches = m * n == 0 ? 0 : out.count / (m * n);
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    const float* lhs = a_data + batch_offset(batch, out, a) * m * k;
    const float* rhs = b_data + batch_offset(batch, out, b) * k * n;
    if (k == 0) break;
    Gemm::run(m, n, k, lhs, k, rhs, n, c_data + batch * m * n, 1, n, 1.0f, blocking, nullptr);
  }
  if (out.dtype == DType::f32) return;
  for (std::int64_t i = 0; i < out.count; ++i)
    store(out, i, c_data[i]);
}

}  // namespace csrun::runtime
