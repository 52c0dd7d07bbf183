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

// A key of an earlier release, accepted with a warning.
config::Field earlier_release_field(const std::string& name, const std::string& release,
                                    const std::string& instead = {});

}  // namespace csrun::models
