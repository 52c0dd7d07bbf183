#include "golden.hpp"

#include "graph/counter_rng.hpp"

namespace csrun::test {

namespace {

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

}  // namespace

double golden_value(std::string_view stream, std::uint64_t index) {
  return graph::uniform01(graph::mix_keys(fnv1a(stream), index));
}

std::vector<double> golden_initial_weight(const std::string& name, std::size_t count) {
  std::vector<double> values(count);
  bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  bool norm = name.find("norm") != std::string::npos || name.find("ln_f") != std::string::npos;
  for (std::size_t i = 0; i < count; ++i) {
    double u = 2.0 * golden_value(name, i) - 1.0;
    double value = bias ? 0.05 * u : norm ? 1.0 + 0.1 * u : 0.1 * u;
    values[i] = static_cast<float>(value);
  }
  return values;
}

}  // namespace csrun::test
