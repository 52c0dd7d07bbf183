#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernel_families.hpp"

namespace csrun::runtime {

namespace {

using graph::OpKind;

// Copies every element of `source` (walked in row-major order, read with `source_strides`
// from `source_base`) to `target` at `target_base` + index · `target_strides`. Elements are
// moved as raw bytes: layout ops never change a dtype.
void copy_strided(const TensorRef& walk, const TensorRef& source, std::int64_t source_base,
                  const Dims& source_strides, const TensorRef& target, std::int64_t target_base,
                  const Dims& target_strides) {
  auto size = static_cast<std::int64_t>(graph::dtype_size(source.dtype));
  std::array<Dims, 2> strides{source_strides, target_strides};
  for_each_row(walk, strides, [&](std::int64_t, auto offsets, std::int64_t length, auto steps) {
    const std::byte* from = source.data + (source_base + offsets[0]) * size;
    std::byte* to = target.data + (target_base + offsets[1]) * size;
    if (steps[0] == 1 && steps[1] == 1) {
      std::memcpy(to, from, static_cast<std::size_t>(length * size));
      return;
    }
    for (std::int64_t j = 0; j < length; ++j) {
      std::memcpy(to + j * steps[1] * size, from + j * steps[0] * size,
                  static_cast<std::size_t>(size));
    }
  });
}

void reshape(const NodeTask& task) {
  if (task.out.data == task.in[0].data) return;  // a view: the plan gave it its operand's buffer
  std::memmove(task.out.data, task.in[0].data,
               static_cast<std::size_t>(task.out.count) * graph::dtype_size(task.out.dtype));
}

void transpose(const NodeTask& task) {
  Dims own = strides_of(task.in[0]);
  Dims source{};
  for (int axis = 0; axis < task.out.rank; ++axis) {
    auto a = static_cast<std::size_t>(axis);
    source[a] = own[static_cast<std::size_t>(task.node->attrs.perm[a])];
  }
  copy_strided(task.out, task.in[0], 0, source, task.out, 0, strides_of(task.out));
}

void slice(const NodeTask& task) {
  Dims own = strides_of(task.in[0]);
  std::int64_t base = 0;
  for (int axis = 0; axis < task.in[0].rank; ++axis) {
    auto a = static_cast<std::size_t>(axis);
    base += task.node->attrs.begins[a] * own[a];
  }
  copy_strided(task.out, task.in[0], base, own, task.out, 0, strides_of(task.out));
}

void broadcast(const NodeTask& task) {
  copy_strided(task.out, task.in[0], 0, broadcast_strides(task.in[0], task.out.rank), task.out, 0,
               strides_of(task.out));
}

void pad(const NodeTask& task) {
  std::memset(task.out.data, 0,
              static_cast<std::size_t>(task.out.count) * graph::dtype_size(task.out.dtype));
  Dims target = strides_of(task.out);
  std::int64_t base = 0;
  for (int axis = 0; axis < task.out.rank; ++axis) {
    auto a = static_cast<std::size_t>(axis);
    base += task.node->attrs.begins[a] * target[a];
  }
  copy_strided(task.in[0], task.in[0], 0, strides_of(task.in[0]), task.out, base, target);
}

void concat(const NodeTask& task) {
  Dims target = strides_of(task.out);
  auto axis = static_cast<std::size_t>(task.node->attrs.axis);
  std::int64_t along = 0;
  for (const TensorRef& part : task.in) {
    copy_strided(part, part, 0, strides_of(part), task.out, along * target[axis], target);
    along += part.shape[axis];
  }
}

}  // namespace

void run_layout(NodeTask& task) {
  switch (task.node->op) {
    case OpKind::reshape:
      return reshape(task);
    case OpKind::transpose:
      return transpose(task);
    case OpKind::slice:
      return slice(task);
    case OpKind::broadcast_to:
      return broadcast(task);
    case OpKind::pad:
      return pad(task);
    case OpKind::concat:
      return concat(task);
    default:
      throw std::logic_error("not a layout op");
  }
}

}  // namespace csrun::runtime
