#pragma once

// What each elementwise op of ops.def computes on one element, written once: the reference
// evaluator uses it in double precision and the runtime's kernels in their element type, so the
// two cannot disagree on a value (NaN, infinities, signed zeros). ops.def states the rules.

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "op.hpp"

namespace csrun::graph {

template <class T>
T gelu_value(T x, bool approximate) {
  if (!approximate) return T(0.5) * x * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>));
  T inner = std::sqrt(T(2) / std::numbers::pi_v<T>) * (x + T(0.044715) * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(inner));
}

// relu with NaN propagating and relu(-0) = +0, in a form that compiles to vector blends.
template <class T>
T relu_value(T x) {
  return x <= T(0) ? T(0) : x;
}

// maximum and minimum propagate NaN from either operand (std::max returns its first operand
// when either is NaN).
template <class T>
T maximum_value(T a, T b) {
  return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b);
}

template <class T>
T minimum_value(T a, T b) {
  return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b);
}

// A cast returns its operand: the caller rounds every result to its dtype when it stores it.
template <class T>
T unary_value(OpKind op, T x, bool approximate) {
  switch (op) {
    case OpKind::logical_not:
      return x == T(0) ? T(1) : T(0);
    case OpKind::neg:
      return -x;
    case OpKind::abs:
      return std::fabs(x);
    case OpKind::exp:
      return std::exp(x);
    case OpKind::log:
      return std::log(x);
    case OpKind::sqrt:
      return std::sqrt(x);
    case OpKind::rsqrt:
      return T(1) / std::sqrt(x);
    case OpKind::sin:
      return std::sin(x);
    case OpKind::cos:
      return std::cos(x);
    case OpKind::tanh:
      return std::tanh(x);
    case OpKind::sigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case OpKind::relu:
      return relu_value(x);
    case OpKind::erf:
      return std::erf(x);
    case OpKind::gelu:
      return gelu_value(x, approximate);
    case OpKind::is_finite:
      return std::isfinite(x) ? T(1) : T(0);
    case OpKind::cast:
      return x;
    default:
      throw std::logic_error("not a unary op");
  }
}

// `integer`: the operands are integers (division truncates toward zero).
template <class T>
T binary_value(OpKind op, T a, T b, bool integer) {
  switch (op) {
    case OpKind::add:
      return a + b;
    case OpKind::sub:
      return a - b;
    case OpKind::mul:
      return a * b;
    case OpKind::div:
      return integer ? std::trunc(a / b) : a / b;
    case OpKind::pow:
      return std::pow(a, b);
    case OpKind::maximum:
      return maximum_value(a, b);
    case OpKind::minimum:
      return minimum_value(a, b);
    case OpKind::less:
      return a < b;
    case OpKind::less_equal:
      return a <= b;
    case OpKind::greater:
      return a > b;
    case OpKind::greater_equal:
      return a >= b;
    case OpKind::equal:
      return a == b;
    case OpKind::not_equal:
      return a != b;
    case OpKind::logical_and:
      return a != T(0) && b != T(0);
    case OpKind::logical_or:
      return a != T(0) || b != T(0);
    default:
      throw std::logic_error("not a binary op");
  }
}

}  // namespace csrun::graph
