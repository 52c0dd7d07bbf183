#pragma once

#include "value_type.hpp"

namespace csrun::config {

// Value types that recur across params sections.
ValueType non_negative_number();
ValueType positive_number();
ValueType unit_interval();          // [0, 1]
ValueType positive_integer();       // ≥ 1
ValueType non_negative_integer();   // ≥ 0
ValueType beta_pair();              // [beta1, beta2], each in [0, 1)
ValueType string_or_strings();      // 'a' or ['a', 'b']
ValueType micro_batch_size_type();  // an integer ≥ 1, 'auto', 'explore' or null
ValueType memory_gibibytes();       // a number ≥ 0, or -1: the cluster's default

}  // namespace csrun::config
