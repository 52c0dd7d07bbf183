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
  // Both bfloat16 operands widened to f32, whole (the product is one tile); the f32 result needs
  // no copy.
  using Works = std::vector<compiler::ScratchLayout::Work>;
  CHECK(layout.works == Works{{4 * (64 * 32 + 48 * 32), 0}});
  CHECK(compiler::step_host_bytes(plan, false, 4) ==
        plan.memory.peak_bytes + layout.region_bytes() + 4 * (64 * 32 + 48 * 32));
  // Multiplied in hardware, nothing is widened.
  CHECK(layout.hardware_bf16_works.empty());
  CHECK(compiler::step_host_bytes(plan, true, 4) == plan.memory.peak_bytes + layout.region_bytes());
}

TEST_CASE("a 16-bit product's work space holds its widened operands and its f32 result") {
  compiler::Plan plan = compiled(bf16_linear(DType::bf16, false));
  // The f32 result computed in a core's own band before it is rounded.
  using Works = std::vector<compiler::ScratchLayout::Work>;
  CHECK(plan.scratch.works == Works{{4 * (64 * 32 + 48 * 32), 4 * 64 * 48}});
  // Multiplied in hardware, the bfloat16 result is written directly; operands of another 16-bit
  // type are widened as anywhere.
  CHECK(plan.scratch.hardware_bf16_works.empty());
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{64, 32}, DType::f16}));
  Tensor w(graph, graph.add_input("w", {{32, 48}, DType::f16}));
  graph.add_output("y", matmul(x, w).id());
  compiler::ScratchLayout f16 = compiled(std::move(graph)).scratch;
  CHECK(f16.hardware_bf16_works == f16.works);
  CHECK(f16.works == Works{{4 * (64 * 32 + 32 * 48), 4 * 64 * 48}});
}

TEST_CASE("a large 16-bit product widens and rounds a tile's rows per core, never all of them") {
  // Llama's vocabulary product at MSL 8k, in cbfloat16: [8192, 2048] x [2048, 128256]. In f32 its
  // result would take 4.2 GB and its left operand 67 MB.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{8192, 2048}, DType::cb16}));
  Tensor w(graph, graph.add_input("w", {{128256, 2048}, DType::cb16}));
  graph.add_output("logits", matmul(x, swap_last_axes(w)).id());
  compiler::ScratchLayout layout = compiled(std::move(graph)).scratch;
  // 16 row blocks of 512 rows, or 8 of 1,024 in two column halves where the library multiplies
  // column halves faster: a core widens 1,024 rows and rounds 512 x 128,256 values at most.
  CHECK(compiler::largest_tile_rows(8192, 128256, 2048) == 1024);
  CHECK(compiler::largest_tile_values(8192, 128256, 2048) == 512 * 128256);
  CHECK(layout.widening(false) == std::int64_t{4} * 128256 * 2048);
  CHECK(layout.per_core_work(false) == std::int64_t{4} * (1024 * 2048 + 512 * 128256));
  CHECK(layout.work(false, 2) < std::int64_t{4} * 8192 * 128256);
}

TEST_CASE("the work space is the largest product's on the team's cores") {
  // One product whose cores share much (a wide right-hand operand widened whole), another whose
  // cores each take much (a tall 16-bit result rounded a tile at a time): neither covers the
  // other, and the work space is the larger of the two on each team, not the sum of their parts.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{64, 32}, DType::bf16}));
  Tensor wide(graph, graph.add_input("wide", {{32, 16384}, DType::bf16}));
  Tensor tall(graph, graph.add_input("tall", {{8192, 64}, DType::bf16}));
  Tensor y(graph, graph.add_input("y", {{64, 2048}, DType::bf16}));
  graph.add_output("a", matmul(x, wide).id());
  graph.add_output("b", matmul(tall, y).id());
  compiler::ScratchLayout layout = compiled(std::move(graph)).scratch;
  REQUIRE(layout.works.size() == 2);
  for (int cores : {1, 2, 4, 16}) {
    std::int64_t largest = std::max(layout.works[0].on(cores), layout.works[1].on(cores));
    CHECK(layout.work(false, cores) == largest);
    CHECK(layout.work(false, cores) < layout.widening(false) + layout.per_core_work(false) * cores);
  }
}

TEST_CASE("a product's tiles follow its shape alone") {
  // One tile below 2^20 multiply-adds; power-of-two row blocks of 256 rows or more, at most 16;
  // two column halves for few rows or where the library asks for them.
  CHECK(compiler::product_tiling(64, 64, 64, false).count() == 1);
  CHECK(compiler::product_tiling(4096, 64, 64, false).row_blocks == 16);
  CHECK(compiler::product_tiling(1100, 64, 64, false).row_blocks == 4);
  CHECK(compiler::product_tiling(300, 64, 64, false).row_blocks == 2);
  CHECK(compiler::product_tiling(32, 600, 300, false).column_blocks == 2);
  compiler::ProductTiling halves = compiler::product_tiling(4096, 1024, 64, true);
  CHECK(halves.row_blocks == 8);
  CHECK(halves.column_blocks == 2);
  CHECK(compiler::largest_tile_rows(4100, 1024, 64) == 513);
}

TEST_CASE("f32 products need no work space, and in-place updates no snapshot") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  graph.add_output("y", matmul(x, w).id());
  graph.set_update("w", (w * 0.5).id());
  compiler::ScratchLayout layout = compiled(std::move(graph)).scratch;
  CHECK(layout.works.empty());
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
