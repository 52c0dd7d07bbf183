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

// x of shape [a, b, c] padded by `before` and `after`, element by element.
std::vector<float> padded(const std::vector<float>& x, const std::vector<std::int64_t>& in_shape,
                          const std::vector<std::int64_t>& before,
                          const std::vector<std::int64_t>& out_shape) {
  std::vector<float> out(static_cast<std::size_t>(out_shape[0] * out_shape[1] * out_shape[2]));
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

}  // namespace

TEST_CASE("a pad writes every element of its result over what the buffer held, on every set") {
  // Rows of zeros (padded leading axes), zeros before and after each row, and rows split across
  // two cores (131,072 elements) or run on one.
  std::vector<std::int64_t> in_shape = {6, 60, 300};
  std::vector<std::int64_t> before = {1, 2, 3};
  std::vector<std::int64_t> after = {2, 0, 5};
  std::vector<std::int64_t> out_shape = {9, 62, 308};
  std::vector<float> x(static_cast<std::size_t>(6 * 60 * 300));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 977) - 400.0f;
  std::vector<float> expected = padded(x, in_shape, before, out_shape);
  graph::Node node;
  node.op = graph::OpKind::pad;
  node.type = {out_shape, DType::f32};
  node.attrs.begins = before;
  node.attrs.ends = after;
  runtime::ThreadTeam team(2);
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    INFO(name);
    for (runtime::ThreadTeam* parts : {static_cast<runtime::ThreadTeam*>(nullptr), &team}) {
      std::vector<float> out(expected.size(), std::numeric_limits<float>::quiet_NaN());
      runtime::NodeTask task;
      task.node = &node;
      task.team = parts;
      task.in = {test::tensor_ref(x, DType::f32, in_shape)};
      task.out = test::tensor_ref(out, DType::f32, out_shape);
      const runtime::KernelSet& kernels = runtime::kernel_set(name);
      kernels.prepare(task);
      kernels.run(task);
      std::size_t wrong = 0;  // counted: Catch would print all 172,000 values
      for (std::size_t i = 0; i < out.size(); ++i)
        wrong += std::memcmp(&out[i], &expected[i], sizeof(float)) != 0;
      CHECK(wrong == 0);
    }
  }
}
