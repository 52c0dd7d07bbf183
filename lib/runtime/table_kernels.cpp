#include <cstring>
#include <stdexcept>
#include <string>

#include "dropout_draws.hpp"
#include "graph/counter_rng.hpp"
#include "kernel_families.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

namespace {

using graph::DType;
using graph::OpKind;

std::int64_t row_index(const TensorRef& indices, std::int64_t i, std::int64_t rows) {
  auto index = static_cast<std::int64_t>(load(indices, i));
  if (index < 0 || index >= rows) {
    throw std::out_of_range("index " + std::to_string(index) + " is outside a table of " +
                            std::to_string(rows) + " rows");
  }
  return index;
}

void gather(const NodeTask& task) {
  const TensorRef& table = task.in[0];
  const TensorRef& indices = task.in[1];
  std::int64_t rows = table.dim(0);
  auto row_bytes =
      static_cast<std::size_t>(rows == 0 ? 0 : table.count / rows) * graph::dtype_size(table.dtype);
  for (std::int64_t i = 0; i < indices.count; ++i) {
    std::int64_t row = row_index(indices, i, rows);
    std::memcpy(task.out.data + static_cast<std::size_t>(i) * row_bytes,
                table.data + static_cast<std::size_t>(row) * row_bytes, row_bytes);
  }
}

void scatter_add(const NodeTask& task) {
  const TensorRef& indices = task.in[0];
  const TensorRef& updates = task.in[1];
  std::int64_t rows = task.out.dim(0);
  std::int64_t width = rows == 0 ? 0 : task.out.count / rows;
  bool f32 = updates.dtype == DType::f32 && task.out.dtype == DType::f32;
  // Zero is all-zero bits in every type. The table is large (GPT-2's embedding gradient: 154 MB)
  // and the updates few, so the zeroing is shared out across the team.
  auto row_bytes = static_cast<std::size_t>(width) * graph::dtype_size(task.out.dtype);
  split_rows(task.team, rows, task.out.count, [&](std::int64_t first, std::int64_t last) {
    std::memset(task.out.data + static_cast<std::size_t>(first) * row_bytes, 0,
                static_cast<std::size_t>(last - first) * row_bytes);
  });
  for (std::int64_t i = 0; i < indices.count; ++i) {
    std::int64_t row = row_index(indices, i, rows);
    for (std::int64_t c = 0; c < width; ++c) {
      std::int64_t target = row * width + c;
      std::int64_t source = i * width + c;
      if (f32) {
        task.out.f32()[target] += updates.f32()[source];
      } else {
        store(task.out, target, load(task.out, target) + load(updates, source));
      }
    }
  }
}

void one_hot(const NodeTask& task) {
  const TensorRef& indices = task.in[0];
  std::int64_t depth = task.node->attrs.depth;
  // Zero is all-zero bits in every float type.
  std::memset(task.out.data, 0,
              static_cast<std::size_t>(task.out.count) * graph::dtype_size(task.out.dtype));
  for (std::int64_t i = 0; i < indices.count; ++i) {
    auto index = static_cast<std::int64_t>(load(indices, i));
    if (index >= 0 && index < depth) store(task.out, i * depth + index, 1.0);
  }
}

// Each element's draw depends on its index alone, so the elements split across the team.
void dropout(const NodeTask& task) {
  DropoutDraws draws = DropoutDraws::of({task.node, task.in[0], task.in[1]});
  const TensorRef& x = task.in[0];
  std::int64_t count = task.out.count;
  if (x.dtype == DType::f32 && task.out.dtype == DType::f32) {
    return split_rows(task.team, count, count, [&](std::int64_t first, std::int64_t last) {
      draws.apply(x.f32() + first, task.out.f32() + first, last - first, first);
    });
  }
  for (std::int64_t i = 0; i < count; ++i) {
    bool keep = graph::dropout_keeps_bits(draws.step_key, i, draws.threshold);
    store(task.out, i, keep ? load(x, i) * draws.scale : 0.0);
  }
}

}  // namespace

void run_table(NodeTask& task) {
  switch (task.node->op) {
    case OpKind::gather:
      return gather(task);
    case OpKind::scatter_add:
      return scatter_add(task);
    case OpKind::one_hot:
      return one_hot(task);
    case OpKind::dropout:
      return dropout(task);
    default:
      throw std::logic_error("not a table op");
  }
}

void fill_static_leaf(NodeTask& task) {
  const graph::Node& node = *task.node;
  if (node.op == OpKind::constant) {
    bool splat = node.attrs.values.size() == 1;
    for (std::int64_t i = 0; i < task.out.count; ++i)
      store(task.out, i, node.attrs.values[splat ? 0 : static_cast<std::size_t>(i)]);
    return;
  }
  Dims strides = strides_of(task.out);
  auto axis = static_cast<std::size_t>(node.attrs.axis);
  for (std::int64_t i = 0; i < task.out.count; ++i)
    store(task.out, i, static_cast<double>((i / strides[axis]) % task.out.shape[axis]));
}

}  // namespace csrun::runtime
