#include <algorithm>
#include <cstring>

#include "kernel_families.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

namespace {

// The windows of `source` [L..., S1, ..., Sd] (extents `window`, d trailing axes) as the matrices
// a product reads, one per product: row r of product p's matrix is the windows' row group
// g = p * rows + r (lead index g / K, window offset g % K, K the window's elements) and column c
// output position c (row-major over O = S - k + 1); its element is source[lead, c + offset(w)].
class WindowedOperand {
 public:
  WindowedOperand(const TensorRef& source, const graph::Shape& window, std::int64_t rows)
      : source_(source.f32()), axes_(static_cast<int>(window.size())), rows_(rows) {
    int lead = source.rank - axes_;
    for (int a = 0; a < axes_; ++a) {
      auto i = static_cast<std::size_t>(a);
      extents_[i] = window[i];
      inputs_[i] = source.dim(lead + a);
      outputs_[i] = inputs_[i] - window[i] + 1;
      count_ *= window[i];
      lead_size_ *= inputs_[i];
    }
  }

  // Rows [first_row, first_row + rows) and columns [first_column, first_column + columns) of
  // product `index`'s matrix into `tile`, `columns` floats a row: each a stretch of a row of the
  // source, copied.
  void form(std::int64_t index, std::int64_t first_row, std::int64_t rows,
            std::int64_t first_column, std::int64_t columns, float* tile) const {
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t group = index * rows_ + first_row + r;
      form_row(source_ + group / count_ * lead_size_, offsets(group % count_), first_column,
               columns, tile + r * columns);
    }
  }

 private:
  Dims offsets(std::int64_t w) const {
    Dims offset{};
    for (int a = axes_; a-- > 0;) {
      auto i = static_cast<std::size_t>(a);
      offset[i] = w % extents_[i];
      w /= extents_[i];
    }
    return offset;
  }

  void form_row(const float* lead, const Dims& offset, std::int64_t column, std::int64_t columns,
                float* into) const {
    auto last = static_cast<std::size_t>(axes_ - 1);
    std::int64_t end = column + columns;
    while (column < end) {
      std::int64_t rest = column / outputs_[last];
      std::int64_t along = column % outputs_[last];
      std::int64_t at = along + offset[last];
      std::int64_t stride = inputs_[last];
      for (std::size_t a = last; a-- > 0;) {
        at += (rest % outputs_[a] + offset[a]) * stride;
        rest /= outputs_[a];
        stride *= inputs_[a];
      }
      std::int64_t run = std::min(end - column, outputs_[last] - along);
      std::memcpy(into, lead + at, static_cast<std::size_t>(run) * sizeof(float));
      into += run;
      column += run;
    }
  }

  const float* source_;
  int axes_;
  std::int64_t rows_;
  Dims extents_{};
  Dims inputs_{};
  Dims outputs_{};
  std::int64_t count_ = 1;
  std::int64_t lead_size_ = 1;
};

// out = addend + op(a) * op(windows), per product: op(a) m x k; the windows matrix is k x n
// (forward: a convolution's output) or, transposed, n x k (a weight's gradient, summed over the
// output positions).
struct WindowedProduct {
  const NodeTask& task;
  WindowedOperand windows;
  std::int64_t m, n, k;
  std::int64_t products;
  std::int64_t tile;  // windows columns formed at a time

  explicit WindowedProduct(const NodeTask& t)
      : task(t),
        windows(t.in[1], t.windows, window_rows(t)),
        m(t.out.dim(t.out.rank - 2)),
        n(t.out.dim(t.out.rank - 1)),
        k(t.in[0].dim(t.transposed[0] ? t.in[0].rank - 2 : t.in[0].rank - 1)),
        products(m * n == 0 ? 0 : t.out.count / (m * n)),
        tile(t.windows_tile) {}

  static std::int64_t window_rows(const NodeTask& t) {
    return t.transposed[1] ? t.out.dim(t.out.rank - 1)
                           : t.in[0].dim(t.transposed[0] ? t.in[0].rank - 2 : t.in[0].rank - 1);
  }

  const float* a_of(std::int64_t index) const {
    return task.in[0].f32() + batch_offset(index, task.out, task.in[0]) * m * k;
  }
  std::int64_t lda() const { return task.transposed[0] ? m : k; }
  float* out_of(std::int64_t index) const { return task.out.f32() + index * m * n; }

  // Columns [first, first + columns) of a product's rows start as the addend or zero; the GEMM
  // adds to them (beta = 1).
  void start(float* out, std::int64_t first, std::int64_t columns) const {
    for (std::int64_t row = 0; row < m; ++row) {
      float* at = out + row * n + first;
      if (task.addend.data == nullptr)
        std::fill_n(at, columns, 0.0f);
      else
        std::copy_n(task.addend.f32() + first, columns, at);
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

  // Runs `call` on each GEMM of an item; when `form`, the item's result columns started and each
  // call's tile formed into `buffer` first (otherwise the calls alone, for their shapes).
  template <class Call>
  void for_each_gemm(std::int64_t item, float* buffer, bool form, Call&& call) const {
    if (task.transposed[1])
      sum_gemms(item, buffer, form, call);
    else
      column_gemm(item, buffer, form, call);
  }

  template <class Call>
  void column_gemm(std::int64_t item, float* buffer, bool form, Call& call) const {
    std::int64_t index = item / column_blocks();
    std::int64_t first = item % column_blocks() * tile;
    std::int64_t columns = std::min(tile, n - first);
    float* out = out_of(index);
    if (form) {
      windows.form(index, 0, k, first, columns, buffer);
      start(out, first, columns);
    }
    call(F32Gemm{a_of(index), task.transposed[0], lda(), buffer, false, columns, out + first, n, m,
                 columns, k});
  }

  template <class Call>
  void sum_gemms(std::int64_t item, float* buffer, bool form, Call& call) const {
    std::int64_t index = item / row_halves();
    std::int64_t half = item % row_halves();
    std::int64_t first_row = n * half / row_halves();
    std::int64_t rows = n * (half + 1) / row_halves() - first_row;
    float* out = out_of(index);
    if (form) start(out, first_row, rows);
    const float* a = a_of(index);
    for (std::int64_t first = 0; first < k; first += tile) {
      std::int64_t columns = std::min(tile, k - first);
      if (form) windows.form(index, first_row, rows, first, columns, buffer);
      const float* a_block = task.transposed[0] ? a + first * m : a + first;
      call(F32Gemm{a_block, task.transposed[0], lda(), buffer, true, columns, out + first_row, n, m,
                   rows, columns});
    }
  }

  // The floats of one tile: the windows' rows a tile holds by the columns it takes.
  std::int64_t tile_floats() const { return window_rows(task) * tile; }
};

int team_parts(const NodeTask& task) {
  return task.team == nullptr ? 1 : task.team->size();
}

}  // namespace

void prepare_windowed_product(NodeTask& task) {
  WindowedProduct product(task);
  task.scratch_floats = team_parts(task) * product.tile_floats();
  for (std::int64_t item = 0; item < product.items(); ++item)
    product.for_each_gemm(item, nullptr, false, prepare_f32_gemm);
}

// The items (a product's column block, or its sum) shared out across the team in turn, each
// core forming tiles in its own part of the scratch; an item's result is the same whichever core
// multiplies it.
void run_windowed_product(NodeTask& task) {
  WindowedProduct product(task);
  if (product.products == 0) return;
  float* buffers = task.scratch == nullptr ? nullptr : task.scratch->data;
  std::int64_t parts = team_parts(task);
  if (parts == 1 || product.items() == 1) {
    for (std::int64_t item = 0; item < product.items(); ++item)
      product.for_each_gemm(item, buffers, true, multiply_f32_gemm);
    return;
  }
  auto share = [&](int part) {
    float* buffer = buffers + part * product.tile_floats();
    for (std::int64_t item = part; item < product.items(); item += parts)
      product.for_each_gemm(item, buffer, true, multiply_f32_gemm);
  };
  task.team->run(share);
}

}  // namespace csrun::runtime
