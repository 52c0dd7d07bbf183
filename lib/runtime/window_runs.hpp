#pragma once

// Where a convolution's windows lie in their source, for the kernels that form them as a product
// reads them and that sum a product onto them (windowed_product.cpp, windows_sum_product.cpp).
// Internal to lib/runtime.

#include <algorithm>

#include "tensor_ref.hpp"

namespace csrun::runtime {

// The windows of `source` [L..., S1, ..., Sd] (extents `window`, d trailing axes) as matrices of
// `rows` rows, one per product: row r of product p's matrix is the windows' row group
// g = p * rows + r (lead index g / K, window offset g % K, K the window's elements) and column c
// output position c (row-major over O = S - k + 1); its element is source[lead, c + offset(w)].
class WindowRuns {
 public:
  WindowRuns(const TensorRef& source, const graph::Shape& window, std::int64_t rows)
      : axes_(static_cast<int>(window.size())), rows_(rows) {
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

  std::int64_t count() const { return count_; }          // K
  std::int64_t lead_size() const { return lead_size_; }  // S1 * ... * Sd

  // Calls run(element, length, done) for each stretch of columns [column, column + columns) of
  // row `row` of product `index`'s matrix that lies along a row of the source: `length` columns
  // from the source's element `element` on, `done` columns of the stretch before them.
  template <class Run>
  void for_each_run(std::int64_t index, std::int64_t row, std::int64_t column, std::int64_t columns,
                    Run&& run) const {
    std::int64_t group = index * rows_ + row;
    std::int64_t lead = group / count_ * lead_size_;
    Dims offset = offsets(group % count_);
    auto last = static_cast<std::size_t>(axes_ - 1);
    std::int64_t end = column + columns;
    std::int64_t done = 0;
    while (column < end) {
      std::int64_t rest = column / outputs_[last];
      std::int64_t along = column % outputs_[last];
      std::int64_t at = lead + along + offset[last];
      std::int64_t stride = inputs_[last];
      for (std::size_t a = last; a-- > 0;) {
        at += (rest % outputs_[a] + offset[a]) * stride;
        rest /= outputs_[a];
        stride *= inputs_[a];
      }
      std::int64_t length = std::min(end - column, outputs_[last] - along);
      run(at, length, done);
      column += length;
      done += length;
    }
  }

 private:
  // Window w's offset along each axis, row-major over the window's extents.
  Dims offsets(std::int64_t w) const {
    Dims offset{};
    for (int a = axes_; a-- > 0;) {
      auto i = static_cast<std::size_t>(a);
      offset[i] = w % extents_[i];
      w /= extents_[i];
    }
    return offset;
  }

  int axes_;
  std::int64_t rows_;
  Dims extents_{};
  Dims inputs_{};
  Dims outputs_{};
  std::int64_t count_ = 1;
  std::int64_t lead_size_ = 1;
};

}  // namespace csrun::runtime
