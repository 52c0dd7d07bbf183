#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace csrun::test {

// The deterministic values scripts/golden/golden_common.py makes, bit for bit: a uniform number
// in [0, 1) for (stream, index).
double golden_value(std::string_view stream, std::uint64_t index);

// The starting values the golden curves give the parameter `name` (as float32 would hold them).
std::vector<double> golden_initial_weight(const std::string& name, std::size_t count);

}  // namespace csrun::test
