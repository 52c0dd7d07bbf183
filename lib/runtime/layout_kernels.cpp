#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernel_families.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

namespace {

using graph::OpKind;

// Copies every element of `source` (walked in row-major order, read with `source_strides`
// from `source_base`) to `target` at `target_base` + index · `target_strides`. Elements are
// moved as raw words of their size: layout ops never change a dtype.
template <class Word>
void copy_words(const TensorRef& walk, const TensorRef& source, std::int64_t source_base,
                const Dims& source_strides, const TensorRef& target, std::int64_t target_base,
                const Dims& target_strides) {
  const auto* from = reinterpret_cast<const Word*>(source.data) + source_base;
  auto* to = reinterpret_cast<Word*>(target.data) + target_base;
  std::array<Dims, 2> strides{source_strides, target_strides};
  for_each_row(walk, strides, [&](std::int64_t, auto offsets, std::int64_t length, auto steps) {
    const Word* in = from + offsets[0];
    Word* out = to + offsets[1];
    if (steps[0] == 1 && steps[1] == 1) {
      std::memcpy(out, in, static_cast<std::size_t>(length) * sizeof(Word));
    } else if (steps[0] == 0 && steps[1] == 1) {
      std::fill_n(out, length, *in);
    } else {
      for (std::int64_t j = 0; j < length; ++j)
        out[j * steps[1]] = in[j * steps[0]];
    }
  });
}

void copy_strided(const TensorRef& walk, const TensorRef& source, std::int64_t source_base,
                  const Dims& source_strides, const TensorRef& target, std::int64_t target_base,
                  const Dims& target_strides) {
  switch (graph::dtype_size(source.dtype)) {
    case 1:
      return copy_words<std::uint8_t>(walk, source, source_base, source_strides, target,
                                      target_base, target_strides);
    case 2:
      return copy_words<std::uint16_t>(walk, source, source_base, source_strides, target,
                                       target_base, target_strides);
    case 4:
      return copy_words<std::uint32_t>(walk, source, source_base, source_strides, target,
                                       target_base, target_strides);
    default:
      throw std::logic_error("no layout copy for elements of this size");
  }
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
  Dims target = strides_of(task.out);
  if (task.out.rank < 2) {
    copy_strided(task.out, task.in[0], 0, source, task.out, 0, target);
    return;
  }
  // Split along the first axis: each part walks its slab of the result.
  split_rows(task.team, task.out.dim(0), task.out.count,
             [&](std::int64_t first, std::int64_t last) {
               TensorRef slab = task.out;
               slab.shape[0] = last - first;
               slab.count = task.out.count / task.out.dim(0) * (last - first);
               copy_strided(slab, task.in[0], first * source[0], source, task.out,
                            first * target[0], target);
             });
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
