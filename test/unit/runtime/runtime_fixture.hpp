#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/plan.hpp"
#include "graph/reference_evaluator.hpp"
#include "runtime/executable.hpp"
#include "runtime/tensor_ref.hpp"

namespace csrun::test {

// A traced step compiled as csrun compile would: f32 (a CPU plan), or mixed precision with
// `half` at `level` (a CSX plan, without a wafer mapping).
compiler::Plan compiled_plan(const graph::Graph& traced, std::int64_t batch_size);
compiler::Plan compiled_plan(const graph::Graph& traced, std::int64_t batch_size, graph::DType half,
                             int level);

// Runs `body` with this thread, and so the executables it makes, on its first core only.
void on_one_core(const std::function<void()>& body);

// Writes every fed value (inputs and variables by name) into the executable.
void feed(runtime::Executable& executable, const graph::Feeds& feeds);

// Float patterns that exercise every rounding case of a 16-bit format: every sign, exponent and
// upper mantissa bits (all 2^16 upper halves) with lower halves at and around the rounding ties.
std::vector<float> rounding_patterns();

// `values` seen as a tensor of `dtype` and `shape`, for calling a kernel directly.
template <class T, class Allocator>
runtime::TensorRef tensor_ref(std::vector<T, Allocator>& values, graph::DType dtype,
                              std::vector<std::int64_t> shape) {
  runtime::TensorRef t;
  t.data = reinterpret_cast<std::byte*>(values.data());
  t.dtype = dtype;
  t.rank = static_cast<int>(shape.size());
  t.count = 1;
  for (std::size_t axis = 0; axis < shape.size(); ++axis) {
    t.shape[axis] = shape[axis];
    t.count *= shape[axis];
  }
  return t;
}

}  // namespace csrun::test
