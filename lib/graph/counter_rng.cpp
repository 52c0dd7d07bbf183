#include "counter_rng.hpp"

#include <cmath>
#include <numeric>
#include <utility>

namespace csrun::graph {

bool dropout_keeps(std::uint64_t seed, std::uint64_t salt, std::int64_t step, std::int64_t index,
                   double rate) {
  return dropout_keeps(dropout_step_key(seed, salt, step), index, rate);
}

std::uint64_t dropout_keep_threshold(double rate) {
  constexpr std::uint64_t kDraws = std::uint64_t{1} << 53;  // every draw_bits is below this
  if (std::isnan(rate) || rate >= 1.0) return kDraws;       // no draw is >= NaN, nor reaches 1
  if (rate <= 0.0) return 0;
  return static_cast<std::uint64_t>(std::ceil(std::ldexp(rate, 53)));
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
