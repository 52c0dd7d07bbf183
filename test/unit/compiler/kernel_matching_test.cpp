#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.hpp"
#include "compiler/kernel_library.hpp"
#include "graph/tensor.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;
using namespace csrun::graph;
using compiler::KernelMatchError;
using compiler::Program;

namespace {

// The problems kernel matching finds in a graph with one output.
std::vector<std::string> problems_of(Graph graph) {
  try {
    compiler::compile_step(std::move(graph), {});
  } catch (const KernelMatchError& error) {
    return error.problems();
  }
  return {};
}

}  // namespace

TEST_CASE("an op no kernel runs is an error naming op, types, module, model line and options") {
  Graph graph;
  Tensor a(graph, graph.add_input("a", {{4}, DType::i32}));
  auto scope = graph.enter_scope("model.head");
  int line = __LINE__ + 1;
  Tensor q = a / a;
  graph.add_output("q", q.id());
  std::vector<std::string> problems = problems_of(graph);
  REQUIRE(problems.size() == 1);
  const std::string& message = problems.front();
  INFO(message);
  CHECK(message.find("no kernel runs div(i32[4], i32[4]) -> i32[4]") != std::string::npos);
  CHECK(message.find("in model.head") != std::string::npos);
  CHECK(message.find("kernel_matching_test.cpp:" + std::to_string(line)) != std::string::npos);
  CHECK(message.find("operands f32, f16, bf16, cb16, not i32") != std::string::npos);
  CHECK(message.find("the library runs div in fused_elementwise") != std::string::npos);
}

TEST_CASE("kernel matching reports every problem at once") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 6}, DType::f32}));
  Tensor ids(graph, graph.add_input("ids", {{4}, DType::i32}));
  Tensor h(graph, graph.add_input("h", {{4, 6}, DType::bf16}));
  graph.add_output("columns", softmax(x, 0).id());  // softmax runs along the last axis only
  graph.add_output("scatter", scatter_add(ids, h, 9).id());  // accumulates in f32 only
  graph.add_output("wide", sum(reshape(x, {1, 1, 1, 1, 1, 1, 4, 6})).id());  // rank 8
  graph.add_output("int_max", argmax(ids * 2).id());  // integer mul is fine; argmax is f32 only
  std::vector<std::string> problems = problems_of(graph);
  std::string all;
  for (const std::string& p : problems)
    all += p + "\n";
  INFO(all);
  CHECK(problems.size() == 4);
  CHECK(all.find("softmax(f32[4, 6]) -> f32[4, 6]") != std::string::npos);
  CHECK(all.find("the last axis only, not axis 0") != std::string::npos);
  CHECK(all.find("scatter_add(i32[4], bf16[4, 6]) -> bf16[9, 6]") != std::string::npos);
  CHECK(all.find("rank 6 at most, not 8") != std::string::npos);
  CHECK(all.find("argmax(i32[4]) -> i32[]") != std::string::npos);
  CHECK(all.find("mul(") == std::string::npos);
}

TEST_CASE("every computing node runs in exactly one kernel, in an order that respects its inputs") {
  models::TracedStep step = test::traced_step(
      "{name: gpt2, vocab_size: 50, hidden_size: 16, num_heads: 2, num_hidden_layers: 2, "
      "filter_size: 32, max_position_embeddings: 128, dropout_rate: 0.1}",
      2);
  compiler::CompiledStep compiled =
      compiler::compile_step(std::move(step.graph), {{true, DType::bf16, 1}, {}});
  const Graph& g = compiled.program.graph;
  std::vector<int> kernel_of(g.size(), -1);
  for (std::size_t k = 0; k < compiled.kernels.size(); ++k) {
    const compiler::Kernel& kernel = compiled.kernels[k];
    CHECK_NOTHROW(compiler::kernel_spec(kernel.name));
    for (NodeId id : kernel.nodes) {
      CHECK(kernel_of[static_cast<std::size_t>(id)] == -1);
      kernel_of[static_cast<std::size_t>(id)] = static_cast<int>(k);
    }
    for (NodeId operand : kernel.operands)
      CHECK(kernel_of[static_cast<std::size_t>(operand)] < static_cast<int>(k));
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    bool leaf = op_class(g.nodes()[i].op) == OpClass::leaf;
    CHECK((kernel_of[i] >= 0) != leaf);
  }
  // The causal mask (128 x 128, too big to fold into the plan) depends on constants only: it is
  // computed once, at load, before the step.
  auto at_load = [](const compiler::Kernel& kernel) { return kernel.at_load; };
  CHECK(std::any_of(compiled.kernels.begin(), compiled.kernels.end(), at_load));
  CHECK(std::is_partitioned(compiled.kernels.begin(), compiled.kernels.end(), at_load));
}

TEST_CASE("a lone matmul runs as the matmul kernel") {
  Graph graph;
  Tensor a(graph, graph.add_input("a", {{4, 8}, DType::f32}));
  Tensor b(graph, graph.add_input("b", {{8, 2}, DType::f32}));
  graph.add_output("c", matmul(a, b).id());
  compiler::CompiledStep compiled = compiler::compile_step(graph, {});
  REQUIRE(compiled.kernels.size() == 1);
  CHECK(compiled.kernels.front().name == "matmul");
}
