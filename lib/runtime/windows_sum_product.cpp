#include <algorithm>

#include "tiled_product.hpp"
#include "window_runs.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;

// A core's work space: the f32 block of a tile's product, and op(a) and the tile's columns of
// op(b) widened to f32 (16-bit operands the set does not multiply as they are).
struct WorkSpace {
  float* block = nullptr;
  float* a = nullptr;
  float* b = nullptr;
};

// out = the windows' sum of op(a) * op(b), per product: op(a) m x k (one matrix for all the
// products), op(b) k x n, and the product the gradient of the windows [C, K, O1, ..., Od] of C of
// out's lead indices (m = C * K rows, n output positions), never stored. A tile of columns at a
// time, the last first, is multiplied in f32 into the work space, rounded to the product's type
// and its rows added in; so each value's terms are added in window order (the compiler fuses
// only windows whose later offsets are earlier positions), as windows_sum adds them.
struct WindowsSumProduct {
  const NodeTask& task;
  std::int64_t m, n, k;
  std::int64_t products;
  WindowRuns runs;
  std::int64_t channels;  // C of a product
  std::int64_t tile;      // columns multiplied at a time
  DType product_type;
  bool in_hardware;  // bfloat16 operands multiplied as they are
  bool widened_a, widened_b;

  explicit WindowsSumProduct(const NodeTask& t)
      : task(t),
        m(t.node->type.shape.end()[-2]),
        n(t.node->type.shape.back()),
        k(t.in[0].dim(t.transposed[0] ? 0 : 1)),
        products(m * n == 0 ? 0 : graph::element_count(t.node->type.shape) / (m * n)),
        runs(t.out, t.windows, m),
        channels(m / runs.count()),
        tile(t.windows_tile),
        product_type(t.node->type.dtype),
        in_hardware(t.in[0].dtype == DType::bf16 && t.in[1].dtype == DType::bf16 &&
                    multiplies_bf16_in_hardware()),
        widened_a(t.in[0].dtype != DType::f32 && !in_hardware),
        widened_b(t.in[1].dtype != DType::f32 && !in_hardware) {}

  std::int64_t block_floats() const { return m * tile; }
  std::int64_t a_floats() const { return widened_a ? m * k : 0; }
  std::int64_t b_floats() const { return widened_b ? k * tile : 0; }
  std::int64_t work_floats() const { return block_floats() + a_floats() + b_floats(); }

  WorkSpace work_space(float* floats) const {
    if (floats == nullptr) return {};
    return {floats, floats + block_floats(), floats + block_floats() + a_floats()};
  }

  // A single product's channels in two halves, so two cores share it; the split is the same on
  // any number of cores.
  std::int64_t halves() const { return products == 1 && channels >= 2 ? 2 : 1; }
  std::int64_t items() const { return products * halves(); }
  std::int64_t tiles() const { return (n + tile - 1) / tile; }

  template <class Call>
  void for_each_gemm(std::int64_t item, float* work, Call&& call) const {
    std::int64_t index = item / halves();
    std::int64_t half = item % halves();
    std::int64_t first_channel = channels * half / halves();
    std::int64_t end_channel = channels * (half + 1) / halves();
    std::int64_t first_row = first_channel * runs.count();
    std::int64_t rows = (end_channel - first_channel) * runs.count();
    WorkSpace space = work_space(work);
    if (work != nullptr) {
      float* sums = task.out.f32() + (index * channels + first_channel) * runs.lead_size();
      std::fill_n(sums, (end_channel - first_channel) * runs.lead_size(), 0.0f);
      if (widened_a) widen_from_half(task.in[0].half(), space.a, m * k, task.in[0].dtype);
    }
    const auto* a = static_cast<const std::byte*>(widened_a ? static_cast<const void*>(space.a)
                                                            : task.in[0].data);
    std::int64_t a_element = task.transposed[0] ? first_row : first_row * k;
    std::int64_t a_word = widened_a ? 4 : graph::dtype_size(task.in[0].dtype);
    // Without work space (shapes alone) the widened matrix has no address yet.
    const void* a_rows = a == nullptr ? nullptr : a + a_element * a_word;
    std::int64_t lda = task.transposed[0] ? m : k;
    for (std::int64_t t = tiles(); t-- > 0;) {
      std::int64_t first = t * tile;
      std::int64_t columns = std::min(tile, n - first);
      auto [b, ldb] = b_block(index, first, columns, space.b, work != nullptr);
      if (work != nullptr) std::fill_n(space.block, rows * columns, 0.0f);
      call(TileGemm{a_rows, task.transposed[0], lda, b, task.transposed[1], ldb, space.block,
                    columns, rows, columns, k, in_hardware});
      if (work != nullptr) add_block(index, first_row, rows, first, columns, space.block);
    }
  }

  // Columns [first, first + columns) of product `index`'s op(b) and their leading dimension.
  std::pair<const void*, std::int64_t> b_block(std::int64_t index, std::int64_t first,
                                               std::int64_t columns, float* buffer,
                                               bool form) const {
    StoredOperand b{task.in[1], index * k * n, k, n, task.transposed[1]};
    return b.columns(first, columns, widened_b, buffer, form);
  }

  // The block's rows (product rows [first_row, first_row + rows), columns [first, ...)), rounded
  // to the product's type, added onto the windows they are the gradient of, row after row: a
  // channel's window offsets in order.
  void add_block(std::int64_t index, std::int64_t first_row, std::int64_t rows, std::int64_t first,
                 std::int64_t columns, float* block) const {
    if (product_type != DType::f32) round_in_place(block, rows * columns);
    float* sums = task.out.f32();
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* values = block + r * columns;
      runs.for_each_run(index, first_row + r, first, columns,
                        [&](std::int64_t element, std::int64_t length, std::int64_t done) {
                          float* into = sums + element;
                          for (std::int64_t i = 0; i < length; ++i)
                            into[i] += values[done + i];
                        });
    }
  }

  void round_in_place(float* values, std::int64_t count) const {
    constexpr std::int64_t kChunk = 256;
    std::uint16_t bits[kChunk];
    for (std::int64_t done = 0; done < count; done += kChunk) {
      std::int64_t chunk = std::min(kChunk, count - done);
      narrow_to_half(values + done, bits, chunk, product_type);
      widen_from_half(bits, values + done, chunk, product_type);
    }
  }
};

}  // namespace

void prepare_windows_sum_product(NodeTask& task) {
  prepare_tiled_product(task, WindowsSumProduct(task));
}

// The items (a product's channels, all or half of them) shared out across the team; no two write
// the same sums, and each sum's terms are added in the same order whichever core adds them.
void run_windows_sum_product(NodeTask& task) {
  WindowsSumProduct product(task);
  if (product.products == 0) {
    std::fill_n(task.out.f32(), task.out.count, 0.0f);
    return;
  }
  run_tiled_product(task, product);
}

}  // namespace csrun::runtime
