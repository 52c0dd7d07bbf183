#pragma once

#include <stdexcept>
#include <vector>

#include "op.hpp"
#include "types.hpp"

namespace csrun::graph {

// The type a node of `op` produces from operands of `inputs` types; throws
// std::invalid_argument saying what does not fit. Leaves (input, variable) carry their own type.
TensorType infer_type(OpKind op, const std::vector<TensorType>& inputs, const Attributes& attrs);

}  // namespace csrun::graph
