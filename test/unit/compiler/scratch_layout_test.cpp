// The host memory a step takes beside its arena, laid out by the compiler.

#include <catch2/catch.hpp>

#include "compiler/compile.hpp"
#include "compiler/scratch_layout.hpp"
#include "graph/tensor.hpp"

using namespace csrun;
using namespace csrun::graph;

namespace {

compiler::Plan compiled(Graph graph) {
  return compiler::build_plan(compiler::compile_step(std::move(graph), {}), {}, {});
}

// x W^T (+ b) over bfloat16 operands, the product in `result`.
Graph bf16_linear(DType result, bool bias) {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{64, 32}, DType::bf16}));
  Tensor w(graph, graph.add_input("w", {{48, 32}, DType::bf16}));
  Attributes attrs;
  attrs.dtype = result;
  Tensor y(graph, graph.add(OpKind::matmul, {x.id(), swap_last_axes(w).id()}, std::move(attrs)));
  if (bias) y = y + Tensor(graph, graph.add_input("b", {{48}, DType::f32}));
  graph.add_output("y", y.id());
  return graph;
}

const compiler::HostStep& gemm_of(const compiler::Plan& plan) {
  for (const compiler::HostStep& step : plan.host_steps) {
    if (step.kind == compiler::HostStepKind::gemm) return step;
  }
  FAIL("the plan has no GEMM");
  return plan.host_steps.front();
}

}  // namespace

TEST_CASE("a GEMM's folded transpose and its product before the bias take no scratch") {
  compiler::Plan plan = compiled(bf16_linear(DType::f32, true));
  const compiler::HostStep& gemm = gemm_of(plan);
  REQUIRE(gemm.transposed_b);
  REQUIRE(gemm.result != gemm.nodes.front());
  std::vector<bool> without_place = compiler::values_without_place(plan);
  CHECK(without_place.at(static_cast<std::size_t>(gemm.nodes.front())));
  CHECK(without_place.at(static_cast<std::size_t>(gemm.folded.front())) ==
        (gemm.folded.front() != gemm.result));
  CHECK_FALSE(without_place.at(static_cast<std::size_t>(gemm.result)));
  const compiler::ScratchLayout& layout = plan.scratch;
  CHECK(layout.kernel_values.empty());
  CHECK(layout.kernel_value_bytes == 0);
  // Both bfloat16 operands widened to f32; the f32 result needs no copy.
  CHECK(layout.widening_bytes == 4 * (64 * 32 + 48 * 32));
  CHECK(compiler::step_host_bytes(plan, false, 4) ==
        plan.memory.peak_bytes + layout.bytes(false, 4));
  // Multiplied in hardware, nothing is widened.
  CHECK(layout.hardware_bf16_widening_bytes == 0);
  CHECK(compiler::step_host_bytes(plan, true, 4) == plan.memory.peak_bytes + layout.region_bytes());
}

TEST_CASE("a 16-bit product's work space holds its widened operands and its f32 result") {
  compiler::Plan plan = compiled(bf16_linear(DType::bf16, false));
  CHECK(plan.scratch.widening_bytes == 4 * (64 * 32 + 48 * 32 + 64 * 48));
  // Multiplied in hardware, the bfloat16 result is written directly; operands of another 16-bit
  // type are widened as anywhere.
  CHECK(plan.scratch.hardware_bf16_widening_bytes == 0);
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{64, 32}, DType::f16}));
  Tensor w(graph, graph.add_input("w", {{32, 48}, DType::f16}));
  graph.add_output("y", matmul(x, w).id());
  compiler::ScratchLayout f16 = compiled(std::move(graph)).scratch;
  CHECK(f16.hardware_bf16_widening_bytes == f16.widening_bytes);
  CHECK(f16.widening_bytes == 4 * (64 * 32 + 32 * 48 + 64 * 48));
}

TEST_CASE("f32 products need no work space, and in-place updates no snapshot") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  graph.add_output("y", matmul(x, w).id());
  graph.set_update("w", (w * 0.5).id());
  compiler::ScratchLayout layout = compiled(std::move(graph)).scratch;
  CHECK(layout.widening_bytes == 0);
  CHECK(layout.snapshot_bytes == 0);
}

TEST_CASE("a value inside a kernel is placed in the scratch, named with its kernel") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{64, 32}, DType::f32}));
  Tensor w(graph, graph.add_input("w", {{32, 48}, DType::bf16}));
  Attributes attrs;
  attrs.dtype = DType::f32;
  Tensor x16 = cast(x, DType::bf16);
  graph.add_output("y", graph.add(OpKind::matmul, {x16.id(), w.id()}, std::move(attrs)));
  compiler::Plan plan = compiled(std::move(graph));
  REQUIRE(plan.scratch.kernel_values.size() == 1);
  const compiler::ScratchLayout::Place& place = plan.scratch.kernel_values.front();
  CHECK(place.node == x16.id());
  CHECK(place.offset == 0);
  const compiler::Kernel& kernel = plan.kernels.at(static_cast<std::size_t>(place.kernel));
  CHECK(std::find(kernel.nodes.begin(), kernel.nodes.end(), x16.id()) != kernel.nodes.end());
  std::vector<std::int64_t> bytes = compiler::kernel_scratch_bytes(plan);
  CHECK(bytes.at(static_cast<std::size_t>(place.kernel)) == 64 * 32 * 2);
  CHECK(plan.scratch.kernel_value_bytes == 64 * 32 * 2);
  CHECK_THAT(compiler::scratch_layout_text(plan),
             Catch::Contains("k" + std::to_string(place.kernel) + " " + kernel.name + ": %" +
                             std::to_string(x16.id()) + " at 0, 4096 bytes\n"));
}
