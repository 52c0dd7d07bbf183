#include <cblas.h>

#include <algorithm>
#include <array>
#include <type_traits>

#include "compiler/scratch_layout.hpp"
#include "f32_gemm_library.hpp"
#include "half_precision.hpp"
#include "kernel_families.hpp"
#if CSRUN_ONEDNN_GEMM
#include "onednn_gemm.hpp"
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

// A 16-bit operand or result that an f32 product converts a tile at a time, next to the GEMM
// call that reads or wrote the tile, while it is still in the core's cache.
struct HalfTiles {
  const std::uint16_t* a = nullptr;  // a's 16-bit values, widened into Product::a per tile
  graph::DType a_dtype = graph::DType::f32;
  // Non-zero: a tile's rows are widened into a buffer of this many floats per part of the team,
  // at Product::a + part * a_part_floats, not where they lie in a whole widened copy.
  std::int64_t a_part_floats = 0;
  std::uint16_t* out = nullptr;  // rounded from Product::out per tile
  graph::DType out_dtype = graph::DType::f32;
  // Non-zero: a tile's f32 result is computed into a band of this many floats per part of the
  // team, at Product::out + part * out_part_floats (its first row there), then rounded, so the
  // product's f32 result is never whole.
  std::int64_t out_part_floats = 0;
};

// One row-major product out = addend + op(a) * op(b), its operands as the GEMM reads them: f32,
// or bfloat16 in a kernel set that multiplies bfloat16 in hardware (onednn_gemm.hpp), which may
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
  HalfTiles half;
};

// Rows [first_row, first_row + rows) and columns [first_column, first_column + columns) of a
// product: one call of a GEMM.
struct Tile {
  std::int64_t first_row = 0;
  std::int64_t rows = 0;
  std::int64_t first_column = 0;
  std::int64_t columns = 0;
};

// Where a tile's f32 result goes, as a GEMM takes it: its first value and the leading dimension.
struct TileOut {
  float* first;
  std::int64_t leading;
};

// The tile where it lies in the product's result `out` (n values a row).
TileOut in_place(float* out, std::int64_t n, Tile tile) {
  return {out + tile.first_row * n + tile.first_column, n};
}

// The tile's result starts as the addend (a bias) or zero.
void start_tile(const float* addend, TileOut out, Tile tile) {
  for (std::int64_t row = 0; row < tile.rows; ++row) {
    float* at = out.first + row * out.leading;
    if (addend == nullptr)
      std::fill_n(at, tile.columns, 0.0f);
    else
      std::copy_n(addend + tile.first_column, tile.columns, at);
  }
}

// The rows of op(a) a tile reads, as a GEMM takes them: where they start and the leading
// dimension.
struct TileRows {
  const float* first;
  std::int64_t leading;
};

TileRows stored_rows(const Product<float>& product, Tile tile) {
  auto [m, n, k] = product.shape;
  if (product.a_transposed) return {product.a + tile.first_row, m};
  return {product.a + tile.first_row * k, k};
}

// A tile of a product, straight through OpenBLAS's sgemm: the transposes are flags, the tile
// offsets and leading dimensions, so nothing is copied or allocated. The tile starts as the
// addend or zero and beta = 1 adds the product to it: OpenBLAS would clear it for beta = 0
// itself, more slowly than memset.
void multiply_sgemm(const Product<float>& product, Tile tile, TileRows lhs, TileOut out) {
  auto [m, n, k] = product.shape;
  start_tile(product.addend, out, tile);
  bool a_transposed = product.a_transposed;
  bool b_transposed = product.b_transposed;
  const float* rhs =
      b_transposed ? product.b + tile.first_column * k : product.b + tile.first_column;
  auto flag = [](bool transposed) { return transposed ? CblasTrans : CblasNoTrans; };
  cblas_sgemm(CblasRowMajor, flag(a_transposed), flag(b_transposed), static_cast<int>(tile.rows),
              static_cast<int>(tile.columns), static_cast<int>(k), 1.0f, lhs.first,
              static_cast<int>(lhs.leading), rhs, static_cast<int>(b_transposed ? k : n), 1.0f,
              out.first, static_cast<int>(out.leading));
}

#if CSRUN_ONEDNN_GEMM
constexpr bool kHardwareBf16 = CSRUN_ONEDNN_BF16;

// Whether oneDNN multiplies a product of f32 operands (f32_gemm_library.hpp). It multiplies
// every bfloat16 one in the sets that multiply bfloat16 in hardware.
bool f32_through_onednn(GemmShape shape, std::array<bool, 2> transposed) {
  return shape.k > 0 && runtime::f32_through_onednn(sgemm_runs_avx512(), transposed[0],
                                                    transposed[1], shape.k, shape.n);
}

template <class Element>
void multiply_onednn(const Product<Element>& product, Tile tile) {
  auto [m, n, k] = product.shape;
  if (tile.rows == 0 || tile.columns == 0) return;
  if (k == 0) {
    start_tile(product.addend, in_place(product.out, n, tile), tile);
    return;
  }
  bool out_bf16 = product.out_bf16 != nullptr;
  void* out = out_bf16 ? static_cast<void*>(product.out_bf16) : static_cast<void*>(product.out);
  auto operands =
      std::is_same_v<Element, float> ? onednn_gemm::Operands::f32 : onednn_gemm::Operands::bf16;
  onednn_gemm::multiply({product.a, product.a_transposed, product.b, product.b_transposed,
                         product.addend, out, out_bf16, m, n, k, tile.first_row, tile.rows,
                         tile.first_column, tile.columns, operands});
}

void multiply_tile(const Product<std::uint16_t>& product, Tile tile, int) {
  multiply_onednn(product, tile);
}

// The tile of an f32 product whose rows of op(a) are `rows` and whose result goes to `out`, as a
// product of its own: the same kernel as the tile of the whole product where both lie in place.
onednn_gemm::Block tile_block(const Product<float>& product, Tile tile, TileRows rows,
                              TileOut out) {
  auto [m, n, k] = product.shape;
  // (Prepared blocks have no operands yet.)
  const float* rhs = product.b == nullptr   ? nullptr
                     : product.b_transposed ? product.b + tile.first_column * k
                                            : product.b + tile.first_column;
  const float* addend = product.addend ? product.addend + tile.first_column : nullptr;
  onednn_gemm::Block block{rows.first,
                           product.a_transposed,
                           rhs,
                           product.b_transposed,
                           addend,
                           out.first,
                           false,
                           tile.rows,
                           n,
                           k,
                           0,
                           tile.rows,
                           0,
                           tile.columns,
                           onednn_gemm::Operands::f32};
  block.lda = rows.leading;
  block.ldc = out.leading;
  return block;
}

void multiply_onednn_tile(const Product<float>& product, Tile tile, TileRows rows, TileOut out) {
  onednn_gemm::multiply(tile_block(product, tile, rows, out));
}

void prepare_tile(const Product<float>& product, Tile tile, TileRows rows, TileOut out) {
  onednn_gemm::prepare(tile_block(product, tile, rows, out));
}
#else
constexpr bool kHardwareBf16 = false;
#endif

// Widens the rows of a 16-bit `a` that `tile` reads into the f32 copy the GEMM reads, in place:
// a row of op(a) is a row of `a` as stored, or, transposed, a column of it.
void widen_tile_rows(const Product<float>& product, Tile tile) {
  auto [m, n, k] = product.shape;
  auto* widened = const_cast<float*>(product.a);
  if (!product.a_transposed) {
    std::int64_t first = tile.first_row * k;
    widen_from_half(product.half.a + first, widened + first, tile.rows * k, product.half.a_dtype);
    return;
  }
  for (std::int64_t row = 0; row < k; ++row) {
    std::int64_t first = row * m + tile.first_row;
    widen_from_half(product.half.a + first, widened + first, tile.rows, product.half.a_dtype);
  }
}

// The same into `buffer`, the tile's rows alone: op(a)'s rows one after another, or, transposed,
// a's k rows of the tile's columns each.
TileRows widen_tile_rows_into(const Product<float>& product, Tile tile, float* buffer) {
  auto [m, n, k] = product.shape;
  if (!product.a_transposed) {
    widen_from_half(product.half.a + tile.first_row * k, buffer, tile.rows * k,
                    product.half.a_dtype);
    return {buffer, k};
  }
  for (std::int64_t row = 0; row < k; ++row)
    widen_from_half(product.half.a + row * m + tile.first_row, buffer + row * tile.rows, tile.rows,
                    product.half.a_dtype);
  return {buffer, tile.rows};
}

// Whether a product of f32 operands of this shape goes through OpenBLAS's sgemm, not oneDNN.
bool through_sgemm(GemmShape shape, std::array<bool, 2> transposed) {
#if CSRUN_ONEDNN_GEMM
  return !f32_through_onednn(shape, transposed);
#else
  (void)shape;
  (void)transposed;
  return true;
#endif
}

// Rounds the tile's f32 values, at `from`, into the 16-bit result.
void round_tile(const Product<float>& product, Tile tile, TileOut from) {
  std::int64_t n = product.shape.n;
  for (std::int64_t row = 0; row < tile.rows; ++row) {
    narrow_to_half(from.first + row * from.leading,
                   product.half.out + (tile.first_row + row) * n + tile.first_column, tile.columns,
                   product.half.out_dtype);
  }
}

// The rows of op(a) that `tile` reads, in f32, for team member `part`: where they lie, widened
// there first from a 16-bit `a`, or widened into the part's own buffer.
TileRows tile_rows(const Product<float>& product, Tile tile, int part) {
  if (product.half.a_part_floats > 0) {
    float* buffer = const_cast<float*>(product.a) + part * product.half.a_part_floats;
    return widen_tile_rows_into(product, tile, buffer);
  }
  if (product.half.a != nullptr) widen_tile_rows(product, tile);
  return stored_rows(product, tile);
}

// Where team member `part` computes a tile's f32 result: in place, or, rounded to a 16-bit result
// after, in the part's own band (its rows one after another).
TileOut tile_out(const Product<float>& product, Tile tile, int part) {
  if (product.half.out_part_floats == 0) return in_place(product.out, product.shape.n, tile);
  return {product.out + part * product.half.out_part_floats, tile.columns};
}

// A tile of an f32 product, multiplied by team member `part`.
void multiply_tile(const Product<float>& product, Tile tile, int part) {
  TileRows rows = tile_rows(product, tile, part);
  TileOut out = tile_out(product, tile, part);
#if CSRUN_ONEDNN_GEMM
  if (!through_sgemm(product.shape, {product.a_transposed, product.b_transposed})) {
    multiply_onednn_tile(product, tile, rows, out);
  } else {
    multiply_sgemm(product, tile, rows, out);
  }
#else
  multiply_sgemm(product, tile, rows, out);
#endif
  if (product.half.out != nullptr) round_tile(product, tile, out);
}

// The tiles a product is multiplied in, shared out across the team (compiler::product_tiling):
// from its shape alone, so that a run's bits do not depend on the machine (or on the cores an MPI
// rank is bound to).
using Tiling = compiler::ProductTiling;

// Tile `index` of a product cut as `tiles`, row block by row block.
Tile tile_of(const Tiling& tiles, GemmShape shape, std::int64_t index) {
  std::int64_t row = index / tiles.column_blocks;
  std::int64_t column = index % tiles.column_blocks;
  std::int64_t first_row = shape.m * row / tiles.row_blocks;
  std::int64_t first_column = shape.n * column / tiles.column_blocks;
  return {first_row, shape.m * (row + 1) / tiles.row_blocks - first_row, first_column,
          shape.n * (column + 1) / tiles.column_blocks - first_column};
}

// oneDNN multiplies an f32 tile that reads its right-hand operand as stored with its brgemm
// kernels where the tile reads all of that operand's columns, and with its gemm kernels where it
// reads a range of them. On an Emerald Rapids VM (2026-12-03), two column halves of GPT-2 small's
// such products ran at 184-231 GFLOP/s, two row blocks at 92-193 ([512, 768] x [768, 3072]: 92
// against 190-231), so these products are cut in column halves first.
bool splits_columns_first(GemmShape shape, std::array<bool, 2> transposed, bool f32_operands) {
  return f32_operands && !transposed[1] && !through_sgemm(shape, transposed);
}

Tiling tiling(GemmShape shape, std::array<bool, 2> transposed, bool f32_operands) {
  return compiler::product_tiling(shape.m, shape.n, shape.k,
                                  splits_columns_first(shape, transposed, f32_operands));
}

// The node's products: one, or many (attention heads) over its batch axes.
std::int64_t product_count(const NodeTask& task, GemmShape shape) {
  return shape.m * shape.n == 0 ? 0 : task.out.count / (shape.m * shape.n);
}

// The rows of op(a) each of many products widens at a time (compiler::widened_product_rows).
std::int64_t widened_rows(GemmShape shape) {
  return compiler::widened_product_rows(shape.m, shape.k);
}

// One product, its tiles shared out across the team.
template <class Element>
void multiply(const Product<Element>& product, ThreadTeam* team) {
  GemmShape shape = product.shape;
  Tiling tiles =
      tiling(shape, {product.a_transposed, product.b_transposed}, std::is_same_v<Element, float>);
  auto multiply_one = [&](std::int64_t index, int part) {
    multiply_tile(product, tile_of(tiles, shape, index), part);
  };
  std::int64_t members = team == nullptr ? 1 : team->size();
  if (tiles.count() == 1 || members == 1) {
    for (std::int64_t index = 0; index < tiles.count(); ++index)
      multiply_one(index, 0);
    return;
  }
  auto share = [&](int part) {
    for (std::int64_t index = part; index < tiles.count(); index += members)
      multiply_one(index, part);
  };
  team->run(share);
}

// The product's operands are both bfloat16 and this set multiplies them as they are.
bool multiplies_bf16(const NodeTask& task) {
  return kHardwareBf16 && task.in[0].dtype == DType::bf16 && task.in[1].dtype == DType::bf16;
}

// ... and writes a bfloat16 result itself, saving an f32 copy of it and a pass to round it.
bool writes_bf16(const NodeTask& task) {
  auto [m, n, k] = gemm_shape(task);
  return multiplies_bf16(task) && task.out.dtype == DType::bf16 && k > 0;
}

// How an f32 product widens its 16-bit left operand: whole, across the team, before multiplying
// (a product of one row block, whose column halves both read all of it); or by the core that
// multiplies each piece, next to its GEMM call, while it is in the cache, into a buffer of the
// core's own: a tile's rows (a 16-bit gradient of the logits, 4.2 GB in f32 for Llama 3.2 1B at
// MSL 8k, is never widened whole), or, of many products (attention's heads), each product's
// operand or a block of its rows.
enum class LeftWidening { none, whole_first, tile_per_core, product_per_core };

// The tiles of the node's product multiplied in f32 (its 16-bit operands widened).
Tiling f32_tiling(const NodeTask& task) {
  return tiling(gemm_shape(task), task.transposed, true);
}

LeftWidening left_widening(const NodeTask& task) {
  if (!is_half(task.in[0].dtype)) return LeftWidening::none;
  std::int64_t products = product_count(task, gemm_shape(task));
  if (products == 0) return LeftWidening::none;
  if (products > 1) return LeftWidening::product_per_core;
  return f32_tiling(task).row_blocks == 1 ? LeftWidening::whole_first : LeftWidening::tile_per_core;
}

// The most rows of op(a) one of the node's product's tiles reads.
std::int64_t largest_tile_rows(const NodeTask& task) {
  return f32_tiling(task).largest_rows(gemm_shape(task).m);
}

// The floats of the f32 band a part of the team computes a 16-bit result of the node's product in
// before rounding it (HalfTiles::out_part_floats): the largest tile, or of many products one
// product.
std::int64_t result_band_floats(const NodeTask& task) {
  GemmShape shape = gemm_shape(task);
  if (product_count(task, shape) > 1) return shape.m * shape.n;
  Tiling tiles = f32_tiling(task);
  return tiles.largest_rows(shape.m) * tiles.largest_columns(shape.n);
}

// The pieces of the node's products shared out across the team: tiles of one, or many products.
std::int64_t pieces(const NodeTask& task) {
  std::int64_t products = product_count(task, gemm_shape(task));
  return products > 1 ? products : f32_tiling(task).count();
}

std::int64_t team_size(const NodeTask& task) {
  return task.team == nullptr ? 1 : task.team->size();
}

// The f32 floats a 16-bit left operand takes widened: all of it, or one product's (or a block of
// its rows) or one tile's per part of the team that multiplies them.
std::int64_t widened_a_floats(const NodeTask& task) {
  GemmShape shape = gemm_shape(task);
  std::int64_t parts = std::min(team_size(task), pieces(task));
  switch (left_widening(task)) {
    case LeftWidening::none:
      return 0;
    case LeftWidening::product_per_core:
      return parts * widened_rows(shape) * shape.k;
    case LeftWidening::tile_per_core:
      return parts * largest_tile_rows(task) * shape.k;
    case LeftWidening::whole_first:
      return task.in[0].count;
  }
  return task.in[0].count;
}

#if CSRUN_ONEDNN_GEMM
// Makes the kernels for the tiles the node's products are multiplied in through oneDNN
// (run_products), if any.
void prepare_onednn_blocks(const NodeTask& task) {
  GemmShape shape = gemm_shape(task);
  auto [m, n, k] = shape;
  if (m == 0 || n == 0 || k == 0) return;
  bool bf16 = multiplies_bf16(task);
  if (!bf16 && !f32_through_onednn(shape, task.transposed)) return;
  bool single = product_count(task, shape) == 1;
  Tiling tiles = single ? tiling(shape, task.transposed, !bf16) : Tiling{};
  if (bf16) {
    for (std::int64_t index = 0; index < tiles.count(); ++index) {
      Tile tile = tile_of(tiles, shape, index);
      onednn_gemm::prepare({nullptr, task.transposed[0], nullptr, task.transposed[1],
                            task.addend.f32(), nullptr, writes_bf16(task), m, n, k, tile.first_row,
                            tile.rows, tile.first_column, tile.columns,
                            onednn_gemm::Operands::bf16});
    }
    return;
  }
  // The calls multiply_tile makes: a single product's 16-bit left operand widened a tile's rows
  // at a time into a core's buffer (transposed, their count is its leading dimension), its 16-bit
  // result computed a tile at a time in a core's band.
  Product<float> product{nullptr,
                         task.transposed[0],
                         nullptr,
                         task.transposed[1],
                         task.addend.f32(),
                         nullptr,
                         nullptr,
                         shape,
                         {}};
  bool half_a = is_half(task.in[0].dtype);
  bool banded = single && task.out.dtype != DType::f32;
  bool rows_per_core = left_widening(task) == LeftWidening::tile_per_core;
  for (std::int64_t index = 0; index < tiles.count(); ++index) {
    Tile tile = tile_of(tiles, shape, index);
    std::int64_t lda = !task.transposed[0] ? k : rows_per_core ? tile.rows : m;
    prepare_tile(product, tile, {nullptr, lda}, {nullptr, banded ? tile.columns : n});
  }
  if (!half_a || single) return;
  // Blocks of rows widened a core at a time (run_products): full ones and the last.
  std::int64_t rows = widened_rows(shape);
  if (rows == m) return;
  for (std::int64_t block_rows : {rows, m % rows}) {
    if (block_rows == 0) continue;
    TileRows widened{nullptr, task.transposed[0] ? block_rows : k};
    prepare_tile(product, {0, block_rows, 0, n}, widened, {nullptr, n});
  }
}
#endif

// An operand as f32: in place, or widened into `scratch` across the team (16-bit operands
// accumulate in f32).
const float* as_f32(const TensorRef& operand, float*& scratch, ThreadTeam* team) {
  if (operand.dtype == DType::f32) return operand.f32();
  float* widened = scratch;
  widen_on_team(team, operand.half(), widened, operand.count, operand.dtype);
  scratch += operand.count;
  return widened;
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
  if (task.sums_windows) return prepare_windows_sum_product(task);
  if (!task.windows.empty()) return prepare_windowed_product(task);
  bool hardware_bf16 = multiplies_bf16(task);
  std::int64_t floats = 0;
  if (!hardware_bf16) {
    floats += widened_a_floats(task);
    if (is_half(task.in[1].dtype)) floats += task.in[1].count;
  }
  if (task.out.dtype != DType::f32 && !writes_bf16(task)) {
    floats += hardware_bf16 ? task.out.count
                            : std::min(team_size(task), pieces(task)) * result_band_floats(task);
  }
  task.scratch_floats = floats;
#if CSRUN_ONEDNN_GEMM
  prepare_onednn_blocks(task);
#endif
}

namespace {

// Every product of the node: one, its row blocks shared out, or many (attention heads) whole,
// shared out across the team when they repay waking it; a product is one block whatever the
// cores, so the bits are the same. Many products whose 16-bit left operand is widened as they
// are multiplied (half.a) widen it into `a_data`'s buffer of the part that multiplies them.
template <class Element>
void run_products(const NodeTask& task, const Element* a_data, const Element* b_data, float* c_data,
                  std::uint16_t* c_bf16 = nullptr, HalfTiles half = {}) {
  const TensorRef& out = task.out;
  GemmShape shape = gemm_shape(task);
  auto [m, n, k] = shape;
  std::int64_t batches = product_count(task, shape);
  // Many products with a 16-bit left operand too large to widen whole widen it a block of rows
  // at a time into the part's buffer (HalfTiles::a_part_floats).
  std::int64_t rows = half.a != nullptr && batches > 1 ? widened_rows(shape) : m;
  auto product = [&](std::int64_t batch, std::int64_t part) {
    HalfTiles converted = half;
    // Many products' f32 results rounded to 16 bits are each computed in the part's own band.
    std::int64_t result_slot = batch;
    if (converted.out != nullptr) {
      converted.out += batch * m * n;
      if (batches > 1) result_slot = part;
    }
    std::int64_t a_offset = batch_offset(batch, out, task.in[0]) * m * k;
    const Element* a = a_data + a_offset;
    if (converted.a != nullptr && batches > 1) {
      converted.a += a_offset;
      a = a_data + part * m * k;
      if (rows < m) {
        converted.a_part_floats = rows * k;
        a = a_data;
      }
    }
    return Product<Element>{a,
                            task.transposed[0],
                            b_data + batch_offset(batch, out, task.in[1]) * k * n,
                            task.transposed[1],
                            task.addend.f32(),
                            c_data == nullptr ? nullptr : c_data + result_slot * m * n,
                            c_bf16 == nullptr ? nullptr : c_bf16 + batch * m * n,
                            shape,
                            converted};
  };
  if (batches == 1) {
    multiply(product(0, 0), task.team);
    return;
  }
  auto multiply_product = [&](std::int64_t batch, int part) {
    Product<Element> one = product(batch, part);
    for (std::int64_t first = 0; first < m; first += rows)
      multiply_tile(one, {first, std::min(rows, m - first), 0, n}, part);
  };
  std::int64_t members = task.team == nullptr ? 1 : task.team->size();
  if (members == 1 || batches * m * n * k < compiler::kSplitProductMultiplyAdds) {
    for (std::int64_t batch = 0; batch < batches; ++batch)
      multiply_product(batch, 0);
    return;
  }
  auto share = [&](int part) {
    for (std::int64_t batch = part; batch < batches; batch += members)
      multiply_product(batch, part);
  };
  task.team->run(share);
}

#if CSRUN_ONEDNN_GEMM
// Each shape oneDNN multiplies is a kernel it compiles and keeps: f32 tiles smaller than this go
// through sgemm. A small UNet's windows, every tile shape a oneDNN kernel, took 6 MB more (39 ->
// 45 MB peak RSS), for products of a few thousand multiply-adds a call.
constexpr std::int64_t kMinOnednnTileMultiplyAdds = 1 << 20;

bool tile_through_onednn(const TileGemm& gemm) {
  if (gemm.bf16) return true;
  return gemm.m * gemm.n * gemm.k >= kMinOnednnTileMultiplyAdds &&
         f32_through_onednn({gemm.m, gemm.n, gemm.k}, {gemm.a_transposed, gemm.b_transposed});
}

onednn_gemm::Block block_of(const TileGemm& gemm) {
  auto operands = gemm.bf16 ? onednn_gemm::Operands::bf16 : onednn_gemm::Operands::f32;
  onednn_gemm::Block block{gemm.a,  gemm.a_transposed,
                           gemm.b,  gemm.b_transposed,
                           nullptr, gemm.out,
                           false,   gemm.m,
                           gemm.n,  gemm.k,
                           0,       gemm.m,
                           0,       gemm.n,
                           operands};
  block.lda = gemm.lda;
  block.ldb = gemm.ldb;
  block.ldc = gemm.ldc;
  block.accumulate = true;
  return block;
}
#endif

}  // namespace

void prepare_tile_gemm(const TileGemm& gemm) {
#if CSRUN_ONEDNN_GEMM
  if (gemm.m > 0 && gemm.n > 0 && gemm.k > 0 && tile_through_onednn(gemm))
    onednn_gemm::prepare(block_of(gemm));
#else
  (void)gemm;
#endif
}

void multiply_tile_gemm(const TileGemm& gemm) {
  if (gemm.m == 0 || gemm.n == 0 || gemm.k == 0) return;
#if CSRUN_ONEDNN_GEMM
  if (tile_through_onednn(gemm)) return onednn_gemm::multiply(block_of(gemm));
#endif
  auto flag = [](bool transposed) { return transposed ? CblasTrans : CblasNoTrans; };
  cblas_sgemm(CblasRowMajor, flag(gemm.a_transposed), flag(gemm.b_transposed),
              static_cast<int>(gemm.m), static_cast<int>(gemm.n), static_cast<int>(gemm.k), 1.0f,
              static_cast<const float*>(gemm.a), static_cast<int>(gemm.lda),
              static_cast<const float*>(gemm.b), static_cast<int>(gemm.ldb), 1.0f, gemm.out,
              static_cast<int>(gemm.ldc));
}

bool multiplies_bf16_in_hardware() {
  return kHardwareBf16;
}

void run_matmul(NodeTask& task) {
  if (task.out.count == 0) return;
  if (task.sums_windows) return run_windows_sum_product(task);
  if (!task.windows.empty()) return run_windowed_product(task);
  const TensorRef& out = task.out;
  float* scratch = task.scratch ? task.scratch->data : nullptr;
#if CSRUN_ONEDNN_GEMM
  if (writes_bf16(task)) {
    run_products(task, task.in[0].half(), task.in[1].half(), nullptr, out.half());
    return;
  }
  if (multiplies_bf16(task)) {
    // A 16-bit result is computed in f32 in scratch, then rounded.
    float* c_data = out.dtype == DType::f32 ? out.f32() : scratch;
    run_products(task, task.in[0].half(), task.in[1].half(), c_data);
    if (out.dtype != DType::f32)
      narrow_on_team(task.team, c_data, out.half(), out.count, out.dtype);
    return;
  }
#endif
  // In f32: 16-bit operands widened into scratch, a 16-bit result computed there and rounded.
  // The left operand as left_widening says, a 16-bit result a band at a time by the core that
  // multiplies the piece, next to its GEMM call, and the right operand across the team first.
  HalfTiles half;
  const TensorRef& a = task.in[0];
  const float* a_data = nullptr;
  LeftWidening widening = left_widening(task);
  if (widening == LeftWidening::whole_first) {
    a_data = as_f32(a, scratch, task.team);
  } else if (widening != LeftWidening::none) {
    half.a = a.half();
    half.a_dtype = a.dtype;
    if (widening == LeftWidening::tile_per_core)
      half.a_part_floats = largest_tile_rows(task) * gemm_shape(task).k;
    a_data = scratch;
    scratch += widened_a_floats(task);
  } else {
    a_data = a.f32();
  }
  const float* b_data = as_f32(task.in[1], scratch, task.team);
  float* c_data = out.f32();
  if (out.dtype != DType::f32) {
    c_data = scratch;
    half.out = out.half();
    half.out_dtype = out.dtype;
    if (product_count(task, gemm_shape(task)) == 1) half.out_part_floats = result_band_floats(task);
  }
  run_products(task, a_data, b_data, c_data, nullptr, half);
}

}  // namespace csrun::runtime
