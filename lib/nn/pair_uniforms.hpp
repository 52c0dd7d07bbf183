#pragma once

#include <cstdint>
#include <span>

namespace csrun::nn {

// The two uniforms of each Box-Muller pair a keyed sampler draws: for pair p = pairs[i],
// with element key e = graph::mix_keys(key, p),
//   u1[i] = 1 - graph::uniform01(graph::mix_keys(e, 2 draw))   in (0, 1]
//   u2[i] = graph::uniform01(graph::mix_keys(e, 2 draw + 1))   in [0, 1)
// the same bits as those calls, in a loop that vectorizes (built for AVX2 as well as the
// baseline, chosen when the program loads): hashing is most of the time initialization takes.
// u1 and u2 hold at least as many values as pairs.
void pair_uniforms(std::uint64_t key, std::span<const std::int64_t> pairs, std::int64_t draw,
                   std::span<double> u1, std::span<double> u2);

}  // namespace csrun::nn
