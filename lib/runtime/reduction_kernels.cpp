#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "dropout_draws.hpp"
#include "eigen.hpp"
#include "full_sum.hpp"
#include "kernel_families.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;
using graph::OpKind;

// Element readers and writers: direct for f32, through the dtype otherwise.
struct F32Access {
  float* data;
  double get(std::int64_t i) const { return data[i]; }
  void put(std::int64_t i, double value) const { data[i] = static_cast<float>(value); }
};

struct AnyAccess {
  const TensorRef* tensor;
  double get(std::int64_t i) const { return load(*tensor, i); }
  void put(std::int64_t i, double value) const { store(*tensor, i, value); }
};

template <class Body>
void with_access(const TensorRef& in, const TensorRef& out, Body&& body) {
  if (in.dtype == DType::f32 && out.dtype == DType::f32) {
    body(F32Access{in.f32()}, F32Access{out.f32()});
  } else {
    body(AnyAccess{&in}, AnyAccess{&out});
  }
}

double reduce_identity(OpKind op) {
  return op == OpKind::reduce_max ? -std::numeric_limits<double>::infinity() : 0.0;
}

double combine(OpKind op, double total, double value) {
  if (op != OpKind::reduce_max) return total + value;
  return std::isnan(value) || value > total ? value : total;
}

// The sums of rows of f32 values (full_sum.hpp's order). A single long row is shared out across
// the team a chunk at a time, its chunks' totals in `scratch`.
void sum_rows_f32(const AxisSplit& split, const float* x, float* out, ThreadTeam* team,
                  double* scratch) {
  std::int64_t chunks = sum_chunks(split.length);
  if (split.outer == 1 && chunks > 1 && scratch != nullptr) {
    split_rows(team, chunks, split.length, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t c = first; c < last; ++c)
        scratch[c] = chunk_sum(x, split.length, c);
    });
    out[0] = static_cast<float>(add_in_order(scratch, chunks));
    return;
  }
  split_rows(team, split.outer, split.outer * split.length,
             [&](std::int64_t first, std::int64_t last) {
               for (std::int64_t o = first; o < last; ++o)
                 out[o] = static_cast<float>(row_sum(x + o * split.length, split.length));
             });
}

constexpr std::int64_t kColumnBlock = 64;

// Adds `count` elements of `x` from `first` into `totals` (or takes their maximum). 16-bit
// floats are widened a row segment at a time, so the additions vectorize as for f32.
template <class In>
void accumulate(OpKind op, In x, std::int64_t first, std::int64_t count, double* totals) {
  if constexpr (std::is_same_v<In, AnyAccess>) {
    if (is_half(x.tensor->dtype)) {
      std::array<float, kColumnBlock> widened{};
      widen_from_half(x.tensor->half() + first, widened.data(), count, x.tensor->dtype);
      return accumulate(op, F32Access{widened.data()}, 0, count, totals);
    }
  }
  if (op == OpKind::reduce_max) {
    for (std::int64_t i = 0; i < count; ++i)
      totals[i] = combine(op, totals[i], x.get(first + i));
    return;
  }
  for (std::int64_t i = 0; i < count; ++i)
    totals[i] += x.get(first + i);
}

// The reduced axes followed by others ([outer, length, inner], inner > 1): columns a block at a
// time, rows in order, so that each total sums in the same order as one column at a time would
// while the rows are read contiguously. The blocks are shared out across the team: each is
// summed whole by one thread, so the bits do not depend on the cores.
template <class In, class Out>
void reduce_columns(OpKind op, const AxisSplit& split, In x, Out out, ThreadTeam* team) {
  std::int64_t per_outer = (split.inner + kColumnBlock - 1) / kColumnBlock;
  auto reduce_blocks = [&](std::int64_t first_block, std::int64_t last_block) {
    std::array<double, kColumnBlock> totals{};
    for (std::int64_t block = first_block; block < last_block; ++block) {
      std::int64_t o = block / per_outer;
      std::int64_t first = block % per_outer * kColumnBlock;
      std::int64_t columns = std::min(kColumnBlock, split.inner - first);
      std::fill_n(totals.begin(), columns, reduce_identity(op));
      for (std::int64_t r = 0; r < split.length; ++r)
        accumulate(op, x, (o * split.length + r) * split.inner + first, columns, totals.data());
      for (std::int64_t i = 0; i < columns; ++i)
        out.put(o * split.inner + first + i, totals[static_cast<std::size_t>(i)]);
    }
  };
  split_rows(team, split.outer * per_outer, split.outer * split.length * split.inner,
             reduce_blocks);
}

// Reduced axes forming one block [first, last]: [outer, length, inner] sums.
template <class In, class Out>
void reduce_block(OpKind op, const AxisSplit& split, In x, Out out, ThreadTeam* team,
                  double* scratch) {
  if constexpr (std::is_same_v<In, F32Access>) {
    if (split.inner == 1 && op != OpKind::reduce_max)
      return sum_rows_f32(split, x.data, out.data, team, scratch);
  }
  if (split.inner == 1) {
    for (std::int64_t o = 0; o < split.outer; ++o) {
      double total = reduce_identity(op);
      for (std::int64_t r = 0; r < split.length; ++r)
        total = combine(op, total, x.get(o * split.length + r));
      out.put(o, total);
    }
    return;
  }
  reduce_columns(op, split, x, out, team);
}

// Any set of axes: each input element added into its result's total, in double, in row-major
// order; the totals (`totals`, one per result) rounded to the result's type once at the end.
template <class In, class Out>
void reduce_scattered(OpKind op, const TensorRef& input, const Dims& result_strides, In x, Out out,
                      std::int64_t results, double* totals) {
  std::fill_n(totals, results, reduce_identity(op));
  std::array<Dims, 2> strides{strides_of(input), result_strides};
  for_each_row(input, strides, [&](std::int64_t, auto offsets, std::int64_t length, auto steps) {
    for (std::int64_t j = 0; j < length; ++j) {
      double& total = totals[offsets[1] + j * steps[1]];
      total = combine(op, total, x.get(offsets[0] + j * steps[0]));
    }
  });
  for (std::int64_t i = 0; i < results; ++i)
    out.put(i, totals[i]);
}

// A reduce_sum or reduce_mean of f32 values into f32 results.
bool sums_f32(const NodeTask& task) {
  bool sum = task.node->op == OpKind::reduce_sum || task.node->op == OpKind::reduce_mean;
  return sum && task.in[0].dtype == DType::f32 && task.out.dtype == DType::f32;
}

// The axes a reduction reduces.
struct ReducedAxes {
  std::array<bool, kMaxRank> reduced{};
  int first = kMaxRank;
  int last = -1;
  int count = 0;

  explicit ReducedAxes(const graph::Node& node) {
    for (std::int64_t axis : node.attrs.axes) {
      reduced[static_cast<std::size_t>(axis)] = true;
      first = std::min(first, static_cast<int>(axis));
      last = std::max(last, static_cast<int>(axis));
      ++count;
    }
  }

  bool block() const { return last - first + 1 == count; }

  // Each axis's stride in the result; 0 for a reduced axis.
  Dims result_strides(const TensorRef& input) const {
    Dims strides{};
    std::int64_t stride = 1;
    for (int axis = input.rank; axis-- > 0;) {
      if (reduced[static_cast<std::size_t>(axis)]) continue;
      strides[static_cast<std::size_t>(axis)] = stride;
      stride *= input.dim(axis);
    }
    return strides;
  }
};

// A sum of f32 values over axes that are not one block but end with the last axis (a batch norm's
// statistics and its bias's gradient: [N, C, H, W] over N, H and W): the contiguous rows of the
// trailing reduced axes, each summed in full_sum.hpp's order and shared out across the team, then
// each result's rows added in their row-major order, in double. The order depends on the shape
// alone, so the bits do not depend on the cores.
struct TrailingRows {
  int first_axis = 0;  // of the trailing reduced axes
  std::int64_t length = 1;
  std::int64_t rows = 0;

  static std::optional<TrailingRows> of(const NodeTask& task, const ReducedAxes& axes) {
    const TensorRef& input = task.in[0];
    if (!sums_f32(task) || axes.count == 0 || axes.block() || axes.last != input.rank - 1)
      return std::nullopt;
    TrailingRows trailing;
    trailing.first_axis = input.rank;
    while (trailing.first_axis > 0 &&
           axes.reduced[static_cast<std::size_t>(trailing.first_axis - 1)]) {
      --trailing.first_axis;
      trailing.length *= input.dim(trailing.first_axis);
    }
    trailing.rows = trailing.length == 0 ? 0 : input.count / trailing.length;
    return trailing;
  }

  // Doubles of scratch: a total per result, then one per row.
  std::int64_t scratch_doubles(const NodeTask& task) const { return task.out.count + rows; }

  void sum(const NodeTask& task, const ReducedAxes& axes, double* scratch) const {
    const TensorRef& input = task.in[0];
    double* totals = scratch;
    double* row_totals = scratch + task.out.count;
    const float* x = input.f32();
    split_rows(task.team, rows, input.count, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r)
        row_totals[r] = row_sum(x + r * length, length);
    });
    std::fill_n(totals, task.out.count, 0.0);
    Dims strides = axes.result_strides(input);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t rest = r;
      std::int64_t target = 0;
      for (int axis = first_axis; axis-- > 0;) {
        target += rest % input.dim(axis) * strides[static_cast<std::size_t>(axis)];
        rest /= input.dim(axis);
      }
      totals[target] += row_totals[r];
    }
    float* out = task.out.f32();
    for (std::int64_t i = 0; i < task.out.count; ++i)
      out[i] = static_cast<float>(totals[i]);
  }
};

void reduce(const NodeTask& task) {
  const graph::Node& node = *task.node;
  const TensorRef& input = task.in[0];
  ReducedAxes axes(node);
  auto* scratch = task.scratch ? reinterpret_cast<double*>(task.scratch->data) : nullptr;
  std::optional<TrailingRows> trailing = TrailingRows::of(task, axes);
  with_access(input, task.out, [&](auto x, auto out) {
    if (node.attrs.axes.empty()) {
      for (std::int64_t i = 0; i < input.count; ++i)
        out.put(i, x.get(i));
    } else if (axes.block()) {
      reduce_block(node.op, split_at(input, axes.first, axes.last), x, out, task.team, scratch);
    } else if (trailing) {
      trailing->sum(task, axes, scratch);
    } else {
      reduce_scattered(node.op, input, axes.result_strides(input), x, out, task.out.count, scratch);
    }
    if (node.op != OpKind::reduce_mean || task.out.count == 0) return;
    double per_result = static_cast<double>(input.count) / static_cast<double>(task.out.count);
    for (std::int64_t i = 0; i < task.out.count; ++i)
      out.put(i, out.get(i) / per_result);
  });
}

// The first index of the largest value of each line along the axis (a NaN is never larger; a line
// starting with one gives 0), the lines split across the team.
template <class In>
void argmax_lines(const AxisSplit& split, In x, std::int32_t* out, ThreadTeam* team) {
  std::int64_t elements = split.outer * split.length * split.inner;
  split_rows(team, split.outer, elements, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t o = first; o < last; ++o) {
      for (std::int64_t i = 0; i < split.inner; ++i) {
        std::int64_t base = o * split.length * split.inner + i;
        std::int64_t best = 0;
        double top = x.get(base);
        for (std::int64_t k = 1; k < split.length; ++k) {
          double value = x.get(base + k * split.inner);
          if (value > top) {
            top = value;
            best = k;
          }
        }
        out[o * split.inner + i] = static_cast<std::int32_t>(best);
      }
    }
  });
}

void argmax(const NodeTask& task) {
  const TensorRef& input = task.in[0];
  auto axis = static_cast<int>(task.node->attrs.axis);
  AxisSplit split = split_at(input, axis, axis);
  if (input.dtype == DType::f32)
    return argmax_lines(split, F32Access{input.f32()}, task.out.i32(), task.team);
  argmax_lines(split, AnyAccess{&input}, task.out.i32(), task.team);
}

template <class In, class Out>
void softmax_lines(bool log, const AxisSplit& split, In x, Out out) {
  for (std::int64_t o = 0; o < split.outer; ++o) {
    for (std::int64_t i = 0; i < split.inner; ++i) {
      std::int64_t base = o * split.length * split.inner + i;
      auto at = [&](std::int64_t k) { return base + k * split.inner; };
      double top = -std::numeric_limits<double>::infinity();
      for (std::int64_t k = 0; k < split.length; ++k)
        top = std::max(top, x.get(at(k)));
      double total = 0.0;
      for (std::int64_t k = 0; k < split.length; ++k)
        total += std::exp(x.get(at(k)) - top);
      double log_total = std::log(total);
      for (std::int64_t k = 0; k < split.length; ++k) {
        double shifted = x.get(at(k)) - top;
        out.put(at(k), log ? shifted - log_total : std::exp(shifted) / total);
      }
    }
  }
}

// Where a softmax's rows go rounded to 16 bits: into `rounded` (null data: nowhere), whose first
// element is element `first` of the softmax, each row dropped out by `dropout` first (null: not),
// whose draws are keyed by the element's index in the whole softmax.
struct RoundedRows {
  TensorRef rounded;
  std::int64_t first = 0;
  const DropoutDraws* dropout = nullptr;

  RoundedRows from(std::int64_t element) const {
    RoundedRows rest = *this;
    rest.first += element;
    if (rounded.data != nullptr)
      rest.rounded.data += element * static_cast<std::int64_t>(graph::dtype_size(rounded.dtype));
    return rest;
  }
};

// Values dropped out before they are rounded, at a time: a block that stays in L1.
constexpr std::int64_t kDroppedBlock = 256;

// `width` values of a row, from element `at` of `copy.rounded` on, dropped out a block at a time
// and rounded.
void round_row(const float* row, std::int64_t width, std::int64_t at, const RoundedRows& copy) {
  std::uint16_t* out = copy.rounded.half() + at;
  if (copy.dropout == nullptr) return narrow_to_half(row, out, width, copy.rounded.dtype);
  std::array<float, kDroppedBlock> dropped;
  for (std::int64_t i = 0; i < width; i += kDroppedBlock) {
    std::int64_t count = std::min(kDroppedBlock, width - i);
    copy.dropout->apply(row + i, dropped.data(), count, copy.first + at + i);
    narrow_to_half(dropped.data(), out + i, count, copy.rounded.dtype);
  }
}

// `count` values of a softmax, dropped out and rounded into `copy` (from its first element on),
// and as many of a softmax_grad's upstream operand, from `source`, dropped out into `upstream`,
// where the two dropouts have the same draws (attention dropout and its gradient): each draw is
// made once for both.
void round_dropped_with_upstream(const float* rows, const float* source, float* upstream,
                                 std::int64_t count, const RoundedRows& copy) {
  std::uint16_t* out = copy.rounded.half();
  std::array<float, kDroppedBlock> dropped;
  for (std::int64_t i = 0; i < count; i += kDroppedBlock) {
    std::int64_t block = std::min(kDroppedBlock, count - i);
    copy.dropout->apply_to_both(rows + i, dropped.data(), source + i, upstream + i, block,
                                copy.first + i);
    narrow_to_half(dropped.data(), out + i, block, copy.rounded.dtype);
  }
}

// Rows along the last axis in f32, as PyTorch computes them: max, exp and sum vectorized; each
// row also rounded into its copy (RoundedRows) while it is in the core's cache.
void softmax_rows_f32(bool log, std::int64_t first, std::int64_t last, std::int64_t width,
                      const float* x, float* out, const RoundedRows& copy) {
  if (width == 0) return;
  for (std::int64_t r = first; r < last; ++r) {
    Eigen::Map<const Eigen::ArrayXf> in(x + r * width, width);
    Eigen::Map<Eigen::ArrayXf> result(out + r * width, width);
    float top = in.maxCoeff();
    result = (in - top).exp();
    float total = result.sum();
    if (log) {
      result = (in - top) - std::log(total);
    } else {
      result *= 1.0f / total;
    }
    if (copy.rounded.data != nullptr) round_row(out + r * width, width, r * width, copy);
  }
}

// softmax's gradient y * (g - sum(g * y)) along f32 rows, with the bits of those three nodes:
// each product rounded to f32 and summed in the reduce kernel's order (full_sum.hpp), the sum
// rounded to f32, then the difference and the product in f32. Reads each row twice while it is in
// the core's cache instead of storing the products, summing them and reading them again.
void softmax_grad_rows_f32(std::int64_t first, std::int64_t last, std::int64_t width,
                           const float* y, const float* g, float* out) {
  for (std::int64_t r = first; r < last; ++r) {
    const float* y_row = y + r * width;
    const float* g_row = g + r * width;
    auto total = static_cast<float>(
        row_total(width, [&](std::int64_t i) { return static_cast<double>(g_row[i] * y_row[i]); }));
    float* out_row = out + r * width;
    for (std::int64_t i = 0; i < width; ++i)
      out_row[i] = y_row[i] * (g_row[i] - total);
  }
}

// A row's mean and variance: f32 rows over eight lanes (a single running sum in double waits
// on each addition's latency: GPT-2 small's layer norms took 0.5 ms a [512, 768] call).
template <class In>
std::array<double, 2> row_moments(In x, std::int64_t base, std::int64_t width) {
  double mean = 0.0;
  double squares = 0.0;
  if constexpr (std::is_same_v<In, F32Access>) {
    const float* row = x.data + base;
    mean = sum_over_lanes(width, [row](std::int64_t i) { return static_cast<double>(row[i]); }) /
           static_cast<double>(width);
    squares = sum_over_lanes(width, [row, mean](std::int64_t i) {
      double deviation = row[i] - mean;
      return deviation * deviation;
    });
  } else {
    for (std::int64_t k = 0; k < width; ++k)
      mean += x.get(base + k);
    mean /= static_cast<double>(width);
    for (std::int64_t k = 0; k < width; ++k) {
      double d = x.get(base + k) - mean;
      squares += d * d;
    }
  }
  return {mean, squares / static_cast<double>(width)};
}

template <class In, class Out>
void layer_norm_rows(double eps, std::int64_t first, std::int64_t last, std::int64_t width, In x,
                     Out out) {
  for (std::int64_t r = first; r < last; ++r) {
    std::int64_t base = r * width;
    auto [mean, variance] = row_moments(x, base, width);
    double scale = 1.0 / std::sqrt(variance + eps);
    for (std::int64_t k = 0; k < width; ++k)
      out.put(base + k, (x.get(base + k) - mean) * scale);
  }
}

// One row of logits in f32: the loss at `label`, or (with `g`) the gradient into `gradient`.
// Max, exp and sum are vectorized; the row is read twice and the gradient written once.
void cross_entropy_row_f32(const float* logits, std::int64_t classes, std::int64_t label,
                           float* loss, float g, float* gradient) {
  Eigen::Map<const Eigen::ArrayXf> row(logits, classes);
  if (label < 0 || label >= classes) {
    if (gradient) Eigen::Map<Eigen::ArrayXf>(gradient, classes).setZero();
    if (loss) *loss = 0.0f;
    return;
  }
  float top = row.maxCoeff();
  if (!gradient) {
    float total = (row - top).exp().sum();
    *loss = std::log(total) - (logits[label] - top);
    return;
  }
  Eigen::Map<Eigen::ArrayXf> out(gradient, classes);
  out = (row - top).exp();
  out *= g / out.sum();
  gradient[label] -= g;
}

template <class Logits, class Out>
void cross_entropy_row(const Logits& logits, std::int64_t base, std::int64_t classes,
                       std::int64_t label, double g, bool gradient, std::int64_t row, Out out) {
  if (label < 0 || label >= classes) {
    if (!gradient) return out.put(row, 0.0);
    for (std::int64_t c = 0; c < classes; ++c)
      out.put(base + c, 0.0);
    return;
  }
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t c = 0; c < classes; ++c)
    top = std::max(top, logits.get(base + c));
  double total = 0.0;
  for (std::int64_t c = 0; c < classes; ++c)
    total += std::exp(logits.get(base + c) - top);
  if (!gradient) return out.put(row, std::log(total) - (logits.get(base + label) - top));
  for (std::int64_t c = 0; c < classes; ++c) {
    double hit = c == label ? 1.0 : 0.0;
    out.put(base + c, g * (std::exp(logits.get(base + c) - top) / total - hit));
  }
}

bool is_gradient(const NodeTask& task) {
  return task.node->op == OpKind::softmax_cross_entropy_grad;
}

// Whether the rows run in f32 (cross_entropy_rows_f32): f32 or 16-bit logits, an f32 g, and an
// f32 result or a gradient of the logits' 16-bit dtype.
bool runs_in_f32(const NodeTask& task) {
  DType logits = task.in[0].dtype;
  if (logits != DType::f32 && !is_half(logits)) return false;
  if (is_gradient(task) && task.in[2].dtype != DType::f32) return false;
  return task.out.dtype == DType::f32 || (is_gradient(task) && task.out.dtype == logits);
}

// Whether those rows pass through a buffer of one row per part (prepare_cross_entropy): 16-bit
// logits are widened into it a row at a time (the values a widening cast before the kernel gave,
// without an f32 copy of every logit), and a 16-bit gradient is computed there and rounded once.
bool uses_row_buffer(const NodeTask& task) {
  return runs_in_f32(task) && (task.in[0].dtype != DType::f32 || task.out.dtype != DType::f32);
}

// Eigen's vectorized loops over a row they write (the gradient, its sum) start at the first
// address aligned to its widest packet and do the elements before it one by one (std::exp rather
// than the vectorized exp, and the additions in another order), so a row's results depend on
// where it lies modulo this many floats. A row in a part's buffer lies where it lies in its f32
// tensor in the arena (whose buffers are 64-byte aligned), whatever the part and wherever the
// scratch is: the same bits on any number of cores, and as widening the logits first.
constexpr std::int64_t kRowAlignmentFloats = 16;

// The task's scratch from its first 64-byte boundary.
float* aligned_scratch(const NodeTask& task) {
  void* start = task.scratch->data;
  auto space = static_cast<std::size_t>(task.scratch->floats) * sizeof(float);
  return static_cast<float*>(
      std::align(kRowAlignmentFloats * sizeof(float), sizeof(float), start, space));
}

// A buffer for `values` floats that lie in it where they would lie modulo kRowAlignmentFloats; a
// multiple of kRowAlignmentFloats, so that what follows it starts 64-byte aligned as well.
std::int64_t row_buffer_floats(std::int64_t values) {
  return (values + 2 * kRowAlignmentFloats - 1) / kRowAlignmentFloats * kRowAlignmentFloats;
}

// Rows [first, last) in f32; `part_buffer` (64-byte aligned, row_buffer_floats) holds a row when
// uses_row_buffer.
void cross_entropy_rows_f32(const NodeTask& task, float* part_buffer, std::int64_t first,
                            std::int64_t last) {
  const TensorRef& logits = task.in[0];
  const TensorRef& out = task.out;
  bool gradient = is_gradient(task);
  std::int64_t classes = logits.dim(logits.rank - 1);
  bool half_gradient = gradient && out.dtype != DType::f32;
  for (std::int64_t r = first; r < last; ++r) {
    float* buffer =
        part_buffer == nullptr ? nullptr : part_buffer + r * classes % kRowAlignmentFloats;
    const float* row = logits.f32() + r * classes;
    if (logits.dtype != DType::f32) {
      widen_from_half(logits.half() + r * classes, buffer, classes, logits.dtype);
      row = buffer;
    }
    float* row_gradient = nullptr;
    if (gradient) row_gradient = half_gradient ? buffer : out.f32() + r * classes;
    cross_entropy_row_f32(row, classes, task.in[1].i32()[r], gradient ? nullptr : out.f32() + r,
                          gradient ? task.in[2].f32()[r] : 0.0f, row_gradient);
    if (half_gradient) narrow_to_half(buffer, out.half() + r * classes, classes, out.dtype);
  }
}

}  // namespace

void prepare_cross_entropy(NodeTask& task) {
  if (!uses_row_buffer(task)) return;
  std::int64_t parts = task.team == nullptr ? 1 : task.team->size();
  std::int64_t classes = task.in[0].dim(task.in[0].rank - 1);
  task.scratch_floats = parts * row_buffer_floats(classes) + kRowAlignmentFloats;
}

void run_cross_entropy(NodeTask& task) {
  const TensorRef& logits = task.in[0];
  const TensorRef& labels = task.in[1];
  bool gradient = is_gradient(task);
  std::int64_t classes = logits.dim(logits.rank - 1);
  const std::int32_t* label = labels.i32();
  bool f32 = runs_in_f32(task);
  float* buffers = uses_row_buffer(task) ? aligned_scratch(task) : nullptr;
  split_rows_in_parts(
      task.team, labels.count, logits.count, [&](int part, std::int64_t first, std::int64_t last) {
        if (f32) {
          float* buffer =
              buffers == nullptr ? nullptr : buffers + part * row_buffer_floats(classes);
          return cross_entropy_rows_f32(task, buffer, first, last);
        }
        for (std::int64_t r = first; r < last; ++r) {
          double g = gradient ? load(task.in[2], r) : 0.0;
          cross_entropy_row(AnyAccess{&logits}, r * classes, classes, label[r], g, gradient, r,
                            AnyAccess{&task.out});
        }
      });
}

void prepare_reduction(NodeTask& task) {
  std::int64_t chunks = sum_chunks(task.in[0].count);
  constexpr auto kFloatsPerDouble = static_cast<std::int64_t>(sizeof(double) / sizeof(float));
  if (sums_f32(task) && task.out.count == 1 && chunks > 1)
    task.scratch_floats = chunks * kFloatsPerDouble;
  ReducedAxes axes(*task.node);
  if (axes.count == 0 || axes.block()) return;
  std::optional<TrailingRows> trailing = TrailingRows::of(task, axes);
  std::int64_t doubles = trailing ? trailing->scratch_doubles(task) : task.out.count;
  task.scratch_floats = doubles * kFloatsPerDouble;
}

void run_reduction(NodeTask& task) {
  if (task.node->op == OpKind::argmax) return argmax(task);
  reduce(task);
}

namespace {

// Rows a row chain runs at once: a few thousand values (16 KB), so that those it writes are still
// in the core's L1 cache when the kernel reads them, and its single values are filled once for
// them all.
constexpr std::int64_t kRowChainFloats = 4096;

std::int64_t rows_per_run(std::int64_t width) {
  return std::max<std::int64_t>(1, kRowChainFloats / std::max<std::int64_t>(1, width));
}

std::int64_t chain_register_floats(const RowChain& chain) {
  return chain ? chain.program->registers * kChainLanes : 0;
}

// Whether a softmax or softmax_grad runs its rows a few at a time: with a row chain
// (HostStep::row_chain), a softmax_grad that computes its softmax (HostStep::row_softmax), or a
// softmax whose f32 rows are kept per row, only rounded into its copy.
bool runs_by_rows(const NodeTask& task) {
  return task.row_chain || task.computes_softmax || task.upstream_dropout ||
         (task.node->op == OpKind::softmax && task.out.data == nullptr);
}

// Each part of the team's scratch for rows run a few at a time: its chains' registers, a buffer
// for the rows of a result kept per row (a softmax_grad's rows its chain reads, or a softmax's
// rows only rounded), one for the rows of the softmax a softmax_grad computes and one for the
// rows of the upstream it drops out.
struct RowScratch {
  float* registers = nullptr;
  float* softmax_registers = nullptr;
  float* rows = nullptr;
  float* softmax_rows = nullptr;
  float* upstream_rows = nullptr;
};

std::int64_t by_rows_part_floats(const NodeTask& task, std::int64_t width) {
  std::int64_t floats =
      chain_register_floats(task.row_chain) + chain_register_floats(task.softmax_chain);
  std::int64_t buffer = row_buffer_floats(rows_per_run(width) * width);
  if (task.out.data == nullptr) floats += buffer;
  if (task.computes_softmax) floats += buffer;
  if (task.upstream_dropout) floats += buffer;
  return floats;
}

RowScratch row_scratch(const NodeTask& task, std::int64_t width, int part) {
  std::int64_t buffer = row_buffer_floats(rows_per_run(width) * width);
  RowScratch scratch;
  scratch.registers = aligned_scratch(task) + part * by_rows_part_floats(task, width);
  scratch.softmax_registers = scratch.registers + chain_register_floats(task.row_chain);
  scratch.rows = scratch.softmax_registers + chain_register_floats(task.softmax_chain);
  scratch.softmax_rows = scratch.rows + (task.out.data == nullptr ? buffer : 0);
  scratch.upstream_rows = scratch.softmax_rows + (task.computes_softmax ? buffer : 0);
  return scratch;
}

std::int64_t row_width(const NodeTask& task) {
  return task.out.rank == 0 ? 1 : task.out.dim(task.out.rank - 1);
}

// Elements [first, last) of a row chain, compiled or interpreted (what compiled code leaves short
// of a vector, interpreted).
void run_row_chain(const RowChain& chain, float* registers, std::int64_t first, std::int64_t last,
                   float* row) {
  std::int64_t start = first;
  if (chain.compiled) start = chain.compiled->run_on_row(first, last, row);
  if (start < last)
    run_chain_program_on_row(*chain.program, registers, start, last, row + (start - first));
}

// The draws of a dropout the kernel applies as it goes, if it has one.
std::optional<DropoutDraws> draws_of(const DropoutRef& dropout) {
  if (!dropout) return std::nullopt;
  return DropoutDraws::of(dropout);
}

// Rows [first, last) of a softmax along f32 rows, normalized in `rows` (where they lie in the
// result, or in a row buffer at the same alignment, so that their bits are those of a stored
// result) and rounded into `rounded` (null data: no copy): read from `input`, or written into
// `rows` by the row chain that computes them.
struct SoftmaxRows {
  const TensorRef& input;
  const RowChain& chain;
  const RoundedRows& copy;
};

void normalize_rows(const SoftmaxRows& softmax, float* registers, std::int64_t first,
                    std::int64_t last, std::int64_t width, float* rows) {
  const float* in = rows;
  if (softmax.chain)
    run_row_chain(softmax.chain, registers, first * width, last * width, rows);
  else
    in = softmax.input.f32() + first * width;
  softmax_rows_f32(false, 0, last - first, width, in, rows, softmax.copy.from(first * width));
}

// A by-rows kernel's dropouts at this step: the rows of its copy (RoundedRows, its dropout's draws
// among them), the draws of its upstream's dropout (null: none), and whether the softmax_grad
// computes the copy's rows and both have the same draws, which are then made once for both.
struct RowDropouts {
  RoundedRows copy;
  const DropoutDraws* upstream = nullptr;
  bool same_draws = false;
};

// Rows [first, last) of a softmax_grad: y's rows computed into the part's buffer where the step
// computes its softmax (HostStep::row_softmax); the gradient's rows into its result or, with a row
// chain, into the part's buffer, where the chain reads them.
void gradient_rows(const NodeTask& task, const RowScratch& scratch, const RowDropouts& dropouts,
                   std::int64_t first, std::int64_t last, std::int64_t width) {
  std::int64_t count = (last - first) * width;
  const DropoutDraws* upstream = dropouts.upstream;
  const float* source = upstream ? task.upstream_dropout.source.f32() + first * width : nullptr;
  const float* y = nullptr;
  if (task.computes_softmax) {
    float* rows = scratch.softmax_rows + first * width % kRowAlignmentFloats;
    const RoundedRows& copy = dropouts.copy;
    normalize_rows(
        {task.softmax_input, task.softmax_chain, dropouts.same_draws ? RoundedRows{} : copy},
        scratch.softmax_registers, first, last, width, rows);
    if (dropouts.same_draws)
      round_dropped_with_upstream(rows, source, scratch.upstream_rows, count,
                                  copy.from(first * width));
    y = rows;
  } else {
    y = task.in[0].f32() + first * width;
  }
  const float* g = nullptr;
  if (upstream != nullptr) {
    if (!dropouts.same_draws) upstream->apply(source, scratch.upstream_rows, count, first * width);
    g = scratch.upstream_rows;
  } else {
    g = task.in[1].f32() + first * width;
  }
  float* out = task.out.data != nullptr ? task.out.f32() + first * width : scratch.rows;
  softmax_grad_rows_f32(0, last - first, width, y, g, out);
  if (task.row_chain)
    run_row_chain(task.row_chain, scratch.registers, first * width, last * width, out);
}

// Rows [first, last) of one part of the team, a few at a time.
void run_rows_of_part(const NodeTask& task, const RowScratch& scratch, const RowDropouts& dropouts,
                      std::int64_t first, std::int64_t last) {
  std::int64_t width = row_width(task);
  bool gradient = task.node->op == OpKind::softmax_grad;
  SoftmaxRows softmax{task.in[0], task.row_chain, dropouts.copy};
  for (std::int64_t r = first; r < last; r += rows_per_run(width)) {
    std::int64_t end = std::min(last, r + rows_per_run(width));
    if (gradient) {
      gradient_rows(task, scratch, dropouts, r, end, width);
      continue;
    }
    float* rows = task.out.data != nullptr ? task.out.f32() + r * width
                                           : scratch.rows + r * width % kRowAlignmentFloats;
    normalize_rows(softmax, scratch.registers, r, end, width, rows);
  }
}

// Rows of an f32 softmax or softmax_grad along its last axis, a few at a time. A softmax's row
// chain writes its input's rows where the result goes (the part's row buffer, when the result is
// kept per row), and the kernel normalizes them there, rounding them into the copy; a
// softmax_grad's rows go as gradient_rows says.
void run_by_rows(const NodeTask& task) {
  std::int64_t width = row_width(task);
  bool gradient = task.node->op == OpKind::softmax_grad;
  bool f32_rows = task.out.dtype == DType::f32 && task.node->attrs.axis == task.out.rank - 1 &&
                  task.in[0].dtype == DType::f32 && (!gradient || task.in[1].dtype == DType::f32);
  if (!f32_rows)
    throw std::invalid_argument(
        "a softmax or softmax_grad runs row by row on f32 values along their last axis");
  std::int64_t rows = width == 0 ? 0 : task.out.count / width;
  std::optional<DropoutDraws> draws = draws_of(task.dropout);
  std::optional<DropoutDraws> upstream = draws_of(task.upstream_dropout);
  RowDropouts dropouts{{task.rounded, 0, draws ? &*draws : nullptr},
                       upstream ? &*upstream : nullptr,
                       task.computes_softmax && draws && upstream && *draws == *upstream};
  split_rows_in_parts(
      task.team, rows, task.out.count, [&](int part, std::int64_t first, std::int64_t last) {
        run_rows_of_part(task, row_scratch(task, width, part), dropouts, first, last);
      });
}

void softmax_grad(const NodeTask& task) {
  const TensorRef& y = task.in[0];
  const TensorRef& g = task.in[1];
  std::int64_t width = y.rank == 0 ? 1 : y.dim(y.rank - 1);
  if (y.dtype != DType::f32 || g.dtype != DType::f32 || task.out.dtype != DType::f32 ||
      task.node->attrs.axis != y.rank - 1)
    throw std::invalid_argument("softmax_grad runs on f32 values along their last axis");
  std::int64_t rows = width == 0 ? 0 : y.count / width;
  split_rows(task.team, rows, y.count, [&](std::int64_t first, std::int64_t last) {
    softmax_grad_rows_f32(first, last, width, y.f32(), g.f32(), task.out.f32());
  });
}

}  // namespace

void prepare_normalization(NodeTask& task) {
  if (!runs_by_rows(task)) return;
  bool stores_nothing = task.out.data == nullptr && task.rounded.data == nullptr;
  if (task.node->op == OpKind::softmax && stores_nothing)
    throw std::invalid_argument(
        "a softmax kept per row rounds its rows into a 16-bit copy, and this one has none");
  if (task.node->op == OpKind::softmax_grad && task.out.data == nullptr && !task.row_chain)
    throw std::invalid_argument(
        "a softmax_grad kept per row has a row chain to read its rows, and this one has none");
  const TensorRef& input = task.softmax_input;
  bool softmax_read = task.softmax_chain || input.data != nullptr;
  if (task.computes_softmax &&
      (task.node->op != OpKind::softmax_grad || task.in[0].data != nullptr || !softmax_read ||
       input.dtype != DType::f32 || input.count != task.out.count))
    throw std::invalid_argument(
        "only a softmax_grad computes the softmax it reads, never stored, from an f32 input of "
        "its shape, stored or computed by the softmax's row chain");
  const TensorRef& source = task.upstream_dropout.source;
  if (task.upstream_dropout &&
      (task.node->op != OpKind::softmax_grad || task.in[1].data != nullptr ||
       source.data == nullptr || source.dtype != DType::f32 || source.count != task.out.count))
    throw std::invalid_argument(
        "only a softmax_grad drops out its upstream operand, never stored, from a stored f32 "
        "value of its shape");
  std::int64_t parts = task.team == nullptr ? 1 : task.team->size();
  task.scratch_floats = parts * by_rows_part_floats(task, row_width(task)) + kRowAlignmentFloats;
}

void run_normalization(NodeTask& task) {
  const graph::Node& node = *task.node;
  const TensorRef& input = task.in[0];
  if (runs_by_rows(task)) return run_by_rows(task);
  if (node.op == OpKind::softmax_grad) return softmax_grad(task);
  with_access(input, task.out, [&](auto x, auto out) {
    if (node.op == OpKind::layer_norm) {
      std::int64_t width = input.rank == 0 ? 1 : input.dim(input.rank - 1);
      std::int64_t rows = width == 0 ? 0 : input.count / width;
      return split_rows(task.team, rows, input.count, [&](std::int64_t first, std::int64_t last) {
        layer_norm_rows(node.attrs.eps, first, last, width, x, out);
      });
    }
    auto axis = static_cast<int>(node.attrs.axis);
    AxisSplit split = split_at(input, axis, axis);
    bool log = node.op == OpKind::log_softmax;
    if constexpr (std::is_same_v<decltype(x), F32Access>) {
      if (split.inner == 1) {
        std::optional<DropoutDraws> draws = draws_of(task.dropout);
        RoundedRows copy{task.rounded, 0, draws ? &*draws : nullptr};
        return split_rows(
            task.team, split.outer, input.count, [&](std::int64_t first, std::int64_t last) {
              softmax_rows_f32(log, first, last, split.length, x.data, out.data, copy);
            });
      }
    }
    if (task.rounded.data != nullptr)
      throw std::invalid_argument("a softmax rounds its rows into a copy only along f32 rows");
    softmax_lines(log, split, x, out);
  });
}

}  // namespace csrun::runtime
