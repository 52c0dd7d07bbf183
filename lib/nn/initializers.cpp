#include "initializers.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
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
    return graph::uniform01(graph::mix_keys(element_key(index), static_cast<std::uint64_t>(draw)));
  }

  // Two independent standard normal values by the Box-Muller transform of two keyed uniforms:
  // elements 2j and 2j + 1 share pair j's, one taking the cosine, the other the sine, so a pair
  // of values costs one logarithm.
  std::array<double, 2> normal_pair(std::int64_t pair, std::int64_t draw) const {
    std::uint64_t key = element_key(pair);
    double u1 = 1.0 - graph::uniform01(graph::mix_keys(key, static_cast<std::uint64_t>(2 * draw)));
    double u2 = graph::uniform01(graph::mix_keys(key, static_cast<std::uint64_t>(2 * draw + 1)));
    double radius = std::sqrt(-2.0 * std::log(u1));
    double angle = 2.0 * std::numbers::pi * u2;
    return {radius * std::cos(angle), radius * std::sin(angle)};
  }

  // Element `index`'s standard normal value of draw `draw`.
  double normal(std::int64_t index, std::int64_t draw) const {
    return normal_pair(index / 2, draw)[static_cast<std::size_t>(index % 2)];
  }

 private:
  std::uint64_t element_key(std::int64_t index) const {
    return graph::mix_keys(key_, static_cast<std::uint64_t>(index));
  }

  std::uint64_t key_;
};

// Writes an initializer's values for elements [first, first + out.size()). Chosen once per
// tensor; the per-element rule is inlined into the loop, which compares no names.
using FillRule = std::function<void(std::span<float>, std::int64_t)>;

template <class Element>
FillRule filling(const Sampler& sampler, Element element) {
  return [sampler, element](std::span<float> out, std::int64_t first) {
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<float>(element(sampler, first + static_cast<std::int64_t>(i)));
  };
}

// The same for a rule of the element's first normal value (draw 0), each pair of them made once.
template <class Element>
FillRule normal_filling(const Sampler& sampler, Element element) {
  return [sampler, element](std::span<float> out, std::int64_t first) {
    std::int64_t end = first + static_cast<std::int64_t>(out.size());
    for (std::int64_t pair = first / 2; 2 * pair < end; ++pair) {
      std::array<double, 2> normals = sampler.normal_pair(pair, 0);
      for (std::int64_t index = std::max(2 * pair, first); index < std::min(2 * pair + 2, end);
           ++index) {
        double normal = normals[static_cast<std::size_t>(index % 2)];
        out[static_cast<std::size_t>(index - first)] =
            static_cast<float>(element(sampler, index, normal));
      }
    }
  };
}

FillRule uniform_rule(const Sampler& sampler, double low, double high) {
  return filling(sampler, [low, high](const Sampler& draw, std::int64_t index) {
    return low + (high - low) * draw.uniform(index, 0);
  });
}

FillRule normal_rule(const Sampler& sampler, double mean, double std) {
  return normal_filling(sampler, [mean, std](const Sampler&, std::int64_t, double normal) {
    return mean + std * normal;
  });
}

FillRule scaled_normal_rule(const Sampler& sampler, double std) {
  return normal_filling(
      sampler, [std](const Sampler&, std::int64_t, double normal) { return std * normal; });
}

FillRule fill_rule(const Initializer& init, const Sampler& sampler, Fans fan) {
  const std::string& name = init.name;
  if (name == "normal") return normal_rule(sampler, init.mean, init.std);
  if (name == "uniform") return uniform_rule(sampler, init.a, init.b);
  if (name == "truncated_normal") {
    // Redraw until the value falls in [a, b], as torch.nn.init.trunc_normal_ bounds it.
    return normal_filling(sampler, [init](const Sampler& draw, std::int64_t index, double normal) {
      for (std::int64_t attempt = 1;; ++attempt) {
        double value = init.mean + init.std * normal;
        if (value >= init.a && value <= init.b) return value;
        if (attempt == 64) return std::clamp(init.mean, init.a, init.b);
        normal = draw.normal(index, attempt);
      }
    });
  }
  if (name == "xavier_uniform" || name == "glorot_uniform") {
    double bound = init.gain * std::sqrt(6.0 / (fan.in + fan.out));
    return uniform_rule(sampler, -bound, bound);
  }
  if (name == "xavier_normal" || name == "glorot_normal")
    return scaled_normal_rule(sampler, init.gain * std::sqrt(2.0 / (fan.in + fan.out)));
  if (name == "kaiming_uniform" || name == "he_uniform") {
    double bound = std::sqrt(2.0) * std::sqrt(3.0 / fan.in);
    return uniform_rule(sampler, -bound, bound);
  }
  if (name == "kaiming_normal" || name == "he_normal")
    return scaled_normal_rule(sampler, std::sqrt(2.0 / fan.in));
  if (name == "lecun_uniform") {
    double bound = std::sqrt(3.0 / fan.in);
    return uniform_rule(sampler, -bound, bound);
  }
  if (name == "lecun_normal") return scaled_normal_rule(sampler, std::sqrt(1.0 / fan.in));
  throw std::invalid_argument("csrun has no initializer '" + name + "'");
}

// The value every element of a constant initializer has; nothing for a random one.
std::optional<double> constant_value(const Initializer& init) {
  if (init.name == "zeros") return 0.0;
  if (init.name == "ones") return 1.0;
  if (init.name == "constant") return init.value;
  return std::nullopt;
}

double number_or(const config::Node& spec, const char* key, double fallback) {
  const config::Node* value = spec.find(key);
  return value && value->is_number() ? value->as_number() : fallback;
}

}  // namespace

InitialValues::InitialValues(const Initializer& init, const graph::Shape& shape, std::uint64_t seed,
                             std::string_view name)
    : constant_(constant_value(init)) {
  if (!constant_) fill_ = fill_rule(init, Sampler(seed, name), fans(shape));
}

void InitialValues::fill(std::span<float> out, std::int64_t first) const {
  if (constant_) {
    std::fill(out.begin(), out.end(), static_cast<float>(*constant_));
    return;
  }
  fill_(out, first);
}

std::vector<float> initial_values(const Initializer& init, const graph::Shape& shape,
                                  std::uint64_t seed, std::string_view name) {
  std::vector<float> values(static_cast<std::size_t>(graph::element_count(shape)));
  InitialValues(init, shape, seed, name).fill(values, 0);
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

Initializer torch_default_initializer(double fan_in) {
  Initializer init;
  init.name = "uniform";
  init.b = 1.0 / std::sqrt(fan_in);
  init.a = -init.b;
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
