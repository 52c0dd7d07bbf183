// The pad kernel writes every element of its result once (the input's rows between zeros), so a
// result buffer that held another value earlier in the step must come out right.

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "graph/graph.hpp"
#include "runtime/host_kernels.hpp"
#include "runtime/kernel_set.hpp"
#include "runtime/thread_team.hpp"
#include "runtime_fixture.hpp"

using namespace csrun;
using graph::DType;

namespace {

// x of shape [a, b, c] padded by `before` to `out_shape`, element by element.
template <class T>
std::vector<T> padded(const std::vector<T>& x, const std::vector<std::int64_t>& in_shape,
                      const std::vector<std::int64_t>& before,
                      const std::vector<std::int64_t>& out_shape) {
  std::vector<T> out(static_cast<std::size_t>(out_shape[0] * out_shape[1] * out_shape[2]));
  for (std::int64_t i = 0; i < in_shape[0]; ++i) {
    for (std::int64_t j = 0; j < in_shape[1]; ++j) {
      for (std::int64_t k = 0; k < in_shape[2]; ++k) {
        std::int64_t to =
            ((i + before[0]) * out_shape[1] + j + before[1]) * out_shape[2] + k + before[2];
        out[static_cast<std::size_t>(to)] =
            x[static_cast<std::size_t>((i * in_shape[1] + j) * in_shape[2] + k)];
      }
    }
  }
  return out;
}

// Pads x of `in_shape` (values of `dtype`, as T's bits) by `before` and `after` with every kernel
// set, on one core and on two, into a buffer of other bits; checks every element.
template <class T>
void check_pad(DType dtype, const std::vector<std::int64_t>& in_shape,
               const std::vector<std::int64_t>& before, const std::vector<std::int64_t>& after) {
  std::vector<std::int64_t> out_shape(3);
  for (std::size_t axis = 0; axis < 3; ++axis)
    out_shape[axis] = before[axis] + in_shape[axis] + after[axis];
  std::vector<T> x(static_cast<std::size_t>(in_shape[0] * in_shape[1] * in_shape[2]));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<T>(i % 97 + 1);
  std::vector<T> expected = padded(x, in_shape, before, out_shape);
  graph::Node node;
  node.op = graph::OpKind::pad;
  node.type = {out_shape, dtype};
  node.attrs.begins = before;
  node.attrs.ends = after;
  runtime::ThreadTeam team(2);
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    INFO(name << ", " << graph::dtype_name(dtype) << ", rows of " << out_shape[2]);
    for (runtime::ThreadTeam* parts : {static_cast<runtime::ThreadTeam*>(nullptr), &team}) {
      std::vector<T> out(expected.size(), static_cast<T>(-1));
      runtime::NodeTask task;
      task.node = &node;
      task.team = parts;
      task.in = {test::tensor_ref(x, dtype, in_shape)};
      task.out = test::tensor_ref(out, dtype, out_shape);
      const runtime::KernelSet& kernels = runtime::kernel_set(name);
      kernels.prepare(task);
      kernels.run(task);
      std::size_t wrong = 0;  // counted: Catch would print every value
      for (std::size_t i = 0; i < out.size(); ++i)
        wrong += std::memcmp(&out[i], &expected[i], sizeof(T)) != 0;
      CHECK(wrong == 0);
    }
  }
}

}  // namespace

TEST_CASE("a pad writes every element of its result over what the buffer held, on every set") {
  // Rows of zeros (padded leading axes), zeros before and after each row, and rows split across
  // two cores (131,072 elements) or run on one.
  check_pad<float>(DType::f32, {6, 60, 300}, {1, 2, 3}, {2, 0, 5});
}

TEST_CASE("a pad of short rows of the last axis only writes each element, in every dtype size") {
  // Rotary embeddings' interleaving, whose gradient pads [..., 1] to [..., 2] on either side, and
  // rows of a few elements with zeros both sides, of 4, 2 and 1 bytes.
  check_pad<float>(DType::f32, {64, 512, 1}, {0, 0, 0}, {0, 0, 1});
  check_pad<float>(DType::f32, {64, 512, 1}, {0, 0, 1}, {0, 0, 0});
  check_pad<float>(DType::f32, {40, 300, 5}, {0, 0, 3}, {0, 0, 8});
  check_pad<std::uint16_t>(DType::bf16, {64, 512, 1}, {0, 0, 1}, {0, 0, 0});
  check_pad<std::uint16_t>(DType::f16, {40, 300, 3}, {0, 0, 2}, {0, 0, 1});
  check_pad<std::uint8_t>(DType::boolean, {40, 300, 2}, {0, 0, 1}, {0, 0, 1});
  // Leading axes padded too: the general path, with short rows.
  check_pad<float>(DType::f32, {40, 300, 1}, {1, 0, 1}, {0, 2, 0});
}
