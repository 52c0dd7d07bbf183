#pragma once

#include <cstdint>
#include <vector>

namespace csrun::graph {

// Counter-based randomness: a value is a pure function of its key, so every random number
// (dropout masks, initial weights) depends only on the seed and where it is used, never on
// evaluation order, thread count or machine. The mixer is SplitMix64's finalizer.
std::uint64_t mix64(std::uint64_t value);
std::uint64_t mix_keys(std::uint64_t a, std::uint64_t b);
// A uniform double in [0, 1) from a key (53 random bits).
double uniform01(std::uint64_t key);
// A permutation of [0, count) drawn from `key`: Fisher-Yates with counter-based draws, so the
// same on every machine and library (sample orders, masked-LM positions).
std::vector<std::int64_t> permutation(std::int64_t count, std::uint64_t key);
// Whether dropout keeps element `index` at `step`.
bool dropout_keeps(std::uint64_t seed, std::uint64_t salt, std::int64_t step, std::int64_t index,
                   double rate);

}  // namespace csrun::graph
