#pragma once

// Products of two bfloat16 operands as bfloat16 GEMMs with f32 accumulation, through oneDNN's
// matmul: the matrix products of the amx kernel set (on AMX tiles) and of the avx512bf16 set (with
// AVX512_BF16's dot products), lib/runtime/CMakeLists.txt. Internal to lib/runtime.
//
// A product of two bfloat16 values is exact in f32, so the result differs from widening the
// operands and calling sgemm only in the order of the f32 additions, and in that AMX and
// AVX512_BF16 treat subnormal operands and results as zero (docs/numerics.md).

#include <cstdint>

namespace csrun::runtime::bf16_gemm {

// Rows [first, first + rows) of the row-major product out = addend + op(a) op(b), with op(a)
// m x k and op(b) k x n, none of rows, n, k zero; `out` points at the product's first row, f32
// values or, with `out_bf16`, bfloat16 ones, rounded once from the f32 sum (to nearest even; a
// subnormal result is zero, as the hardware gives it). `addend` (n values) is null for none. One
// caller's thread does all of it: the caller shares the row blocks out.
struct RowBlock {
  const std::uint16_t* a = nullptr;
  bool a_transposed = false;
  const std::uint16_t* b = nullptr;
  bool b_transposed = false;
  const float* addend = nullptr;
  void* out = nullptr;
  bool out_bf16 = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t first = 0, rows = 0;
};

// Makes the kernel for blocks shaped as `block` (its pointers unused): once, before a step
// multiplies such blocks, on the thread that prepares the step. Throws std::runtime_error when
// oneDNN cannot run the set's kernels here.
void prepare(const RowBlock& block);

// Multiplies a block of a shape prepared before. Allocates only oneDNN's small per-call records.
void multiply_rows(const RowBlock& block);

}  // namespace csrun::runtime::bf16_gemm
