#pragma once

// A product a kernel computes a tile at a time in each core's work space, its items shared out
// across the team (windowed_product.cpp, windows_sum_product.cpp). Internal to lib/runtime.

#include <array>
#include <set>
#include <utility>

#include "kernel_families.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

inline int team_parts(const NodeTask& task) {
  return task.team == nullptr ? 1 : task.team->size();
}

// An operand op(x) of a product, `rows` rows: stored from element `offset` of x, its rows `ld`
// values apart, or (`transposed`) as its transpose, each stored row `rows` values of a column.
struct StoredOperand {
  const TensorRef& x;
  std::int64_t offset;
  std::int64_t rows;
  std::int64_t ld;
  bool transposed;

  // Columns [first, first + count) and the leading dimension a GEMM reads them with: where they
  // are stored or, `widened`, as f32 values in `buffer` (written when `form`): `count` rows of
  // `rows` values transposed, otherwise `rows` rows of `count` values.
  std::pair<const void*, std::int64_t> columns(std::int64_t first, std::int64_t count, bool widened,
                                               float* buffer, bool form) const {
    std::int64_t start = offset + (transposed ? first * rows : first);
    if (!widened) return {x.data + start * graph::dtype_size(x.dtype), transposed ? rows : ld};
    if (form) {
      const std::uint16_t* bits = x.half() + start;
      if (transposed) {
        widen_from_half(bits, buffer, count * rows, x.dtype);
      } else {
        for (std::int64_t row = 0; row < rows; ++row)
          widen_from_half(bits + row * ld, buffer + row * count, count, x.dtype);
      }
    }
    return {buffer, transposed ? rows : count};
  }
};

// A Product has items() (each computed by one core, whichever it is, to the same bits),
// work_floats() (a core's work space) and for_each_gemm(item, work, call), which runs `call` on
// each TileGemm of the item, its operands laid out in `work` first and its result stored after;
// a null `work`: the calls alone, for their shapes.

// Each distinct shape of the product's GEMM calls prepared once: a large image's product takes
// tens of thousands of calls of a few shapes.
template <class Product>
void prepare_tiled_product(NodeTask& task, const Product& product) {
  task.scratch_floats = team_parts(task) * product.work_floats();
  std::set<std::array<std::int64_t, 9>> shapes;
  auto prepare = [&](const TileGemm& gemm) {
    std::array<std::int64_t, 9> shape = {gemm.m,
                                         gemm.n,
                                         gemm.k,
                                         gemm.lda,
                                         gemm.ldb,
                                         gemm.ldc,
                                         gemm.a_transposed,
                                         gemm.b_transposed,
                                         gemm.bf16};
    if (shapes.insert(shape).second) prepare_tile_gemm(gemm);
  };
  for (std::int64_t item = 0; item < product.items(); ++item)
    product.for_each_gemm(item, nullptr, prepare);
}

// The items shared out across the team in turn, each core working in its own part of the scratch.
template <class Product>
void run_tiled_product(const NodeTask& task, const Product& product) {
  float* scratch = task.scratch == nullptr ? nullptr : task.scratch->data;
  std::int64_t parts = team_parts(task);
  if (parts == 1 || product.items() == 1) {
    for (std::int64_t item = 0; item < product.items(); ++item)
      product.for_each_gemm(item, scratch, multiply_tile_gemm);
    return;
  }
  auto share = [&](int part) {
    float* work = scratch + part * product.work_floats();
    for (std::int64_t item = part; item < product.items(); item += parts)
      product.for_each_gemm(item, work, multiply_tile_gemm);
  };
  task.team->run(share);
}

}  // namespace csrun::runtime
