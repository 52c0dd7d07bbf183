#include <cblas.h>

#include <algorithm>

#include "kernel_families.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;

struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

GemmShape gemm_shape(const NodeTask& task) {
  const TensorRef& out = task.out;
  const TensorRef& a = task.in[0];
  int contracted_axis = task.transposed[0] ? a.rank - 2 : a.rank - 1;
  return {out.dim(out.rank - 2), out.dim(out.rank - 1), a.dim(contracted_axis)};
}

// Rows [first, first + rows) of one row-major product out = addend + op(a) * op(b), straight
// through OpenBLAS's sgemm: the transposes are flags, the row block an offset and a leading
// dimension, so nothing is copied or allocated. Each row starts as the addend (a bias) or zero,
// and beta = 1 adds the product to it: OpenBLAS would clear the rows for beta = 0 itself, more
// slowly than memset.
void multiply_rows(const float* a, bool a_transposed, const float* b, bool b_transposed,
                   const float* addend, float* out, GemmShape shape, std::int64_t first,
                   std::int64_t rows) {
  auto [m, n, k] = shape;
  float* block = out + first * n;
  if (addend == nullptr) {
    std::fill_n(block, rows * n, 0.0f);
  } else {
    for (std::int64_t row = 0; row < rows; ++row)
      std::copy_n(addend, n, block + row * n);
  }
  const float* lhs = a_transposed ? a + first : a + first * k;
  auto flag = [](bool transposed) { return transposed ? CblasTrans : CblasNoTrans; };
  cblas_sgemm(CblasRowMajor, flag(a_transposed), flag(b_transposed), static_cast<int>(rows),
              static_cast<int>(n), static_cast<int>(k), 1.0f, lhs,
              static_cast<int>(a_transposed ? m : k), b, static_cast<int>(b_transposed ? k : n),
              1.0f, block, static_cast<int>(n));
}

// Below this many multiply-adds a product is one block: waking the team costs more.
constexpr std::int64_t kSplitMultiplyAdds = 1 << 20;
constexpr std::int64_t kMinBlockRows = 64;
constexpr std::int64_t kMaxBlocks = 16;

// The row blocks of a product, from its shape alone. OpenBLAS may round a block differently for
// another block height (it picks kernels by size), so blocks that depended on the number of cores
// would make a run's bits depend on the machine (or on the cores an MPI rank is bound to).
std::int64_t row_blocks(GemmShape shape) {
  if (shape.m * shape.n * shape.k < kSplitMultiplyAdds) return 1;
  return std::clamp<std::int64_t>(shape.m / kMinBlockRows, 1, kMaxBlocks);
}

// One product, its row blocks shared out across the team.
void multiply(const float* a, bool a_transposed, const float* b, bool b_transposed,
              const float* addend, float* out, GemmShape shape, ThreadTeam* team) {
  std::int64_t blocks = row_blocks(shape);
  auto block = [&](std::int64_t index) {
    std::int64_t first = shape.m * index / blocks;
    std::int64_t last = shape.m * (index + 1) / blocks;
    multiply_rows(a, a_transposed, b, b_transposed, addend, out, shape, first, last - first);
  };
  std::int64_t members = team == nullptr ? 1 : team->size();
  if (blocks == 1 || members == 1) {
    for (std::int64_t index = 0; index < blocks; ++index)
      block(index);
    return;
  }
  auto share = [&](int part) {
    for (std::int64_t index = part; index < blocks; index += members)
      block(index);
  };
  team->run(share);
}

// An operand as f32: in place, or widened into `scratch` (16-bit operands accumulate in f32).
const float* as_f32(const TensorRef& operand, float*& scratch) {
  if (operand.dtype == DType::f32) return operand.f32();
  float* widened = scratch;
  widen_from_half(operand.half(), widened, operand.count, operand.dtype);
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
  // OpenBLAS's own threads would allocate a job table on every product; the products are split
  // across the executable's ThreadTeam instead, each part running single-threaded OpenBLAS.
  static const bool single_threaded_blas = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)single_threaded_blas;
  std::int64_t floats = 0;
  for (const TensorRef& operand : task.in) {
    if (operand.dtype != DType::f32) floats += operand.count;
  }
  if (task.out.dtype != DType::f32) floats += task.out.count;
  task.scratch_floats = floats;
}

void run_matmul(NodeTask& task) {
  const TensorRef& a = task.in[0];
  const TensorRef& b = task.in[1];
  const TensorRef& out = task.out;
  float* scratch = task.scratch ? task.scratch->data() : nullptr;
  const float* a_data = as_f32(a, scratch);
  const float* b_data = as_f32(b, scratch);
  float* c_data = out.dtype == DType::f32 ? out.f32() : scratch;
  const float* addend = task.addend.f32();
  GemmShape shape = gemm_shape(task);
  auto [m, n, k] = shape;
  std::int64_t batches = m * n == 0 ? 0 : out.count / (m * n);
  auto operand_a = [&](std::int64_t batch) { return a_data + batch_offset(batch, out, a) * m * k; };
  auto operand_b = [&](std::int64_t batch) { return b_data + batch_offset(batch, out, b) * k * n; };
  if (batches == 1) {
    multiply(operand_a(0), task.transposed[0], operand_b(0), task.transposed[1], addend, c_data,
             shape, task.team);
  } else {
    // Many products (attention heads): whole products, shared out across the team when they
    // repay waking it; a product is one block whatever the cores, so the bits are the same.
    auto product = [&](std::int64_t batch) {
      multiply_rows(operand_a(batch), task.transposed[0], operand_b(batch), task.transposed[1],
                    addend, c_data + batch * m * n, shape, 0, m);
    };
    std::int64_t members = task.team == nullptr ? 1 : task.team->size();
    if (members == 1 || batches * m * n * k < kSplitMultiplyAdds) {
      for (std::int64_t batch = 0; batch < batches; ++batch)
        product(batch);
    } else {
      auto share = [&](int part) {
        for (std::int64_t batch = part; batch < batches; batch += members)
          product(batch);
      };
      task.team->run(share);
    }
  }
  if (out.dtype == DType::f32) return;
  narrow_to_half(c_data, out.half(), out.count, out.dtype);
}

}  // namespace csrun::runtime
