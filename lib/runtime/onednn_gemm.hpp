#pragma once

// Matrix products through oneDNN's matmul: those of the AVX-512 kernel sets (amx, avx512bf16,
// avx512; lib/runtime/CMakeLists.txt). f32 operands multiply with oneDNN's AVX-512 f32 kernels,
// where they run faster than OpenBLAS's sgemm (f32_gemm_library.hpp); in the amx and avx512bf16
// sets, two bfloat16 operands multiply as bfloat16 GEMMs with f32 accumulation, on AMX tiles or
// with AVX512_BF16's dot products (the avx512 set widens them to f32 first).
// Internal to lib/runtime.
//
// A product of two bfloat16 values is exact in f32, so the result differs from widening the
// operands and calling sgemm only in the order of the f32 additions, and in that AMX and
// AVX512_BF16 treat subnormal operands and results as zero (docs/numerics.md). f32 products
// differ from sgemm's in the order of their additions only.

#include <cstdint>

namespace csrun::runtime::onednn_gemm {

enum class Operands : std::uint8_t { bf16, f32 };

// Rows [first_row, first_row + rows) and columns [first_column, first_column + columns) of the
// row-major product out = addend + op(a) op(b), with op(a) m x k and op(b) k x n, none of rows,
// columns, k zero; `a` and `b` hold bfloat16 or f32 values as `operands` says; `out` points at
// the product's first row, f32 values or, with `out_bf16` (bfloat16 operands only), bfloat16
// ones, rounded once from the f32 sum (to nearest even; a subnormal result is zero, as the
// hardware gives it). `addend` (n values) is null for none. Leading dimensions other than the
// operands' and result's row lengths (a product of tiles of larger matrices) are `lda`, `ldb`,
// `ldc` (0: the row lengths). With `accumulate`, the product is added to `out`'s values (no
// addend). One caller's thread does all of it: the caller shares the blocks out.
struct Block {
  const void* a = nullptr;
  bool a_transposed = false;
  const void* b = nullptr;
  bool b_transposed = false;
  const float* addend = nullptr;
  void* out = nullptr;
  bool out_bf16 = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t first_row = 0, rows = 0;
  std::int64_t first_column = 0, columns = 0;
  Operands operands = Operands::bf16;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  bool accumulate = false;
};

// Makes the kernel for blocks shaped as `block` (its pointers unused): once, before a step
// multiplies such blocks, on the thread that prepares the step. Throws std::runtime_error when
// oneDNN cannot run the set's kernels here.
void prepare(const Block& block);

// Multiplies a block of a shape prepared before. Allocates only oneDNN's small per-call records.
void multiply(const Block& block);

}  // namespace csrun::runtime::onednn_gemm
