#pragma once

#include "value_type.hpp"

namespace csrun::config {

// Value types that recur across params sections.
ValueType non_negative_number();
ValueType positive_number();
ValueType unit_interval();         // [0, 1]
ValueType positive_integer();      // ≥ 1
ValueType non_negative_integer();  // ≥ 0
// Sizes of a model: bounded so that every parameter count and tensor size computed from them
// fits 64-bit integers (a typo such as 2^31 is an error at its key, not a wrapped count).
inline constexpr std::int64_t kMaxDimension = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxLayers = std::int64_t{1} << 12;
ValueType dimension();    // 1 to kMaxDimension: widths, vocabularies, positions, heads, classes
ValueType layer_count();  // 1 to kMaxLayers
ValueType beta_pair();    // [beta1, beta2], each in [0, 1)
ValueType string_or_strings();      // 'a' or ['a', 'b']
ValueType micro_batch_size_type();  // an integer ≥ 1, 'auto', 'explore' or null
ValueType memory_gibibytes();       // a number ≥ 0, or -1: the cluster's default

}  // namespace csrun::config
