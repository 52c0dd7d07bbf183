#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor.hpp"

namespace csrun::nn {

using graph::Tensor;

// How rotary positions stretch beyond the length a model was trained on (the Model Zoo's
// pos_scaling_type with pos_scaling_factor and pos_scaling_extra_args).
struct PositionScaling {
  enum class Kind { none, linear, llama3, yarn, longrope };
  Kind kind = Kind::none;
  double factor = 1.0;
  double original_max_positions = 0.0;  // llama3, yarn, longrope
  double low_freq_factor = 1.0;         // llama3
  double high_freq_factor = 4.0;        // llama3
  double extrapolation_factor = 1.0;    // yarn
  double beta_fast = 32.0;              // yarn
  double beta_slow = 1.0;               // yarn
  double mscale_a = 0.1;                // yarn
  double mscale_b = 1.0;                // yarn
  std::vector<double> long_factor;      // longrope: one per rotated pair
  std::vector<double> short_factor;     // longrope
  double long_mscale = 0.0;             // longrope: 0 = derived from the factor
  double short_mscale = 0.0;            // longrope
  double attention_factor = 0.0;        // longrope: 0 = derived from the factor
};

// Rotary position embeddings (RoFormer) as the Model Zoo's RotaryPositionEmbeddingHelper
// computes them for GPT-J, GPT-NeoX and Llama: the first rotary_dim features of each head rotate
// in interleaved pairs (2i, 2i+1) by the angle t * inverse_frequency[i] at position t = 0, 1, ...
struct RotarySpec {
  std::int64_t rotary_dim = 0;
  double theta = 10000.0;          // rope_theta
  std::int64_t max_positions = 0;  // max_position_embeddings (longrope picks its factors by it)
  PositionScaling scaling;
};

// The angles' ingredients: angle_i(t) = (t / position_divisor) * inverse[i]; sin and cos are
// multiplied by magnitude (YaRN's and LongRoPE's attention scaling).
struct RotaryFrequencies {
  std::vector<double> inverse;  // rotary_dim / 2 of them
  double position_divisor = 1.0;
  double magnitude = 1.0;
};
RotaryFrequencies rotary_frequencies(const RotarySpec& spec);

// x [..., T, D] with the rotation applied at positions 0..T-1; features rotary_dim..D-1 pass
// through.
Tensor rotary_embedding(const Tensor& x, const RotarySpec& spec);

}  // namespace csrun::nn
