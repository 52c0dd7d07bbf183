#pragma once

#include <string>
#include <vector>

#include "config/schema.hpp"

namespace csrun::models {

// Value types of layer hyper-parameters that several models share.
config::ValueType initializer_type();  // 'zeros' or {name: truncated_normal, mean, std, a, b}
config::ValueType activation_type();   // gelu, relu, swiglu, ...
config::ValueType dropout_type();      // [0, 1)
// layernorm, rmsnorm, ... and the spellings of earlier releases a network also accepted.
config::ValueType norm_type(const std::vector<std::string>& earlier_spellings = {});
config::ValueType position_embedding_type();

bool is_gated_activation(const std::string& name);  // swiglu, geglu, reglu: two input matrices

// Parameters of one normalization layer over `width` features.
std::int64_t norm_parameters(const std::string& norm, std::int64_t width);

// The muP (maximal update parametrization) keys the encoder and decoder networks share:
// output_logits_alpha, mup_base_hidden_size, mup_base_filter_size, embeddings_scale,
// scale_qk_dot_by_d, attention_logits_alpha.
std::vector<config::Field> mup_fields();

// Position encodings beyond learned and fixed ones, as the decoder and encoder networks of 2.2 on
// share them: rotary (rotary_dim, rope_theta, fold_rope_consts, pad_rope), their scaling
// (pos_scaling_factor, pos_scaling_type, pos_scaling_extra_args), ALiBi (alibi_trainable_slopes)
// and relative buckets (num_relative_attention_buckets).
std::vector<config::Field> position_encoding_fields();

// The Model Zoo's text-generation keys (2.3 on), which training and evaluation never read.
std::vector<config::Field> generation_fields();

// Keys the Model Zoo fills in itself (dtype from the precision section, ...), written by some
// configs, read by no network's math: accepted with a warning naming what decides instead.
config::Field derived_field(const std::string& name, const std::string& decided_by);

// A key of an earlier release, accepted with a warning.
config::Field earlier_release_field(const std::string& name, const std::string& release,
                                    const std::string& instead = {});

}  // namespace csrun::models
