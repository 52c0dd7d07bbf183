#pragma once

#include <string>

#include "compiler/plan.hpp"

namespace csrun::wafer {

// A picture of the plan on the wafer, as SVG: the PE grid with each kernel's region coloured by
// its layer (pipelined), or the whole wafer taken by one layer at a time (weight streaming), and
// beside it each layer's time. Hovering a shape names its kernel or layer.
std::string placement_svg(const compiler::Plan& plan);

}  // namespace csrun::wafer
