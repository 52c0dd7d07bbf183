#include "counter_rng.hpp"

#include <numeric>
#include <utility>

namespace csrun::graph {

std::uint64_t mix64(std::uint64_t value) {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

std::uint64_t mix_keys(std::uint64_t a, std::uint64_t b) {
  return mix64(a ^ mix64(b));
}

double uniform01(std::uint64_t key) {
  return static_cast<double>(mix64(key) >> 11) * 0x1.0p-53;
}

bool dropout_keeps(std::uint64_t seed, std::uint64_t salt, std::int64_t step, std::int64_t index,
                   double rate) {
  std::uint64_t key = mix_keys(mix_keys(mix_keys(seed, salt), static_cast<std::uint64_t>(step)),
                               static_cast<std::uint64_t>(index));
  return uniform01(key) >= rate;
}

std::vector<std::int64_t> permutation(std::int64_t count, std::uint64_t key) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t i = count - 1; i > 0; --i) {
    double u = uniform01(mix_keys(key, static_cast<std::uint64_t>(i)));
    auto j = static_cast<std::int64_t>(u * static_cast<double>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace csrun::graph
