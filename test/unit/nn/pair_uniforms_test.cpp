#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "graph/counter_rng.hpp"
#include "nn/pair_uniforms.hpp"

using namespace csrun;

TEST_CASE("uniform01 is the 53-bit integer of its key's hash, converted exactly") {
  for (std::uint64_t key = 0; key < 100000; ++key) {
    std::uint64_t bits = graph::mix64(key) >> 11;
    REQUIRE(graph::uniform01(key) == static_cast<double>(bits) * 0x1.0p-53);
  }
  // The largest value: 53 bits set, just below 1.
  CHECK(static_cast<double>(std::numeric_limits<std::uint64_t>::max() >> 11) * 0x1.0p-53 ==
        1.0 - 0x1.0p-53);
}

TEST_CASE("pair_uniforms gives the bits of keyed draws, one pair at a time") {
  const std::uint64_t key = graph::mix_keys(20261127, 42);
  std::vector<std::int64_t> pairs;
  for (std::int64_t pair = 0; pair < 1000; ++pair)
    pairs.push_back(pair);
  pairs.push_back(std::numeric_limits<std::int64_t>::max());
  pairs.push_back(61'999'999);
  for (std::int64_t draw : {0, 1, 63}) {
    std::vector<double> u1(pairs.size());
    std::vector<double> u2(pairs.size());
    nn::pair_uniforms(key, pairs, draw, u1, u2);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      std::uint64_t element = graph::mix_keys(key, static_cast<std::uint64_t>(pairs[i]));
      INFO("pair " << pairs[i] << ", draw " << draw);
      REQUIRE(u1[i] == 1.0 - graph::uniform01(
                                 graph::mix_keys(element, static_cast<std::uint64_t>(2 * draw))));
      REQUIRE(u2[i] ==
              graph::uniform01(graph::mix_keys(element, static_cast<std::uint64_t>(2 * draw + 1))));
      REQUIRE(u1[i] > 0.0);
      REQUIRE(u2[i] < 1.0);
    }
  }
}
