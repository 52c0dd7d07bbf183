#include "initializers.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>

#include "box_muller.hpp"
#include "graph/counter_rng.hpp"
#include "pair_uniforms.hpp"

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

  // Standard normal values by the Box-Muller transform of two keyed uniforms: elements 2j and
  // 2j + 1 share pair j's, one taking the cosine, the other the sine, so a pair of values costs
  // one logarithm. These are pairs [first_pair, first_pair + normals.size() / 2) of draw
  // `draw`, one after the other.
  void normal_pairs(std::int64_t first_pair, std::int64_t draw, std::span<double> normals) const {
    transform_pairs(normals.size() / 2, draw, normals, [first_pair](std::size_t i) {
      return first_pair + static_cast<std::int64_t>(i);
    });
  }

  // The normal value of draw `draw` of each element of `indices`.
  void normals_at(std::span<const std::int64_t> indices, std::int64_t draw,
                  std::span<double> normals) const {
    std::array<double, 2 * kBlock> pairs;
    for (std::size_t done = 0; done < indices.size(); done += kBlock) {
      std::span<const std::int64_t> block =
          indices.subspan(done, std::min(kBlock, indices.size() - done));
      transform_pairs(block.size(), draw, pairs, [block](std::size_t i) { return block[i] / 2; });
      for (std::size_t i = 0; i < block.size(); ++i)
        normals[done + i] = pairs[2 * i + static_cast<std::size_t>(block[i] % 2)];
    }
  }

 private:
  static constexpr std::size_t kBlock = 256;

  // Pairs pair_at(i) for i in [0, count) into normals[2i] and normals[2i + 1]: the uniforms a
  // block at a time, then the transform, each in a vectorized loop.
  template <class PairAt>
  void transform_pairs(std::size_t count, std::int64_t draw, std::span<double> normals,
                       PairAt pair_at) const {
    std::array<std::int64_t, kBlock> pairs;
    std::array<double, kBlock> u1;
    std::array<double, kBlock> u2;
    for (std::size_t done = 0; done < count; done += kBlock) {
      std::size_t block = std::min(kBlock, count - done);
      for (std::size_t i = 0; i < block; ++i)
        pairs[i] = pair_at(done + i);
      pair_uniforms(key_, std::span(pairs).first(block), draw, u1, u2);
      box_muller(std::span(u1).first(block), std::span(u2).first(block),
                 normals.subspan(2 * done, 2 * block));
    }
  }

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

// Calls body(index, normals) for consecutive runs of [first, end): normals[i] is element
// index + i's normal value of draw 0. The runs are blocks of pairs, so that the body's loop over
// them vectorizes.
template <class Body>
void for_each_normal_run(const Sampler& sampler, std::int64_t first, std::int64_t end,
                         Body&& body) {
  constexpr std::int64_t kPairs = 256;
  std::array<double, 2 * kPairs> normals;
  for (std::int64_t pair = first / 2; 2 * pair < end; pair += kPairs) {
    std::int64_t pairs = std::min(kPairs, (end + 1) / 2 - pair);
    sampler.normal_pairs(pair, 0, std::span(normals).first(static_cast<std::size_t>(2 * pairs)));
    std::int64_t run_first = std::max(2 * pair, first);
    std::int64_t run_end = std::min(2 * (pair + pairs), end);
    body(run_first,
         std::span<const double>(normals).subspan(static_cast<std::size_t>(run_first - 2 * pair),
                                                  static_cast<std::size_t>(run_end - run_first)));
  }
}

void write_scaled(std::span<const double> normals, double mean, double std, float* out) {
  for (std::size_t i = 0; i < normals.size(); ++i)
    out[i] = static_cast<float>(mean + std * normals[i]);
}

FillRule scaled_normal_rule(const Sampler& sampler, double std, double mean = 0.0) {
  return [sampler, mean, std](std::span<float> out, std::int64_t first) {
    for_each_normal_run(sampler, first, first + static_cast<std::int64_t>(out.size()),
                        [&](std::int64_t index, std::span<const double> normals) {
                          write_scaled(normals, mean, std, out.data() + (index - first));
                        });
  };
}

// Values outside [a, b] are redrawn (draws 1, 2, ... of the element), as
// torch.nn.init.trunc_normal_ bounds them; after 64 draws outside, the mean clamped to [a, b].
// The rare redraws are made together, a block of pairs at a time.
FillRule truncated_normal_rule(const Sampler& sampler, const Initializer& init) {
  return [sampler, init](std::span<float> out, std::int64_t first) {
    std::vector<std::int64_t> outside;
    auto keep = [&](std::int64_t index, double normal) {
      double value = init.mean + init.std * normal;
      if (!(value >= init.a && value <= init.b)) return false;
      out[static_cast<std::size_t>(index - first)] = static_cast<float>(value);
      return true;
    };
    // Every value is written in a loop that vectorizes, then the few outside [a, b] are listed.
    for_each_normal_run(sampler, first, first + static_cast<std::int64_t>(out.size()),
                        [&](std::int64_t index, std::span<const double> normals) {
                          write_scaled(normals, init.mean, init.std, out.data() + (index - first));
                          for (std::size_t i = 0; i < normals.size(); ++i) {
                            double value = init.mean + init.std * normals[i];
                            if (!(value >= init.a && value <= init.b))
                              outside.push_back(index + static_cast<std::int64_t>(i));
                          }
                        });
    std::vector<double> normals;
    for (std::int64_t draw = 1; draw < 64 && !outside.empty(); ++draw) {
      normals.resize(outside.size());
      sampler.normals_at(outside, draw, normals);
      std::size_t still = 0;
      for (std::size_t i = 0; i < outside.size(); ++i)
        if (!keep(outside[i], normals[i])) outside[still++] = outside[i];
      outside.resize(still);
    }
    for (std::int64_t index : outside)
      out[static_cast<std::size_t>(index - first)] =
          static_cast<float>(std::clamp(init.mean, init.a, init.b));
  };
}

FillRule uniform_rule(const Sampler& sampler, double low, double high) {
  return filling(sampler, [low, high](const Sampler& draw, std::int64_t index) {
    return low + (high - low) * draw.uniform(index, 0);
  });
}

double fan_of(const Initializer& init, Fans fan) {
  if (init.fan_mode == "fan_out") return fan.out;
  if (init.fan_mode == "fan_avg") return (fan.in + fan.out) / 2.0;
  return fan.in;
}

// The Model Zoo's variance_scaling_ (after TensorFlow's VarianceScaling): variance
// scale / max(1, fan); its truncated normal is torch.nn.init.trunc_normal_ with the std
// sqrt(variance) / 0.8796 (a standard normal's cut at +-2) and the bounds a, b as given (torch's
// defaults, -2 and 2, are absolute values).
FillRule variance_scaling_rule(const Sampler& sampler, const Initializer& init, Fans fan) {
  double variance = init.scale / std::max(1.0, fan_of(init, fan));
  if (init.distribution == "normal") return scaled_normal_rule(sampler, std::sqrt(variance));
  if (init.distribution == "uniform") {
    double bound = std::sqrt(3.0 * variance);
    return uniform_rule(sampler, -bound, bound);
  }
  Initializer truncated = init;
  truncated.mean = 0.0;
  truncated.std = std::sqrt(variance) / 0.87962566103423978;
  return truncated_normal_rule(sampler, truncated);
}

// torch.nn.init.eye_: ones on the diagonal of a 2-D [out, in] weight.
FillRule eye_rule(const graph::Shape& shape) {
  std::int64_t columns = shape.at(1);
  return [columns](std::span<float> out, std::int64_t first) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::int64_t index = first + static_cast<std::int64_t>(i);
      out[i] = index / columns == index % columns ? 1.0f : 0.0f;
    }
  };
}

FillRule fill_rule(const Initializer& init, const Sampler& sampler, const graph::Shape& shape) {
  const std::string& name = init.name;
  Fans fan = fans(shape);
  if (name == "eye") return eye_rule(shape);
  if (name == "normal") return scaled_normal_rule(sampler, init.std, init.mean);
  if (name == "uniform") return uniform_rule(sampler, init.a, init.b);
  if (name == "truncated_normal") return truncated_normal_rule(sampler, init);
  if (name == "variance_scaling" || name == "lecun_normal" || name == "lecun_uniform")
    return variance_scaling_rule(sampler, init, fan);
  if (name == "xavier_uniform" || name == "glorot_uniform") {
    double bound = init.gain * std::sqrt(6.0 / (fan.in + fan.out));
    return uniform_rule(sampler, -bound, bound);
  }
  if (name == "xavier_normal" || name == "glorot_normal")
    return scaled_normal_rule(sampler, init.gain * std::sqrt(2.0 / (fan.in + fan.out)));
  if (name == "kaiming_uniform" || name == "he_uniform") {
    double bound = init.gain * std::sqrt(3.0 / fan_of(init, fan));
    return uniform_rule(sampler, -bound, bound);
  }
  if (name == "kaiming_normal" || name == "he_normal")
    return scaled_normal_rule(sampler, init.gain / std::sqrt(fan_of(init, fan)));
  throw std::invalid_argument("csrun has no initializer '" + name + "'");
}

// torch.nn.init.calculate_gain, for kaiming's nonlinearity (`slope`: leaky_relu's).
double nonlinearity_gain(const std::string& nonlinearity, double slope) {
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + slope * slope));
  if (nonlinearity == "selu") return 0.75;
  return 1.0;  // linear, conv*, sigmoid
}

// A number of an initializer's params, given as a number or, as the Model Zoo's
// _get_spec_value allows, as a nonlinearity's name standing for its gain.
double spec_number(const config::Node& params, std::string_view key, double fallback) {
  const config::Node* value = params.find(key);
  if (value && value->is_string()) return nonlinearity_gain(value->as_string(), 0.01);
  return params.number_or(key, fallback);
}

// The value every element of a constant initializer has; nothing for a random one.
std::optional<double> constant_value(const Initializer& init) {
  if (init.name == "zeros") return 0.0;
  if (init.name == "ones") return 1.0;
  if (init.name == "constant") return init.value;
  return std::nullopt;
}

}  // namespace

InitialValues::InitialValues(const Initializer& init, const graph::Shape& shape, std::uint64_t seed,
                             std::string_view name)
    : constant_(constant_value(init)) {
  check_initializer_shape(init, shape, name);
  if (!constant_) fill_ = fill_rule(init, Sampler(seed, name), shape);
}

void check_initializer_shape(const Initializer& init, const graph::Shape& shape,
                             std::string_view name) {
  if (init.name != "eye" || shape.size() == 2) return;
  throw std::invalid_argument(
      "the eye initializer fills only 2-D weights (torch.nn.init.eye_), "
      "and " +
      std::string(name) + " has " + std::to_string(shape.size()) + " dimensions");
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

// The Model Zoo's create_initializer: each initializer's parameters and their defaults.
Initializer initializer_from(const config::Node* spec, Initializer fallback) {
  if (!spec || spec->is_null()) return fallback;
  static const config::Node kNoParameters = config::Node::make_map();
  const config::Node& p = spec->is_map() ? *spec : kNoParameters;
  Initializer init;
  const config::Node* name = spec->is_map() ? spec->find("name") : spec;
  init.name = name && name->is_string() ? name->as_string() : fallback.name;
  if (init.name == "normal" || init.name == "truncated_normal") {
    init.mean = spec_number(p, "mean", 0.0);
    init.std = spec_number(p, "std", 0.05);
    init.a = spec_number(p, "a", -2.0 * init.std);
    init.b = spec_number(p, "b", 2.0 * init.std);
  } else if (init.name == "uniform") {
    init.a = spec_number(p, "a", -0.05);
    init.b = spec_number(p, "b", 0.05);
  } else if (init.name.starts_with("kaiming") || init.name.starts_with("he_")) {
    init.fan_mode = p.text_or("mode", "fan_in");
    init.gain =
        nonlinearity_gain(p.text_or("nonlinearity", "leaky_relu"), spec_number(p, "a", 0.0));
  } else if (init.name == "variance_scaling" || init.name.starts_with("lecun")) {
    init.scale = spec_number(p, "scale", 1.0);
    init.fan_mode = p.text_or("mode", "fan_in");
    init.distribution = init.name == "lecun_uniform" ? "uniform"
                        : init.name == "lecun_normal"
                            ? "truncated_normal"
                            : p.text_or("distribution", "truncated_normal");
    init.a = spec_number(p, "a", -2.0);
    init.b = spec_number(p, "b", 2.0);
  }
  if (init.name.starts_with("xavier") || init.name.starts_with("glorot"))
    init.gain = spec_number(p, "gain", 1.0);
  init.value = spec_number(p, "val", spec_number(p, "value", 0.0));
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
