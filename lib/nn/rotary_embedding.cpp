#include "rotary_embedding.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace csrun::nn {

namespace {

using Kind = PositionScaling::Kind;

// Llama 3.1: long wavelengths slow down by the factor, short ones stay, the band between blends.
void scale_llama3(std::vector<double>& inverse, const PositionScaling& s) {
  double low_wavelength = s.original_max_positions / s.low_freq_factor;
  double high_wavelength = s.original_max_positions / s.high_freq_factor;
  for (double& frequency : inverse) {
    double wavelength = 2.0 * std::numbers::pi / frequency;
    if (wavelength < high_wavelength) continue;
    if (wavelength > low_wavelength) {
      frequency /= s.factor;
      continue;
    }
    double smooth = (s.original_max_positions / wavelength - s.low_freq_factor) /
                    (s.high_freq_factor - s.low_freq_factor);
    frequency = (1.0 - smooth) * frequency / s.factor + smooth * frequency;
  }
}

// YaRN: pairs that complete fewer than beta_slow turns over the original length interpolate by
// the factor, those beyond beta_fast turns keep their frequency, a linear ramp between.
double scale_yarn(std::vector<double>& inverse, const PositionScaling& s, double rotary_dim,
                  double theta) {
  auto correction_dim = [&](double rotations) {
    return rotary_dim * std::log(s.original_max_positions / (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(theta));
  };
  double low = std::max(std::floor(correction_dim(s.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(s.beta_slow)), rotary_dim - 1.0);
  if (low == high) high += 0.001;
  for (std::size_t i = 0; i < inverse.size(); ++i) {
    double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    double keep = (1.0 - ramp) * s.extrapolation_factor;
    inverse[i] = inverse[i] / s.factor * (1.0 - keep) + inverse[i] * keep;
  }
  return s.factor <= 1.0 ? 1.0 : s.mscale_a * std::log(s.factor) + s.mscale_b;
}

// LongRoPE: a factor per pair, the long ones when the model is longer than its original length.
double scale_longrope(std::vector<double>& inverse, const PositionScaling& s,
                      std::int64_t max_positions) {
  bool longer = static_cast<double>(max_positions) > s.original_max_positions;
  const std::vector<double>& factors = longer ? s.long_factor : s.short_factor;
  if (factors.size() != inverse.size()) {
    throw std::invalid_argument("longrope needs " + std::to_string(inverse.size()) +
                                " factors (one per rotated pair), found " +
                                std::to_string(factors.size()));
  }
  for (std::size_t i = 0; i < inverse.size(); ++i)
    inverse[i] /= factors[i];
  double given = longer ? s.long_mscale : s.short_mscale;
  if (given > 0.0) return given;
  if (s.attention_factor > 0.0) return s.attention_factor;
  double factor = static_cast<double>(max_positions) / s.original_max_positions;
  return factor <= 1.0 ? 1.0
                       : std::sqrt(1.0 + std::log(factor) / std::log(s.original_max_positions));
}

}  // namespace

RotaryFrequencies rotary_frequencies(const RotarySpec& spec) {
  if (spec.rotary_dim <= 0 || spec.rotary_dim % 2 != 0)
    throw std::invalid_argument("rotary_dim must be a positive even number");
  RotaryFrequencies result;
  auto dim = static_cast<double>(spec.rotary_dim);
  for (std::int64_t i = 0; i < spec.rotary_dim / 2; ++i)
    result.inverse.push_back(std::pow(spec.theta, -2.0 * static_cast<double>(i) / dim));
  const PositionScaling& s = spec.scaling;
  switch (s.kind) {
    case Kind::none:
      break;
    case Kind::linear:
      result.position_divisor = s.factor;
      break;
    case Kind::llama3:
      scale_llama3(result.inverse, s);
      break;
    case Kind::yarn:
      result.magnitude = scale_yarn(result.inverse, s, dim, spec.theta);
      break;
    case Kind::longrope:
      result.magnitude = scale_longrope(result.inverse, s, spec.max_positions);
      break;
  }
  return result;
}

Tensor rotary_embedding(const Tensor& x, const RotarySpec& spec) {
  std::int64_t length = x.dim(-2);
  std::int64_t width = x.dim(-1);
  std::int64_t rotated_width = spec.rotary_dim;
  if (rotated_width > width)
    throw std::invalid_argument("rotary_dim exceeds the head size " + std::to_string(width));
  RotaryFrequencies frequencies = rotary_frequencies(spec);
  // Each pair's frequency twice, as the pair's two features use it.
  std::vector<double> per_feature;
  for (double frequency : frequencies.inverse) {
    per_feature.push_back(frequency);
    per_feature.push_back(frequency);
  }
  graph::Graph& graph = x.graph();
  Tensor positions = graph::cast(graph::iota(graph, {length, rotated_width}, 0), graph::DType::f32);
  if (frequencies.position_divisor != 1.0) positions = positions / frequencies.position_divisor;
  Tensor angles = positions * graph::constant_values(graph, per_feature, {rotated_width});
  Tensor cosines = graph::cos(angles);
  Tensor sines = graph::sin(angles);
  if (frequencies.magnitude != 1.0) {
    cosines = cosines * frequencies.magnitude;
    sines = sines * frequencies.magnitude;
  }
  Tensor rotating = rotated_width == width ? x : graph::slice(x, -1, 0, rotated_width);
  // (x[2i], x[2i+1]) -> (-x[2i+1], x[2i]): GPT-J's rotate_every_two.
  graph::Shape shape = rotating.shape();
  graph::Shape pairs = shape;
  pairs.back() = rotated_width / 2;
  pairs.push_back(2);
  Tensor paired = graph::reshape(rotating, pairs);
  Tensor turned = graph::reshape(
      graph::concat({-graph::slice(paired, -1, 1, 2), graph::slice(paired, -1, 0, 1)}, -1), shape);
  Tensor turned_part = turned * sines;
  Tensor rotated = rotating * cosines + turned_part;
  if (rotated_width == width) return rotated;
  return graph::concat({rotated, graph::slice(x, -1, rotated_width, width)}, -1);
}

}  // namespace csrun::nn
