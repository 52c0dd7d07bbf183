#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "eigen.hpp"
#include "graph/elementwise_semantics.hpp"
#include "kernel_families.hpp"
#include "thread_team.hpp"
#include "transcendental.hpp"

namespace csrun::runtime {

namespace {

using graph::binary_value;
using graph::DType;
using graph::OpKind;
using graph::unary_value;

// out[j] = f(x[j * XStep], y[j * YStep]) for j < length.
template <int XStep, int YStep, class Out, class F>
void binary_row(const float* x, const float* y, Out* out, std::int64_t length, F f) {
  for (std::int64_t j = 0; j < length; ++j)
    out[j] = static_cast<Out>(f(x[j * XStep], y[j * YStep]));
}

// f32 operands, f32 or boolean result: the common case, without per-element dtype dispatch.
template <class Out, class F>
void binary_f32(const NodeTask& task, F f) {
  const float* a = task.in[0].f32();
  const float* b = task.in[1].f32();
  auto* out = reinterpret_cast<Out*>(task.out.data);
  std::int64_t count = task.out.count;
  bool a_full = task.in[0].count == count;
  bool b_full = task.in[1].count == count;
  if (a_full && b_full) {
    for (std::int64_t i = 0; i < count; ++i)
      out[i] = static_cast<Out>(f(a[i], b[i]));
    return;
  }
  if (a_full && task.in[1].count == 1) {
    float scalar = b[0];
    for (std::int64_t i = 0; i < count; ++i)
      out[i] = static_cast<Out>(f(a[i], scalar));
    return;
  }
  if (b_full && task.in[0].count == 1) {
    float scalar = a[0];
    for (std::int64_t i = 0; i < count; ++i)
      out[i] = static_cast<Out>(f(scalar, b[i]));
    return;
  }
  // Broadcasting (a bias over rows, a row's statistic over its columns): rows shared across the
  // team, and each row a loop whose operands step by 1 or 0, known when it compiles, so it
  // vectorizes.
  std::array<Dims, 2> strides{broadcast_strides(task.in[0], task.out.rank),
                              broadcast_strides(task.in[1], task.out.rank)};
  auto row = [&](std::int64_t position, auto offsets, std::int64_t length, auto steps) {
    const float* x = a + offsets[0];
    const float* y = b + offsets[1];
    Out* target = out + position;
    if (steps[0] == 1 && steps[1] == 1) return binary_row<1, 1>(x, y, target, length, f);
    if (steps[0] == 1 && steps[1] == 0) return binary_row<1, 0>(x, y, target, length, f);
    if (steps[0] == 0 && steps[1] == 1) return binary_row<0, 1>(x, y, target, length, f);
    for (std::int64_t j = 0; j < length; ++j)
      target[j] = static_cast<Out>(f(x[j * steps[0]], y[j * steps[1]]));
  };
  std::int64_t length = task.out.rank == 0 ? 1 : task.out.dim(task.out.rank - 1);
  split_rows(task.team, count / std::max<std::int64_t>(length, 1), count,
             [&](std::int64_t first, std::int64_t last) {
               for_each_row(task.out, strides, first, last, row);
             });
}

// Any dtypes: each element through double, rounded to the result's dtype when stored.
void binary_any(const NodeTask& task) {
  OpKind op = task.node->op;
  bool integer = task.in[0].dtype == DType::i32;
  std::array<Dims, 2> strides{broadcast_strides(task.in[0], task.out.rank),
                              broadcast_strides(task.in[1], task.out.rank)};
  for_each_row(task.out, strides,
               [&](std::int64_t position, auto offsets, std::int64_t length, auto steps) {
                 for (std::int64_t j = 0; j < length; ++j) {
                   double a = load(task.in[0], offsets[0] + j * steps[0]);
                   double b = load(task.in[1], offsets[1] + j * steps[1]);
                   store(task.out, position + j, binary_value(op, a, b, integer));
                 }
               });
}

// f32 comparisons into booleans; the common ones without a per-element switch.
void comparison(const NodeTask& task) {
  OpKind op = task.node->op;
  switch (op) {
    case OpKind::less:
      return binary_f32<std::uint8_t>(task, [](float a, float b) { return a < b; });
    case OpKind::greater:
      return binary_f32<std::uint8_t>(task, [](float a, float b) { return a > b; });
    case OpKind::equal:
      return binary_f32<std::uint8_t>(task, [](float a, float b) { return a == b; });
    default:
      return binary_f32<std::uint8_t>(
          task, [op](float a, float b) { return binary_value(op, a, b, false); });
  }
}

void binary(const NodeTask& task) {
  bool f32_operands = task.in[0].dtype == DType::f32 && task.in[1].dtype == DType::f32;
  if (!f32_operands) return binary_any(task);
  if (task.out.dtype == DType::boolean) return comparison(task);
  OpKind op = task.node->op;
  switch (op) {
    case OpKind::add:
      return binary_f32<float>(task, [](float a, float b) { return a + b; });
    case OpKind::sub:
      return binary_f32<float>(task, [](float a, float b) { return a - b; });
    case OpKind::mul:
      return binary_f32<float>(task, [](float a, float b) { return a * b; });
    case OpKind::div:
      return binary_f32<float>(task, [](float a, float b) { return a / b; });
    default:
      return binary_f32<float>(task,
                               [op](float a, float b) { return binary_value(op, a, b, false); });
  }
}

// How many elements of the result a where operand covers before it repeats: all of them, one
// (a single value), or its count when it is the result's trailing axes (an attention mask over
// heads); 0 when it broadcasts any other way.
std::int64_t repeat_period(const TensorRef& operand, const TensorRef& out) {
  if (operand.count == out.count || operand.count == 1) return operand.count;
  int first = 0;
  while (first < operand.rank && operand.dim(first) == 1)
    ++first;
  int kept = operand.rank - first;
  if (kept > out.rank) return 0;
  for (int i = 0; i < kept; ++i) {
    if (operand.dim(first + i) != out.dim(out.rank - kept + i)) return 0;
  }
  return operand.count;
}

// result[i] = condition[i % period] ? a[i] : b[i] over the blocks [first, last) of `period`
// elements, where a whole operand steps by 1 and a single value by 0. The steps are template
// arguments and both branches are read, so the loop compiles to vector blends (the ReLU gradient).
template <int AStep, int BStep>
void choose_blocks(const std::uint8_t* condition, const float* a, const float* b, float* result,
                   std::int64_t period, std::int64_t first, std::int64_t last) {
  for (std::int64_t block = first; block < last; ++block) {
    std::int64_t base = block * period;
    for (std::int64_t j = 0; j < period; ++j) {
      std::int64_t i = base + j;
      float if_true = a[i * AStep];
      float if_false = b[i * BStep];
      result[i] = condition[j] != 0 ? if_true : if_false;
    }
  }
}

// where over f32 values whose condition is whole, single or repeated over leading axes, and whose
// branches are whole or single.
bool where_f32(const NodeTask& task) {
  const TensorRef& out = task.out;
  auto whole_or_single = [&](const TensorRef& in) {
    return in.count == out.count || in.count == 1;
  };
  std::int64_t period = repeat_period(task.in[0], out);
  if (period == 0 || !whole_or_single(task.in[1]) || !whole_or_single(task.in[2]) ||
      task.in[0].dtype != DType::boolean || task.in[1].dtype != DType::f32 ||
      task.in[2].dtype != DType::f32 || out.dtype != DType::f32)
    return false;
  const std::uint8_t* condition = task.in[0].boolean();
  const float* a = task.in[1].f32();
  const float* b = task.in[2].f32();
  float* result = out.f32();
  bool a_whole = task.in[1].count != 1;
  bool b_whole = task.in[2].count != 1;
  if (period == 1) {
    bool take_a = condition[0] != 0;
    const float* chosen = take_a ? a : b;
    std::int64_t step = (take_a ? a_whole : b_whole) ? 1 : 0;
    for (std::int64_t i = 0; i < out.count; ++i)
      result[i] = chosen[i * step];
    return true;
  }
  auto choose = a_whole ? (b_whole ? choose_blocks<1, 1> : choose_blocks<1, 0>)
                        : (b_whole ? choose_blocks<0, 1> : choose_blocks<0, 0>);
  split_rows(task.team, out.count / period, out.count, [&](std::int64_t first, std::int64_t last) {
    choose(condition, a, b, result, period, first, last);
  });
  return true;
}

void where(const NodeTask& task) {
  if (where_f32(task)) return;
  std::array<Dims, 3> strides{broadcast_strides(task.in[0], task.out.rank),
                              broadcast_strides(task.in[1], task.out.rank),
                              broadcast_strides(task.in[2], task.out.rank)};
  bool fast = task.in[0].dtype == DType::boolean && task.in[1].dtype == DType::f32 &&
              task.in[2].dtype == DType::f32 && task.out.dtype == DType::f32;
  for_each_row(task.out, strides,
               [&](std::int64_t position, auto offsets, std::int64_t length, auto steps) {
                 for (std::int64_t j = 0; j < length; ++j) {
                   std::int64_t c = offsets[0] + j * steps[0];
                   std::int64_t a = offsets[1] + j * steps[1];
                   std::int64_t b = offsets[2] + j * steps[2];
                   if (fast) {
                     task.out.f32()[position + j] =
                         task.in[0].boolean()[c] ? task.in[1].f32()[a] : task.in[2].f32()[b];
                   } else {
                     store(task.out, position + j,
                           load(task.in[0], c) != 0.0 ? load(task.in[1], a) : load(task.in[2], b));
                   }
                 }
               });
}

template <class F>
void unary_f32(const NodeTask& task, F f) {
  const float* x = task.in[0].f32();
  float* out = task.out.f32();
  for (std::int64_t i = 0; i < task.out.count; ++i)
    out[i] = f(x[i]);
}

// The same through Eigen's arrays, whose log and tanh are vectorized (exp, erf, sigmoid:
// transcendental.hpp).
template <class F>
void unary_array(const NodeTask& task, F f) {
  Eigen::Map<const Eigen::ArrayXf> x(task.in[0].f32(), task.out.count);
  Eigen::Map<Eigen::ArrayXf>(task.out.f32(), task.out.count) = f(x);
}

// Eigen 3.4's vectorized log takes a subnormal argument for the smallest normal number, on SSE and
// AVX2 though not on AVX-512; the few elements whose operand is subnormal are recomputed with the
// standard function so every kernel set gives the op's values.
template <class Outside, class Exact>
void recompute_outside(const NodeTask& task, Outside outside, Exact exact) {
  const float* x = task.in[0].f32();
  float* out = task.out.f32();
  for (std::int64_t i = 0; i < task.out.count; ++i) {
    if (outside(x[i])) out[i] = exact(x[i]);
  }
}

void unary_vectorized(const NodeTask& task, bool approximate) {
  using Array = Eigen::Map<const Eigen::ArrayXf>;
  constexpr float kSmallestNormal = std::numeric_limits<float>::min();
  switch (task.node->op) {
    case OpKind::exp:
      return transcendental::exp_values(task.in[0].f32(), task.out.f32(), task.out.count);
    case OpKind::log:
      unary_array(task, [](const Array& x) { return x.log(); });
      return recompute_outside(
          task, [](float v) { return v > 0.0f && v < kSmallestNormal; },
          [](float v) { return std::log(v); });
    // Eigen's fast sqrt (an estimate and a Newton step) loses the last bits, gives NaN for
    // infinity and flushes subnormals; the hardware's square root is exact and vectorizes too
    // (the kernel sets build with -fno-math-errno).
    case OpKind::sqrt:
      return unary_f32(task, [](float v) { return std::sqrt(v); });
    case OpKind::rsqrt:
      return unary_f32(task, [](float v) { return 1.0f / std::sqrt(v); });
    case OpKind::tanh:
      return unary_array(task, [](const Array& x) { return x.tanh(); });
    case OpKind::erf:
      return transcendental::erf_values(task.in[0].f32(), task.out.f32(), task.out.count);
    case OpKind::sigmoid:
      return transcendental::sigmoid_values(task.in[0].f32(), task.out.f32(), task.out.count);
    case OpKind::gelu:
      if (!approximate)
        return transcendental::gelu_values(task.in[0].f32(), task.out.f32(), task.out.count);
      return unary_array(task, [](const Array& x) {
        float scale = std::sqrt(2.0f / std::numbers::pi_v<float>);
        return 0.5f * x * (1.0f + (scale * (x + 0.044715f * x.cube())).tanh());
      });
    default:
      return unary_f32(task, [op = task.node->op, approximate](float v) {
        return unary_value(op, v, approximate);
      });
  }
}

void unary(const NodeTask& task) {
  const graph::Node& node = *task.node;
  OpKind op = node.op;
  bool approximate = node.attrs.approximate;
  const TensorRef& x = task.in[0];
  if (x.dtype == DType::f32 && task.out.dtype == DType::f32) {
    switch (op) {
      case OpKind::relu:
        return unary_f32(task, [](float v) { return graph::relu_value(v); });
      case OpKind::neg:
        return unary_f32(task, [](float v) { return -v; });
      default:
        return unary_vectorized(task, approximate);
    }
  }
  if (op == OpKind::cast && x.dtype == DType::f32 && is_half(task.out.dtype))
    return narrow_on_team(task.team, x.f32(), task.out.half(), task.out.count, task.out.dtype);
  if (op == OpKind::cast && is_half(x.dtype) && task.out.dtype == DType::f32)
    return widen_on_team(task.team, x.half(), task.out.f32(), task.out.count, x.dtype);
  for (std::int64_t i = 0; i < task.out.count; ++i)
    store(task.out, i, unary_value(op, load(x, i), approximate));
}

}  // namespace

void narrow_on_team(ThreadTeam* team, const float* values, std::uint16_t* out, std::int64_t count,
                    DType dtype) {
  split_rows(team, count, count, [&](std::int64_t first, std::int64_t last) {
    narrow_to_half(values + first, out + first, last - first, dtype);
  });
}

void widen_on_team(ThreadTeam* team, const std::uint16_t* bits, float* out, std::int64_t count,
                   DType dtype) {
  split_rows(team, count, count, [&](std::int64_t first, std::int64_t last) {
    widen_from_half(bits + first, out + first, last - first, dtype);
  });
}

void run_elementwise(NodeTask& task) {
  OpKind op = task.node->op;
  if (op == OpKind::where) return where(task);
  if (graph::is_binary_elementwise(op)) return binary(task);
  unary(task);
}

}  // namespace csrun::runtime
