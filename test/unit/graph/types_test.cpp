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

TEST_CASE("an operand kept on at most two runs of axes broadcasts in flat order") {
  struct Case {
    Shape from;
    Shape to;
    std::int64_t repeat;
    std::int64_t period;
    std::int64_t outer_repeat;
    std::int64_t outer_period;
  };
  Case cases[] = {
      {{}, {2, 3}, 1, 1, 1, 1},                   // a scalar
      {{2, 3}, {2, 3}, 1, 6, 1, 1},               // the same shape
      {{3}, {4, 2, 3}, 1, 3, 1, 1},               // a row of biases
      {{5, 5}, {2, 3, 5, 5}, 1, 25, 1, 1},        // a causal mask under the heads
      {{2, 3, 5, 1}, {2, 3, 5, 5}, 5, 30, 1, 1},  // a row's sum
      {{3, 1}, {2, 3, 4}, 4, 3, 1, 1},            // leading and trailing axes broadcast
      {{1, 3, 1, 1}, {2, 3, 4, 5}, 20, 3, 1, 1},
      {{2, 1, 1}, {2, 1, 4}, 4, 2, 1, 1},         // a 1 in both shapes is no axis
      {{2, 1, 1, 5}, {2, 3, 5, 5}, 1, 5, 75, 2},  // a padding mask under heads and queries
      {{2, 1, 4}, {2, 3, 4}, 1, 4, 12, 2},        // kept, broadcast, kept
      {{2, 1, 1, 3}, {2, 5, 1, 3}, 1, 3, 15, 2},  // a 1 in both shapes inside a run
      {{3, 1, 2, 1}, {3, 4, 2, 5}, 5, 2, 40, 3},  // two runs, the last axis broadcast
      {{1, 3, 1, 2}, {2, 3, 4, 2}, 1, 2, 8, 3},   // and the first
  };
  for (const Case& c : cases) {
    INFO(shape_string(c.from) << " -> " << shape_string(c.to));
    std::optional<FlatBroadcast> how = flat_broadcast(c.from, c.to);
    REQUIRE(how);
    CHECK(how->repeat == c.repeat);
    CHECK(how->period == c.period);
    CHECK(how->outer_repeat == c.outer_repeat);
    CHECK(how->outer_period == c.outer_period);
    for (std::int64_t i = 0; i < element_count(c.to); ++i) {
      CHECK(how->element(i) == numpy_index(c.from, c.to, i));
      // A run from i reads consecutive elements, or one element, as the rule does.
      std::int64_t run = how->run_at(i);
      REQUIRE(run >= 1);
      if (i + run - 1 < element_count(c.to))
        CHECK(how->element(i + run - 1) == how->element(i) + (how->repeat == 1 ? run - 1 : 0));
    }
  }
}

TEST_CASE("an operand kept on axes apart more than twice, or not broadcasting, has none") {
  CHECK_FALSE(flat_broadcast({2, 1, 3, 1, 4}, {2, 5, 3, 6, 4}));  // three runs
  CHECK_FALSE(flat_broadcast({3}, {2, 4}));                       // incompatible
  CHECK_FALSE(flat_broadcast({2, 4}, {4}));                       // of higher rank
  CHECK_FALSE(flat_broadcast({2}, {1}));
}
