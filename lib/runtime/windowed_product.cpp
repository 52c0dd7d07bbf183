#include <algorithm>
#include <cstring>

#include "tiled_product.hpp"
#include "window_runs.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;

// The windows of a source as the matrices a product reads (WindowRuns), formed a tile at a time.
class WindowedOperand {
 public:
  WindowedOperand(const TensorRef& source, const graph::Shape& window, std::int64_t rows)
      : source_(source.data), dtype_(source.dtype), runs_(source, window, rows) {}

  // Rows [first_row, first_row + rows) and columns [first_column, first_column + columns) of
  // product `index`'s matrix into `tile`, `columns` values a row: each a stretch of a row of the
  // source, copied as it is stored or, `widened`, as f32 values.
  void form(std::int64_t index, std::int64_t first_row, std::int64_t rows,
            std::int64_t first_column, std::int64_t columns, void* tile, bool widened) const {
    std::int64_t word = graph::dtype_size(dtype_);
    std::int64_t tile_word = widened ? 4 : word;
    auto* into = static_cast<std::byte*>(tile);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::byte* row = into + r * columns * tile_word;
      runs_.for_each_run(index, first_row + r, first_column, columns,
                         [&](std::int64_t at, std::int64_t length, std::int64_t done) {
                           const std::byte* from = source_ + at * word;
                           if (widened && dtype_ != DType::f32) {
                             widen_from_half(reinterpret_cast<const std::uint16_t*>(from),
                                             reinterpret_cast<float*>(row) + done, length, dtype_);
                           } else {
                             std::memcpy(row + done * tile_word, from,
                                         static_cast<std::size_t>(length * word));
                           }
                         });
    }
  }

 private:
  const std::byte* source_;
  DType dtype_;
  WindowRuns runs_;
};

// A core's work space: the tile of windows, op(a)'s block widened to f32 (16-bit operands the set
// does not multiply as they are), and the f32 result block a 16-bit result is rounded from.
struct WorkSpace {
  void* tile = nullptr;
  float* a = nullptr;
  float* out = nullptr;
};

// out = addend + op(a) * op(windows), per product: op(a) m x k; the windows matrix is k x n
// (forward: a convolution's output) or, transposed, n x k (a weight's gradient, summed over the
// output positions). Two bfloat16 operands multiply as they are where the set multiplies them in
// hardware; other 16-bit operands are widened to f32 a block at a time, and a 16-bit result is
// summed in f32 and rounded once.
struct WindowedProduct {
  const NodeTask& task;
  std::int64_t m, n, k;
  std::int64_t rows;  // of the windows' matrices: k, or transposed n
  WindowedOperand windows;
  std::int64_t products;
  std::int64_t tile;  // windows columns formed at a time
  bool in_hardware;   // bfloat16 operands multiplied as they are
  bool widened;       // 16-bit operands widened to f32

  explicit WindowedProduct(const NodeTask& t)
      : task(t),
        m(t.out.dim(t.out.rank - 2)),
        n(t.out.dim(t.out.rank - 1)),
        k(t.in[0].dim(t.transposed[0] ? t.in[0].rank - 2 : t.in[0].rank - 1)),
        rows(t.transposed[1] ? n : k),
        windows(t.in[1], t.windows, rows),
        products(m * n == 0 ? 0 : t.out.count / (m * n)),
        tile(t.windows_tile),
        in_hardware(t.in[0].dtype == DType::bf16 && multiplies_bf16_in_hardware()),
        widened(t.in[0].dtype != DType::f32 && !in_hardware) {}

  bool rounds() const { return task.out.dtype != DType::f32; }

  // The floats each part of the work space takes.
  std::int64_t tile_floats() const { return rows * tile; }
  std::int64_t a_floats() const {
    if (!widened) return 0;
    return m * (task.transposed[1] ? tile : k);
  }
  std::int64_t out_floats() const {
    if (!rounds()) return 0;
    return m * (task.transposed[1] ? n : tile);
  }
  std::int64_t work_floats() const { return tile_floats() + a_floats() + out_floats(); }

  WorkSpace work_space(float* floats) const {
    if (floats == nullptr) return {};
    return {floats, floats + tile_floats(), floats + tile_floats() + a_floats()};
  }

  std::int64_t a_offset(std::int64_t index) const {
    return batch_offset(index, task.out, task.in[0]) * m * k;
  }
  std::int64_t lda() const { return task.transposed[0] ? m : k; }
  float* out_of(std::int64_t index) const { return task.out.f32() + index * m * n; }
  const void* a_at(std::int64_t element) const {
    return task.in[0].data + element * graph::dtype_size(task.in[0].dtype);
  }

  // Columns [first, first + columns) of `out`'s m rows (`ld` apart) start as the addend's
  // columns [addend_first, ...) or zero; the GEMM adds to them (beta = 1).
  void start(float* out, std::int64_t ld, std::int64_t addend_first, std::int64_t columns) const {
    for (std::int64_t row = 0; row < m; ++row) {
      float* at = out + row * ld;
      if (task.addend.data == nullptr)
        std::fill_n(at, columns, 0.0f);
      else
        std::copy_n(task.addend.f32() + addend_first, columns, at);
    }
  }

  // m rows of `columns` f32 values rounded into the result's columns [first, ...) of product
  // `index`.
  void round_into(std::int64_t index, std::int64_t first, const float* block,
                  std::int64_t columns) const {
    for (std::int64_t row = 0; row < m; ++row) {
      narrow_to_half(block + row * columns, task.out.half() + index * m * n + row * n + first,
                     columns, task.out.dtype);
    }
  }

  // Forward: the result's columns a tile at a time, each tile of the windows all of its k rows.
  std::int64_t column_blocks() const { return (n + tile - 1) / tile; }

  // Transposed: the sum over k a tile of the windows' columns at a time, in order, into the
  // result's columns, all of them or (a single product) one half each.
  std::int64_t row_halves() const { return products == 1 && n >= 128 ? 2 : 1; }

  std::int64_t items() const {
    return products * (task.transposed[1] ? row_halves() : column_blocks());
  }

  // Runs `call` on each GEMM of an item; with `work`, a core's work space, the item's result
  // columns started, each call's operands formed there first and a 16-bit result rounded after
  // (otherwise the calls alone, for their shapes).
  template <class Call>
  void for_each_gemm(std::int64_t item, float* work, Call&& call) const {
    bool form = work != nullptr;
    if (task.transposed[1])
      sum_gemms(item, work_space(work), form, call);
    else
      column_gemm(item, work_space(work), form, call);
  }

  template <class Call>
  void column_gemm(std::int64_t item, WorkSpace space, bool form, Call& call) const {
    std::int64_t index = item / column_blocks();
    std::int64_t first = item % column_blocks() * tile;
    std::int64_t columns = std::min(tile, n - first);
    float* out = rounds() ? space.out : out_of(index) + first;
    std::int64_t ldc = rounds() ? columns : n;
    const void* a = widened ? space.a : a_at(a_offset(index));
    if (form) {
      windows.form(index, 0, k, first, columns, space.tile, !in_hardware);
      if (widened)
        widen_from_half(static_cast<const std::uint16_t*>(a_at(a_offset(index))), space.a, m * k,
                        task.in[0].dtype);
      start(out, ldc, first, columns);
    }
    call(TileGemm{a, task.transposed[0], lda(), space.tile, false, columns, out, ldc, m, columns, k,
                  in_hardware});
    if (form && rounds()) round_into(index, first, out, columns);
  }

  template <class Call>
  void sum_gemms(std::int64_t item, WorkSpace space, bool form, Call& call) const {
    std::int64_t index = item / row_halves();
    std::int64_t half = item % row_halves();
    std::int64_t first_row = n * half / row_halves();
    std::int64_t half_rows = n * (half + 1) / row_halves() - first_row;
    float* out = rounds() ? space.out : out_of(index) + first_row;
    std::int64_t ldc = rounds() ? half_rows : n;
    if (form) start(out, ldc, first_row, half_rows);
    for (std::int64_t first = 0; first < k; first += tile) {
      std::int64_t columns = std::min(tile, k - first);
      if (form) windows.form(index, first_row, half_rows, first, columns, space.tile, !in_hardware);
      auto [a, a_ld] = a_block(index, first, columns, space.a, form);
      call(TileGemm{a, task.transposed[0], a_ld, space.tile, true, columns, out, ldc, m, half_rows,
                    columns, in_hardware});
    }
    if (form && rounds()) round_into(index, first_row, out, half_rows);
  }

  // Columns [first, first + columns) of op(a) for a sum's GEMM and their leading dimension.
  std::pair<const void*, std::int64_t> a_block(std::int64_t index, std::int64_t first,
                                               std::int64_t columns, float* buffer,
                                               bool form) const {
    StoredOperand a{task.in[0], a_offset(index), m, k, task.transposed[0]};
    return a.columns(first, columns, widened, buffer, form);
  }
};

}  // namespace

void prepare_windowed_product(NodeTask& task) {
  prepare_tiled_product(task, WindowedProduct(task));
}

// The items (a product's column block, or its sum) shared out across the team; an item's result
// is the same whichever core multiplies it.
void run_windowed_product(NodeTask& task) {
  WindowedProduct product(task);
  if (product.products == 0) return;
  run_tiled_product(task, product);
}

}  // namespace csrun::runtime
