#pragma once

#include <functional>

#include "compiler/plan.hpp"
#include "graph/reference_evaluator.hpp"
#include "runtime/executable.hpp"

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

}  // namespace csrun::test
