#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace csrun::graph {

// Counter-based randomness: a value is a pure function of its key, so every random number
// (dropout masks, initial weights) depends only on the seed and where it is used, never on
// evaluation order, thread count or machine. The mixer is SplitMix64's finalizer. Inline: the
// initializers draw a hundred million of these for a GPT-2 small.
inline std::uint64_t mix64(std::uint64_t value) {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

inline std::uint64_t mix_keys(std::uint64_t a, std::uint64_t b) {
  return mix64(a ^ mix64(b));
}

// A uniform double in [0, 1) from a key: its 53 random bits (draw_bits) times 2^-53, exactly.
// The 53-bit integer becomes a double in two exact halves built from their bits, the same value a
// conversion gives: SSE and AVX2 have no packed conversion of 64-bit integers, and this way loops
// of it vectorize.
inline std::uint64_t draw_bits(std::uint64_t key) {
  return mix64(key) >> 11;
}
inline double uniform01(std::uint64_t key) {
  std::uint64_t bits = draw_bits(key);
  double high = std::bit_cast<double>(0x4530000000000000ull | (bits >> 32)) - 0x1p84;
  double low = std::bit_cast<double>(0x4330000000000000ull | (bits & 0xFFFFFFFFull)) - 0x1p52;
  return (high + low) * 0x1.0p-53;
}
// A permutation of [0, count) drawn from `key`: Fisher-Yates with counter-based draws, so the
// same on every machine and library (sample orders, masked-LM positions).
std::vector<std::int64_t> permutation(std::int64_t count, std::uint64_t key);
// The key of dropout's draws at `step` (its seed and salt, the node's), and whether the draw of
// element `index` under it keeps the element: split so that a kernel mixes the step's key once
// and its loop over the elements calls nothing.
inline std::uint64_t dropout_step_key(std::uint64_t seed, std::uint64_t salt, std::int64_t step) {
  return mix_keys(mix_keys(seed, salt), static_cast<std::uint64_t>(step));
}
inline bool dropout_keeps(std::uint64_t step_key, std::int64_t index, double rate) {
  return uniform01(mix_keys(step_key, static_cast<std::uint64_t>(index))) >= rate;
}
// The least draw_bits that dropout at `rate` keeps: uniform01 >= rate exactly when the draw's bits
// are at least this (bits * 2^-53 is exact), so a kernel compares integers instead of building a
// double per element.
std::uint64_t dropout_keep_threshold(double rate);
inline bool dropout_keeps_bits(std::uint64_t step_key, std::int64_t index,
                               std::uint64_t threshold) {
  return draw_bits(mix_keys(step_key, static_cast<std::uint64_t>(index))) >= threshold;
}
// Whether dropout keeps element `index` at `step`.
bool dropout_keeps(std::uint64_t seed, std::uint64_t salt, std::int64_t step, std::int64_t index,
                   double rate);

}  // namespace csrun::graph
