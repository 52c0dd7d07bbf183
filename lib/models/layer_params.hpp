#pragma once

#include <string>
#include <vector>

#include "config/schema.hpp"

namespace csrun::models {

// Value types of layer hyper-parameters that several models share.
config::ValueType initializer_type();  // 'zeros' or {name: truncated_normal, mean, std, a, b}
config::ValueType activation_type();   // gelu, relu, swiglu, ...
config::ValueType dropout_type();      // [0, 1)
config::ValueType norm_type();         // layernorm, rmsnorm, ...
config::ValueType position_embedding_type();

bool is_gated_activation(const std::string& name);  // swiglu, geglu, reglu: two input matrices

// Parameters of one normalization layer over `width` features.
std::int64_t norm_parameters(const std::string& norm, std::int64_t width);

// A key of an earlier release, accepted with a warning.
config::Field earlier_release_field(const std::string& name, const std::string& release,
                                    const std::string& instead = {});
// A precision key written in the model section of a trainer-format file.
config::Field precision_key_field(const std::string& name, const std::string& precision_key);

}  // namespace csrun::models
