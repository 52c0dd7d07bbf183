#include "initializers.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "graph/counter_rng.hpp"

namespace csrun::nn {

namespace {

using graph::Initializer;

std::uint64_t name_key(std::string_view name) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

struct Fans {
  double in;
  double out;
};

Fans fans(const graph::Shape& shape) {
  if (shape.empty()) return {1.0, 1.0};
  if (shape.size() == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  double receptive = 1.0;
  for (std::size_t i = 2; i < shape.size(); ++i)
    receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

class Sampler {
 public:
  Sampler(std::uint64_t seed, std::string_view name)
      : key_(graph::mix_keys(seed, name_key(name))) {}

  double uniform(std::int64_t index, std::int64_t draw) const {
    return graph::uniform01(
        graph::mix_keys(graph::mix_keys(key_, static_cast<std::uint64_t>(index)),
                        static_cast<std::uint64_t>(draw)));
  }

  // A standard normal value by the Box-Muller transform of two keyed uniforms.
  double normal(std::int64_t index, std::int64_t draw) const {
    double u1 = 1.0 - uniform(index, 2 * draw);
    double u2 = uniform(index, 2 * draw + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::uint64_t key_;
};

double sample(const Initializer& init, const Sampler& sampler, std::int64_t index, Fans fan) {
  const std::string& name = init.name;
  if (name == "zeros") return 0.0;
  if (name == "ones") return 1.0;
  if (name == "constant") return init.value;
  if (name == "normal") return init.mean + init.std * sampler.normal(index, 0);
  if (name == "uniform") return init.a + (init.b - init.a) * sampler.uniform(index, 0);
  if (name == "truncated_normal") {
    // Redraw until the value falls in [a, b], as torch.nn.init.trunc_normal_ bounds it.
    for (std::int64_t draw = 0; draw < 64; ++draw) {
      double value = init.mean + init.std * sampler.normal(index, draw);
      if (value >= init.a && value <= init.b) return value;
    }
    return std::clamp(init.mean, init.a, init.b);
  }
  if (name == "xavier_uniform" || name == "glorot_uniform") {
    double bound = init.gain * std::sqrt(6.0 / (fan.in + fan.out));
    return -bound + 2.0 * bound * sampler.uniform(index, 0);
  }
  if (name == "xavier_normal" || name == "glorot_normal") {
    return init.gain * std::sqrt(2.0 / (fan.in + fan.out)) * sampler.normal(index, 0);
  }
  if (name == "kaiming_uniform" || name == "he_uniform") {
    double bound = std::sqrt(2.0) * std::sqrt(3.0 / fan.in);
    return -bound + 2.0 * bound * sampler.uniform(index, 0);
  }
  if (name == "kaiming_normal" || name == "he_normal")
    return std::sqrt(2.0 / fan.in) * sampler.normal(index, 0);
  if (name == "lecun_uniform") {
    double bound = std::sqrt(3.0 / fan.in);
    return -bound + 2.0 * bound * sampler.uniform(index, 0);
  }
  if (name == "lecun_normal") return std::sqrt(1.0 / fan.in) * sampler.normal(index, 0);
  throw std::invalid_argument("csrun has no initializer '" + name + "'");
}

double number_or(const config::Node& spec, const char* key, double fallback) {
  const config::Node* value = spec.find(key);
  return value && value->is_number() ? value->as_number() : fallback;
}

}  // namespace

std::vector<float> initial_values(const Initializer& init, const graph::Shape& shape,
                                  std::uint64_t seed, std::string_view name) {
  Sampler sampler(seed, name);
  Fans fan = fans(shape);
  std::vector<float> values(static_cast<std::size_t>(graph::element_count(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(sample(init, sampler, static_cast<std::int64_t>(i), fan));
  }
  return values;
}

Initializer initializer_from(const config::Node* spec, Initializer fallback) {
  if (!spec || spec->is_null()) return fallback;
  Initializer init;
  if (spec->is_string()) {
    init.name = spec->as_string();
    return init;
  }
  const config::Node* name = spec->find("name");
  init.name = name && name->is_string() ? name->as_string() : fallback.name;
  init.mean = number_or(*spec, "mean", 0.0);
  init.std = number_or(*spec, "std", 1.0);
  bool truncated = init.name == "truncated_normal";
  init.a = number_or(*spec, "a", truncated ? init.mean - 2.0 * init.std : 0.0);
  init.b = number_or(*spec, "b", truncated ? init.mean + 2.0 * init.std : 1.0);
  init.gain = number_or(*spec, "gain", 1.0);
  init.value = number_or(*spec, "val", number_or(*spec, "value", 0.0));
  return init;
}

Initializer zeros_initializer() {
  return Initializer{};
}

Initializer ones_initializer() {
  Initializer init;
  init.name = "ones";
  return init;
}

Initializer normal_initializer(double std, double mean) {
  Initializer init;
  init.name = "normal";
  init.std = std;
  init.mean = mean;
  return init;
}

Initializer truncated_normal_initializer(double std) {
  Initializer init = normal_initializer(std);
  init.name = "truncated_normal";
  init.a = -2.0 * std;
  init.b = 2.0 * std;
  return init;
}

}  // namespace csrun::nn
