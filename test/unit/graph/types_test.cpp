// Shapes: how an operand broadcasts to a result read in flat order.

#include <catch2/catch.hpp>

#include "graph/types.hpp"

using namespace csrun::graph;

namespace {

// Element i of `to` read by the NumPy rule, as a flat index of `from`.
std::int64_t numpy_index(const Shape& from, const Shape& to, std::int64_t i) {
  std::int64_t index = 0;
  std::int64_t stride = 1;
  std::size_t pad = to.size() - from.size();
  for (std::size_t axis = to.size(); axis-- > 0;) {
    std::int64_t coordinate = i % to[axis];
    i /= to[axis];
    if (axis < pad) continue;
    std::int64_t dim = from[axis - pad];
    index += (dim == 1 ? 0 : coordinate) * stride;
    stride *= dim;
  }
  return index;
}

}  // namespace

TEST_CASE("an operand whose kept axes are consecutive broadcasts in flat order as (i / r) % p") {
  struct Case {
    Shape from;
    Shape to;
    std::int64_t repeat;
    std::int64_t period;
  };
  Case cases[] = {
      {{}, {2, 3}, 1, 1},                   // a scalar
      {{2, 3}, {2, 3}, 1, 6},               // the same shape
      {{3}, {4, 2, 3}, 1, 3},               // a row of biases
      {{5, 5}, {2, 3, 5, 5}, 1, 25},        // a causal mask under the heads
      {{2, 3, 5, 1}, {2, 3, 5, 5}, 5, 30},  // a row's sum
      {{3, 1}, {2, 3, 4}, 4, 3},            // leading and trailing axes broadcast
      {{1, 3, 1, 1}, {2, 3, 4, 5}, 20, 3},
      {{2, 1, 1}, {2, 1, 4}, 4, 2},  // a 1 in both shapes is no axis
  };
  for (const Case& c : cases) {
    INFO(shape_string(c.from) << " -> " << shape_string(c.to));
    std::optional<FlatBroadcast> how = flat_broadcast(c.from, c.to);
    REQUIRE(how);
    CHECK(how->repeat == c.repeat);
    CHECK(how->period == c.period);
    for (std::int64_t i = 0; i < element_count(c.to); ++i)
      CHECK(i / how->repeat % how->period == numpy_index(c.from, c.to, i));
  }
}

TEST_CASE("an operand kept on axes apart, or not broadcasting, has no flat broadcast") {
  CHECK_FALSE(flat_broadcast({2, 1, 4}, {2, 3, 4}));  // kept, broadcast, kept
  CHECK_FALSE(flat_broadcast({3}, {2, 4}));           // incompatible
  CHECK_FALSE(flat_broadcast({2, 4}, {4}));           // of higher rank
  CHECK_FALSE(flat_broadcast({2}, {1}));
}
