#include "pair_uniforms.hpp"

#include "graph/counter_rng.hpp"

namespace csrun::nn {

[[gnu::target_clones("avx2", "default")]] void pair_uniforms(std::uint64_t key,
                                                             std::span<const std::int64_t> pairs,
                                                             std::int64_t draw,
                                                             std::span<double> u1,
                                                             std::span<double> u2) {
  // mix_keys(e, d) is mix64(e ^ mix64(d)): the draws' halves are hashed once.
  std::uint64_t first_draw = graph::mix64(static_cast<std::uint64_t>(2 * draw));
  std::uint64_t second_draw = graph::mix64(static_cast<std::uint64_t>(2 * draw + 1));
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    std::uint64_t element = graph::mix_keys(key, static_cast<std::uint64_t>(pairs[i]));
    u1[i] = 1.0 - graph::uniform01(graph::mix64(element ^ first_draw));
    u2[i] = graph::uniform01(graph::mix64(element ^ second_draw));
  }
}

}  // namespace csrun::nn
