#include <cblas.h>

#include <algorithm>

#include "kernel_families.hpp"
#if CSRUN_BF16_GEMM
#include "bf16_gemm.hpp"
#endif
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

// One row-major product out = addend + op(a) * op(b), its operands as the GEMM reads them: f32,
// or bfloat16 in a kernel set that multiplies bfloat16 in hardware (bf16_gemm.hpp), which may
// also round the result to bfloat16 itself (out_bf16 instead of out).
template <class Element>
struct Product {
  const Element* a;
  bool a_transposed;
  const Element* b;
  bool b_transposed;
  const float* addend;  // null: none
  float* out;
  std::uint16_t* out_bf16;
  GemmShape shape;
};

// Each of `rows` rows of `block` starts as the addend (a bias) or zero.
void start_rows(const float* addend, float* block, std::int64_t rows, std::int64_t n) {
  if (addend == nullptr) {
    std::fill_n(block, rows * n, 0.0f);
    return;
  }
  for (std::int64_t row = 0; row < rows; ++row)
    std::copy_n(addend, n, block + row * n);
}

// Rows [first, first + rows) of a product, straight through OpenBLAS's sgemm: the transposes are
// flags, the row block an offset and a leading dimension, so nothing is copied or allocated. The
// rows start as the addend or zero and beta = 1 adds the product to them: OpenBLAS would clear
// the rows for beta = 0 itself, more slowly than memset.
void multiply_rows(const Product<float>& product, std::int64_t first, std::int64_t rows) {
  auto [m, n, k] = product.shape;
  float* block = product.out + first * n;
  start_rows(product.addend, block, rows, n);
  bool a_transposed = product.a_transposed;
  bool b_transposed = product.b_transposed;
  const float* lhs = a_transposed ? product.a + first : product.a + first * k;
  auto flag = [](bool transposed) { return transposed ? CblasTrans : CblasNoTrans; };
  cblas_sgemm(CblasRowMajor, flag(a_transposed), flag(b_transposed), static_cast<int>(rows),
              static_cast<int>(n), static_cast<int>(k), 1.0f, lhs,
              static_cast<int>(a_transposed ? m : k), product.b,
              static_cast<int>(b_transposed ? k : n), 1.0f, block, static_cast<int>(n));
}

#if CSRUN_BF16_GEMM
constexpr bool kMultipliesBf16 = true;

void multiply_rows(const Product<std::uint16_t>& product, std::int64_t first, std::int64_t rows) {
  auto [m, n, k] = product.shape;
  if (rows == 0 || n == 0) return;
  if (k == 0) {
    start_rows(product.addend, product.out + first * n, rows, n);
    return;
  }
  bool out_bf16 = product.out_bf16 != nullptr;
  void* out = out_bf16 ? static_cast<void*>(product.out_bf16) : static_cast<void*>(product.out);
  bf16_gemm::multiply_rows({product.a, product.a_transposed, product.b, product.b_transposed,
                            product.addend, out, out_bf16, m, n, k, first, rows});
}
#else
constexpr bool kMultipliesBf16 = false;
#endif

// Below this many multiply-adds a product is one block: waking the team costs more.
constexpr std::int64_t kSplitMultiplyAdds = 1 << 20;
constexpr std::int64_t kMaxBlocks = 16;

// The fewest rows of a block: both libraries pack the whole right-hand operand for every call,
// which 64-row blocks repeat so often that GPT-2 small's bfloat16 products (oneDNN, AMX) ran at
// half the rate of 256-row ones; 128 trained gpt2_tiny 6 % faster than 256 and GPT-2 small as
// fast. With OpenBLAS's sgemm, 128 rather than 64 trained fc_mnist (batch 256) 10 % and GPT-2
// small 12 % faster on an AVX-512 host (and splitting by columns instead gained nothing).
constexpr std::int64_t kMinBlockRows = 128;

// The row blocks of a product, from its shape alone. OpenBLAS may round a block differently for
// another block height (it picks kernels by size), so blocks that depended on the number of cores
// would make a run's bits depend on the machine (or on the cores an MPI rank is bound to).
std::int64_t row_blocks(GemmShape shape) {
  if (shape.m * shape.n * shape.k < kSplitMultiplyAdds) return 1;
  return std::clamp<std::int64_t>(shape.m / kMinBlockRows, 1, kMaxBlocks);
}

// The node's products: one, or many (attention heads) over its batch axes.
std::int64_t product_count(const NodeTask& task, GemmShape shape) {
  return shape.m * shape.n == 0 ? 0 : task.out.count / (shape.m * shape.n);
}

// The row blocks each product is multiplied in: a lone product's are shared out across the team;
// many products are one block each, the products shared out.
std::int64_t blocks_per_product(GemmShape shape, std::int64_t products) {
  return products == 1 ? row_blocks(shape) : 1;
}

struct RowRange {
  std::int64_t first = 0;
  std::int64_t rows = 0;
};

RowRange block_rows(GemmShape shape, std::int64_t blocks, std::int64_t index) {
  std::int64_t first = shape.m * index / blocks;
  return {first, shape.m * (index + 1) / blocks - first};
}

// One product, its row blocks shared out across the team.
template <class Element>
void multiply(const Product<Element>& product, ThreadTeam* team) {
  GemmShape shape = product.shape;
  std::int64_t blocks = blocks_per_product(shape, 1);
  auto block = [&](std::int64_t index) {
    auto [first, rows] = block_rows(shape, blocks, index);
    multiply_rows(product, first, rows);
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

// The product's operands are both bfloat16 and this set multiplies them as they are.
bool multiplies_bf16(const NodeTask& task) {
  return kMultipliesBf16 && task.in[0].dtype == DType::bf16 && task.in[1].dtype == DType::bf16;
}

// ... and writes a bfloat16 result itself, saving an f32 copy of it and a pass to round it.
bool writes_bf16(const NodeTask& task) {
  auto [m, n, k] = gemm_shape(task);
  return multiplies_bf16(task) && task.out.dtype == DType::bf16 && k > 0;
}

#if CSRUN_BF16_GEMM
// Makes the kernels for the row blocks the node's products are split into (run_products).
void prepare_bf16_blocks(const NodeTask& task) {
  GemmShape shape = gemm_shape(task);
  auto [m, n, k] = shape;
  if (m == 0 || n == 0 || k == 0) return;
  std::int64_t blocks = blocks_per_product(shape, product_count(task, shape));
  for (std::int64_t index = 0; index < blocks; ++index) {
    auto [first, rows] = block_rows(shape, blocks, index);
    bf16_gemm::prepare({nullptr, task.transposed[0], nullptr, task.transposed[1], task.addend.f32(),
                        nullptr, writes_bf16(task), m, n, k, first, rows});
  }
}
#endif

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
  bool hardware_bf16 = multiplies_bf16(task);
  std::int64_t floats = 0;
  if (!hardware_bf16) {
    for (const TensorRef& operand : task.in) {
      if (operand.dtype != DType::f32) floats += operand.count;
    }
  }
  if (task.out.dtype != DType::f32 && !writes_bf16(task)) floats += task.out.count;
  task.scratch_floats = floats;
#if CSRUN_BF16_GEMM
  if (hardware_bf16) prepare_bf16_blocks(task);
#endif
}

namespace {

// Every product of the node: one, its row blocks shared out, or many (attention heads) whole,
// shared out across the team when they repay waking it; a product is one block whatever the
// cores, so the bits are the same.
template <class Element>
void run_products(const NodeTask& task, const Element* a_data, const Element* b_data, float* c_data,
                  std::uint16_t* c_bf16 = nullptr) {
  const TensorRef& out = task.out;
  GemmShape shape = gemm_shape(task);
  auto [m, n, k] = shape;
  std::int64_t batches = product_count(task, shape);
  auto product = [&](std::int64_t batch) {
    return Product<Element>{a_data + batch_offset(batch, out, task.in[0]) * m * k,
                            task.transposed[0],
                            b_data + batch_offset(batch, out, task.in[1]) * k * n,
                            task.transposed[1],
                            task.addend.f32(),
                            c_data == nullptr ? nullptr : c_data + batch * m * n,
                            c_bf16 == nullptr ? nullptr : c_bf16 + batch * m * n,
                            shape};
  };
  if (batches == 1) {
    multiply(product(0), task.team);
    return;
  }
  std::int64_t members = task.team == nullptr ? 1 : task.team->size();
  if (members == 1 || batches * m * n * k < kSplitMultiplyAdds) {
    for (std::int64_t batch = 0; batch < batches; ++batch)
      multiply_rows(product(batch), 0, m);
    return;
  }
  auto share = [&](int part) {
    for (std::int64_t batch = part; batch < batches; batch += members)
      multiply_rows(product(batch), 0, m);
  };
  task.team->run(share);
}

}  // namespace

void run_matmul(NodeTask& task) {
  const TensorRef& out = task.out;
  float* scratch = task.scratch ? task.scratch->data() : nullptr;
  // A 16-bit result is computed in f32, after any widened operands in scratch, then rounded.
  float* c_data = nullptr;
  bool multiplied = false;
#if CSRUN_BF16_GEMM
  if (writes_bf16(task)) {
    run_products(task, task.in[0].half(), task.in[1].half(), nullptr, out.half());
    return;
  }
  if (multiplies_bf16(task)) {
    c_data = out.dtype == DType::f32 ? out.f32() : scratch;
    run_products(task, task.in[0].half(), task.in[1].half(), c_data);
    multiplied = true;
  }
#endif
  if (!multiplied) {
    const float* a_data = as_f32(task.in[0], scratch);
    const float* b_data = as_f32(task.in[1], scratch);
    c_data = out.dtype == DType::f32 ? out.f32() : scratch;
    run_products(task, a_data, b_data, c_data);
  }
  if (out.dtype != DType::f32) narrow_to_half(c_data, out.half(), out.count, out.dtype);
}

}  // namespace csrun::runtime
