#include "number_formats.hpp"

#include <cmath>
#include <stdexcept>

namespace csrun::graph {

FloatFormat format_of(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return {5, 10, 15};
    case DType::bf16:
      return {8, 7, 127};
    case DType::cb16:
      return {6, 9, 31};
    case DType::f32:
      return {8, 23, 127};
    default:
      throw std::invalid_argument("not a floating-point dtype");
  }
}

double round_to_format(double value, FloatFormat format) {
  double x = static_cast<float>(value);
  if (!std::isfinite(x) || x == 0.0) return x;
  int max_exponent = (1 << format.exponent_bits) - 2 - format.bias;
  int min_exponent = 1 - format.bias;
  // The spacing of representable values around x: normal numbers have mantissa_bits fraction
  // bits after their leading one; subnormals share the spacing of the smallest normals.
  int exponent = std::max(std::ilogb(x), min_exponent);
  double quantum = std::ldexp(1.0, exponent - format.mantissa_bits);
  double rounded = std::nearbyint(x / quantum) * quantum;  // the default mode: ties to even
  double limit = std::ldexp(2.0 - std::ldexp(1.0, -format.mantissa_bits), max_exponent);
  if (std::fabs(rounded) > limit) return std::copysign(INFINITY, x);
  return rounded;
}

}  // namespace csrun::graph
