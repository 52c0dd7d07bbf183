#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "half_precision.hpp"
#include "kernel_families.hpp"
#include "thread_team.hpp"

namespace csrun::runtime {

namespace {

using graph::OpKind;

// Where a layout op's elements come from and go to: `walk`'s elements in row-major order, read
// from `source` at `source_base` + index · `source_strides` and written to `target` likewise.
struct StridedCopy {
  const TensorRef& walk;
  const TensorRef& source;
  std::int64_t source_base;
  const Dims& source_strides;
  const TensorRef& target;
  std::int64_t target_base;
  const Dims& target_strides;
};

// Copies rows [first_row, last_row) of `copy.walk`. Elements are moved as raw words of their
// size: layout ops never change a dtype.
template <class Word>
void copy_words(const StridedCopy& copy, std::int64_t first_row, std::int64_t last_row) {
  const auto* from = reinterpret_cast<const Word*>(copy.source.data) + copy.source_base;
  auto* to = reinterpret_cast<Word*>(copy.target.data) + copy.target_base;
  std::array<Dims, 2> strides{copy.source_strides, copy.target_strides};
  auto row = [&](std::int64_t, auto offsets, std::int64_t length, auto steps) {
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
  };
  for_each_row(copy.walk, strides, first_row, last_row, row);
}

// Calls `body` with a value of the unsigned type as wide as an element of `dtype`: the word a
// layout op moves its elements as.
template <class Body>
void with_word(graph::DType dtype, Body body) {
  switch (graph::dtype_size(dtype)) {
    case 1:
      return body(std::uint8_t{});
    case 2:
      return body(std::uint16_t{});
    case 4:
      return body(std::uint32_t{});
    default:
      throw std::logic_error("no layout copy for elements of this size");
  }
}

void copy_rows(const StridedCopy& copy, std::int64_t first_row, std::int64_t last_row) {
  with_word(copy.source.dtype,
            [&](auto word) { copy_words<decltype(word)>(copy, first_row, last_row); });
}

// `walk` and both strides without the axes of size 1, which only lengthen the loop: a transposed
// convolution's interleaving ([32768, 2, 1, 128, 1] to [32768, 128, 2, 1, 1]) walked rows of one
// element.
struct SqueezedWalk {
  TensorRef walk;
  Dims source_strides{};
  Dims target_strides{};

  SqueezedWalk(const TensorRef& full, const Dims& source, const Dims& target) : walk(full) {
    walk.rank = 0;
    for (int axis = 0; axis < full.rank; ++axis) {
      auto a = static_cast<std::size_t>(axis);
      if (full.shape[a] == 1) continue;
      auto kept = static_cast<std::size_t>(walk.rank++);
      walk.shape[kept] = full.shape[a];
      source_strides[kept] = source[a];
      target_strides[kept] = target[a];
    }
  }
};

// `walk`'s rows shared out across the team: a UNet's padded activations and their im2col slices
// are tens of MB each, and one core does not saturate the memory bus.
void copy_strided(ThreadTeam* team, const TensorRef& walk, const TensorRef& source,
                  std::int64_t source_base, const Dims& source_strides, const TensorRef& target,
                  std::int64_t target_base, const Dims& target_strides) {
  SqueezedWalk squeezed(walk, source_strides, target_strides);
  StridedCopy copy{squeezed.walk,           source, source_base,
                   squeezed.source_strides, target, target_base,
                   squeezed.target_strides};
  split_rows(team, rows_of(squeezed.walk), walk.count,
             [&](std::int64_t first, std::int64_t last) { copy_rows(copy, first, last); });
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
  copy_strided(task.team, task.out, task.in[0], 0, source, task.out, 0, target);
}

void slice(const NodeTask& task) {
  Dims own = strides_of(task.in[0]);
  std::int64_t base = 0;
  for (int axis = 0; axis < task.in[0].rank; ++axis) {
    auto a = static_cast<std::size_t>(axis);
    base += task.node->attrs.begins[a] * own[a];
  }
  copy_strided(task.team, task.out, task.in[0], base, own, task.out, 0, strides_of(task.out));
}

void broadcast(const NodeTask& task) {
  copy_strided(task.team, task.out, task.in[0], 0, broadcast_strides(task.in[0], task.out.rank),
               task.out, 0, strides_of(task.out));
}

// The input's offset of the result's row at `index` (its coordinates but the last), or -1 where
// that row lies in the padding.
std::int64_t padded_row_source(const NodeTask& task, const Dims& index, const Dims& in_strides) {
  std::int64_t offset = 0;
  for (int axis = 0; axis + 1 < task.out.rank; ++axis) {
    auto a = static_cast<std::size_t>(axis);
    std::int64_t at = index[a] - task.node->attrs.begins[a];
    if (at < 0 || at >= task.in[0].dim(axis)) return -1;
    offset += at * in_strides[a];
  }
  return offset;
}

// Whether the pad widens only the last axis, so that row r of the result holds row r of the input.
bool pads_last_axis_only(const NodeTask& task) {
  for (int axis = 0; axis + 1 < task.out.rank; ++axis) {
    if (task.node->attrs.begins[static_cast<std::size_t>(axis)] != 0 ||
        task.in[0].dim(axis) != task.out.dim(axis))
      return false;
  }
  return true;
}

// Rows [first, end) of a pad of the last axis only, an element at a time: for rows of a few
// elements (the gradient of rotary embeddings' interleaving pads [..., 1] to [..., 2]), three
// library calls and the row's source offset took 5-9 ns an element.
template <class Word>
void pad_rows_by_element(const TensorRef& in, const TensorRef& out, std::int64_t before,
                         std::int64_t first, std::int64_t end) {
  std::int64_t length = out.dim(out.rank - 1);
  std::int64_t in_length = in.dim(in.rank - 1);
  const auto* source = reinterpret_cast<const Word*>(in.data);
  auto* target = reinterpret_cast<Word*>(out.data);
  for (std::int64_t r = first; r < end; ++r) {
    for (std::int64_t j = 0; j < length; ++j) {
      std::int64_t at = j - before;
      target[r * length + j] = at >= 0 && at < in_length ? source[r * in_length + at] : Word{0};
    }
  }
}

// Rows of at most this many elements are padded an element at a time, longer ones by memcpy.
constexpr std::int64_t kShortRow = 16;

// Pads the result as pad_rows_by_element does, where that applies (a pad of the last axis only,
// of short rows); returns whether it did.
bool pad_short_rows(const NodeTask& task) {
  const TensorRef& out = task.out;
  if (out.rank == 0 || out.dim(out.rank - 1) > kShortRow || !pads_last_axis_only(task))
    return false;
  std::int64_t before = task.node->attrs.begins[static_cast<std::size_t>(out.rank - 1)];
  split_rows(task.team, rows_of(out), out.count, [&](std::int64_t first, std::int64_t end) {
    with_word(out.dtype, [&](auto word) {
      pad_rows_by_element<decltype(word)>(task.in[0], out, before, first, end);
    });
  });
  return true;
}

// Each row of the result written once, across the team: the input's row between zeros where the
// input has one, zeros elsewhere (zeroing the whole result before copying wrote it twice, and a
// convolution's gradient pads nine slices to its input's size).
void pad(const NodeTask& task) {
  const TensorRef& out = task.out;
  std::size_t word = graph::dtype_size(out.dtype);
  if (out.rank == 0) {
    std::memcpy(out.data, task.in[0].data, word);
    return;
  }
  if (pad_short_rows(task)) return;
  int last = out.rank - 1;
  auto bytes = [&](std::int64_t elements) { return static_cast<std::size_t>(elements) * word; };
  std::int64_t length = out.dim(last);
  std::int64_t before = task.node->attrs.begins[static_cast<std::size_t>(last)];
  std::int64_t in_length = task.in[0].dim(last);
  Dims in_strides = strides_of(task.in[0]);
  split_rows(task.team, rows_of(out), out.count, [&](std::int64_t first, std::int64_t end) {
    Dims index{};
    std::int64_t rest = first;
    for (int axis = last; axis-- > 0;) {
      index[static_cast<std::size_t>(axis)] = rest % out.dim(axis);
      rest /= out.dim(axis);
    }
    for (std::int64_t r = first; r < end; ++r) {
      std::byte* row = out.data + bytes(r * length);
      std::int64_t source = padded_row_source(task, index, in_strides);
      if (source < 0) {
        std::memset(row, 0, bytes(length));
      } else {
        std::memset(row, 0, bytes(before));
        if (in_length > 0)
          std::memcpy(row + bytes(before), task.in[0].data + bytes(source), bytes(in_length));
        std::memset(row + bytes(before + in_length), 0, bytes(length - before - in_length));
      }
      for (int axis = last; axis-- > 0;) {
        auto a = static_cast<std::size_t>(axis);
        if (++index[a] < out.dim(axis)) break;
        index[a] = 0;
      }
    }
  });
}

void concat(const NodeTask& task) {
  Dims target = strides_of(task.out);
  auto axis = static_cast<std::size_t>(task.node->attrs.axis);
  std::int64_t along = 0;
  for (const TensorRef& part : task.in) {
    copy_strided(task.team, part, part, 0, strides_of(part), task.out, along * target[axis],
                 target);
    along += part.shape[axis];
  }
}

// The geometry shared by windows and windows_sum: `spatial` [L..., S1..Sd] and its windows
// [L..., K, O1..Od] of extents `window`, O = S - k + 1 along each of the d trailing axes. A row
// of the windows (along Od) is a stretch of a row of `spatial`.
struct WindowGeometry {
  const TensorRef& spatial;
  const TensorRef& windowed;
  const graph::Shape& window;

  int axes() const { return static_cast<int>(window.size()); }
  int lead() const { return spatial.rank - axes(); }
  std::int64_t count() const { return windowed.dim(lead()); }  // K
  std::int64_t outputs(int axis) const { return windowed.dim(lead() + 1 + axis); }
  std::int64_t inputs(int axis) const { return spatial.dim(lead() + axis); }
  std::int64_t row_length() const { return outputs(axes() - 1); }

  // Window w's offset along each axis, row-major over the window's extents.
  Dims offsets(std::int64_t w) const {
    Dims offset{};
    for (int a = axes(); a-- > 0;) {
      auto i = static_cast<std::size_t>(a);
      offset[i] = w % window[i];
      w /= window[i];
    }
    return offset;
  }

  // Row `row` of a tensor whose trailing axes are d spatial ones of sizes extent(a), as the
  // indices of the d - 1 axes before the rows' own and, returned, the rows before them (the
  // windows' w and lead index, or the source's lead index).
  template <class Extent>
  static std::int64_t split_row(std::int64_t row, int axes, Extent extent, Dims& position) {
    for (int a = axes - 1; a-- > 0;) {
      position[static_cast<std::size_t>(a)] = row % extent(a);
      row /= extent(a);
    }
    return row;
  }

  // Where row r of the windows starts in `spatial`, as an element offset.
  std::int64_t source_of_row(std::int64_t r) const {
    Dims position{};
    r = split_row(
        r, axes(), [this](int a) { return outputs(a); }, position);
    Dims offset = offsets(r % count());
    std::int64_t source = r / count();
    for (int a = 0; a < axes(); ++a)
      source = source * inputs(a) + position[static_cast<std::size_t>(a)] +
               offset[static_cast<std::size_t>(a)];
    return source;
  }
};

void windows(const NodeTask& task) {
  WindowGeometry geometry{task.in[0], task.out, task.node->attrs.shape};
  auto bytes = [word = graph::dtype_size(task.out.dtype)](std::int64_t elements) {
    return static_cast<std::size_t>(elements) * word;
  };
  std::int64_t length = geometry.row_length();
  split_rows(task.team, rows_of(task.out), task.out.count,
             [&](std::int64_t first, std::int64_t end) {
               for (std::int64_t r = first; r < end; ++r)
                 std::memcpy(task.out.data + bytes(r * length),
                             task.in[0].data + bytes(geometry.source_of_row(r)), bytes(length));
             });
}

// Adds `length` values of the windows' row at `from` (16-bit or f32) into `sums`.
void add_row(const TensorRef& g, std::int64_t from, std::int64_t length, float* sums) {
  if (g.dtype == graph::DType::f32) {
    const float* values = g.f32() + from;
    for (std::int64_t i = 0; i < length; ++i)
      sums[i] += values[i];
    return;
  }
  constexpr std::int64_t kChunk = 256;
  float widened[kChunk];
  for (std::int64_t done = 0; done < length; done += kChunk) {
    std::int64_t n = std::min(kChunk, length - done);
    widen_from_half(g.half() + from + done, widened, n, g.dtype);
    for (std::int64_t i = 0; i < n; ++i)
      sums[done + i] += widened[i];
  }
}

// Adds into sums[0, stretch) the values the windows took from elements [begin, begin + stretch)
// of one row of their source: the row of lead index `lead` at outer spatial indices `position`.
// Windows in order, so a value's terms are added in window order.
void add_windows_taken(const WindowGeometry& geometry, std::int64_t lead, const Dims& position,
                       std::int64_t begin, std::int64_t stretch, float* sums) {
  int last = geometry.axes() - 1;
  std::int64_t length = geometry.row_length();
  for (std::int64_t w = 0; w < geometry.count(); ++w) {
    Dims offset = geometry.offsets(w);
    std::int64_t row = lead * geometry.count() + w;  // the windows' row, axis by axis
    bool taken = true;
    for (int a = 0; a < last && taken; ++a) {
      auto i = static_cast<std::size_t>(a);
      std::int64_t o = position[i] - offset[i];
      taken = o >= 0 && o < geometry.outputs(a);
      row = row * geometry.outputs(a) + o;
    }
    std::int64_t shift = offset[static_cast<std::size_t>(last)];
    std::int64_t from = std::max(begin, shift);
    std::int64_t to = std::min(begin + stretch, shift + length);
    if (taken && from < to)
      add_row(geometry.windowed, row * length + from - shift, to - from, sums + (from - begin));
  }
}

// Row r of windows_sum's result (along Sd): the windows' rows taken from it gathered into f32
// sums a stretch at a time, each stretch stored (rounded once to a 16-bit result).
void sum_windows_row(const WindowGeometry& geometry, std::int64_t r, const TensorRef& out) {
  constexpr std::int64_t kStretch = 512;
  float sums[kStretch];
  Dims position{};
  std::int64_t lead = WindowGeometry::split_row(
      r, geometry.axes(), [&](int a) { return geometry.inputs(a); }, position);
  std::int64_t row_size = geometry.inputs(geometry.axes() - 1);
  for (std::int64_t begin = 0; begin < row_size; begin += kStretch) {
    std::int64_t stretch = std::min(kStretch, row_size - begin);
    std::fill_n(sums, stretch, 0.0f);
    add_windows_taken(geometry, lead, position, begin, stretch, sums);
    std::int64_t at = r * row_size + begin;
    if (out.dtype == graph::DType::f32)
      std::copy_n(sums, stretch, out.f32() + at);
    else
      narrow_to_half(sums, out.half() + at, stretch, out.dtype);
  }
}

}  // namespace

// Rows split across the team, so no two parts write one row.
void run_windows_sum(NodeTask& task) {
  WindowGeometry geometry{task.out, task.in[0], task.node->attrs.shape};
  split_rows(task.team, rows_of(task.out), task.out.count,
             [&](std::int64_t first, std::int64_t end) {
               for (std::int64_t r = first; r < end; ++r)
                 sum_windows_row(geometry, r, task.out);
             });
}

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
    case OpKind::windows:
      return windows(task);
    default:
      throw std::logic_error("not a layout op");
  }
}

}  // namespace csrun::runtime
