// lower-host: the calls the simulator makes for each kernel, decided by the compiler.

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include "compiler/compile.hpp"
#include "compiler/host_lowering.hpp"
#include "graph/tensor.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;
using namespace csrun::graph;
using compiler::HostStep;
using compiler::HostStepKind;

namespace {

compiler::Plan planned(Graph graph, compiler::PrecisionPolicy precision = {}) {
  compiler::CompileOptions options;
  options.precision = precision;
  return compiler::build_plan(compiler::compile_step(std::move(graph), options), {}, {});
}

std::vector<HostStep> steps_of(const compiler::Plan& plan, HostStepKind kind) {
  std::vector<HostStep> found;
  std::copy_if(plan.host_steps.begin(), plan.host_steps.end(), std::back_inserter(found),
               [kind](const HostStep& step) { return step.kind == kind; });
  return found;
}

// The chain step of `plan` that `is_it` picks.
HostStep chain_where(const compiler::Plan& plan,
                     const std::function<bool(const HostStep&)>& is_it) {
  std::vector<HostStep> chains = steps_of(plan, HostStepKind::chain);
  auto found = std::find_if(chains.begin(), chains.end(), is_it);
  REQUIRE(found != chains.end());
  return *found;
}

// relu(x W^T + b): a linear layer as nn::Linear traces it.
Graph linear_layer(Shape bias_shape) {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{16, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor b(graph, graph.add_variable("b", {bias_shape, DType::f32}, VariableRole::parameter, {}));
  graph.add_output("y", relu(matmul(x, transpose(w, {1, 0})) + b).id());
  return graph;
}

}  // namespace

TEST_CASE("a linear layer is one GEMM reading the weight transposed, rows starting as the bias") {
  compiler::Plan plan = planned(linear_layer({16}));
  std::vector<HostStep> gemms = steps_of(plan, HostStepKind::gemm);
  REQUIRE(gemms.size() == 1);
  const HostStep& gemm = gemms.front();
  CHECK(plan.graph.leaf_name(gemm.operand_b) == "w");
  CHECK(gemm.transposed_b);
  CHECK_FALSE(gemm.transposed_a);
  CHECK(plan.graph.leaf_name(gemm.bias) == "b");
  CHECK(plan.graph.node(gemm.result).op == OpKind::add);
  CHECK(gemm.folded.size() == 2);  // the transpose and the add
  // Neither runs on its own.
  for (const HostStep& step : plan.host_steps) {
    OpKind op = plan.graph.node(step.nodes.front()).op;
    CHECK((op != OpKind::transpose && op != OpKind::add));
  }
  CHECK_THAT(compiler::host_steps_text(plan),
             Catch::Contains("^T) + %") && Catch::Contains("[folds %"));
}

TEST_CASE("in a mixed-precision plan the product reads the 16-bit weight transposed") {
  // The weight is cast to 16 bits as it is and the transpose stays next to the product: the
  // transposed 16-bit weight is never copied.
  compiler::Plan plan = planned(linear_layer({16}), {true, DType::bf16, 1});
  INFO(compiler::host_steps_text(plan));
  std::vector<HostStep> gemms = steps_of(plan, HostStepKind::gemm);
  REQUIRE(gemms.size() == 1);
  const HostStep& gemm = gemms.front();
  CHECK(gemm.transposed_b);
  const Node& weight = plan.graph.node(gemm.operand_b);
  CHECK(weight.type.dtype == DType::bf16);
  CHECK(weight.type.shape == Shape{16, 8});
  REQUIRE(weight.op == OpKind::cast);
  CHECK(plan.graph.leaf_name(weight.inputs[0]) == "w");
  for (const HostStep& step : plan.host_steps)
    CHECK(plan.graph.node(step.nodes.front()).op != OpKind::transpose);
}

TEST_CASE("an add that is not one value per column stays a step of its own") {
  compiler::Plan plan = planned(linear_layer({4, 16}));
  INFO(compiler::host_steps_text(plan));
  std::vector<HostStep> gemms = steps_of(plan, HostStepKind::gemm);
  REQUIRE(gemms.size() == 1);
  const HostStep& gemm = gemms.front();
  CHECK(gemm.bias == -1);
  CHECK(gemm.result == gemm.nodes.front());
}

TEST_CASE("consecutive elementwise nodes of one size run as one chain, small lone ones alone") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{64}, DType::f32}));
  Tensor y(graph, graph.add_input("y", {{64}, DType::f32}));
  graph.add_output("z", exp(x * y + 1.0).id());
  graph.add_output("w", softmax(x).id());
  compiler::Plan plan = planned(graph);
  std::vector<HostStep> chains = steps_of(plan, HostStepKind::chain);
  REQUIRE(chains.size() == 1);
  CHECK(chains.front().nodes.size() == 3);
  CHECK(steps_of(plan, HostStepKind::node).size() == 1);  // the softmax

  Graph lone;
  Tensor big(lone, lone.add_input("x", {{compiler::kLoneChainElements}, DType::f32}));
  Tensor small(lone, lone.add_input("s", {{16}, DType::f32}));
  lone.add_output("a", exp(big).id());
  lone.add_output("b", exp(small).id());
  compiler::Plan lone_plan = planned(lone);
  CHECK(steps_of(lone_plan, HostStepKind::chain).size() == 1);
  CHECK(steps_of(lone_plan, HostStepKind::node).size() == 1);
}

namespace {

// The backward pass of a masked softmax, as the attention's vjp traces it: a row's sum
// ([..., S, 1]) and the causal mask ([S, S]) broadcast over the scores.
Graph masked_softmax_backward(Shape scores) {
  Graph graph;
  Shape rows = scores;
  rows.back() = 1;
  Shape mask_shape(scores.end() - 2, scores.end());
  Tensor gradient(graph, graph.add_input("g", {scores, DType::f32}));
  Tensor probabilities(graph, graph.add_input("p", {scores, DType::f32}));
  Tensor row_sums(graph, graph.add_input("r", {rows, DType::f32}));
  Tensor mask(graph, graph.add_input("m", {mask_shape, DType::boolean}));
  Tensor masked = where(mask, probabilities * (gradient - row_sums), 0.0);
  graph.add_output("d", (masked * 0.125).id());
  return graph;
}

}  // namespace

TEST_CASE("a chain reads operands it broadcasts a chunk at a time, so its values need no place") {
  compiler::Plan plan = planned(masked_softmax_backward({2, 3, 8, 8}));
  INFO(compiler::host_steps_text(plan));
  REQUIRE(plan.host_steps.size() == 1);
  const HostStep& chain = plan.host_steps.front();
  CHECK(chain.kind == HostStepKind::chain);
  CHECK(chain.nodes.size() == 4);
  CHECK(chain.chunk_local.size() == 3);
  CHECK(plan.scratch.kernel_values.empty());
  // Alone, a broadcasting node stays a node: its kernel reads the operand in place.
  Graph lone;
  Tensor big(lone, lone.add_input("x", {{compiler::kLoneChainElements / 64, 64}, DType::f32}));
  Tensor row(lone, lone.add_input("b", {{64}, DType::f32}));
  lone.add_output("y", (big + row).id());
  compiler::Plan lone_plan = planned(lone);
  CHECK(steps_of(lone_plan, HostStepKind::node).size() == 1);
  CHECK(steps_of(lone_plan, HostStepKind::chain).empty());
}

TEST_CASE("a chain keeps per chunk the values only its later nodes read") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{1000}, DType::f32}));
  Tensor y(graph, graph.add_input("y", {{1000}, DType::f32}));
  Tensor scaled = x * 2.0;      // read by the next node only: per chunk
  Tensor shifted = scaled + y;  // an output too: stored
  Tensor squared = shifted * shifted;
  graph.add_output("shifted", shifted.id());
  graph.add_output("z", log(squared).id());
  compiler::Plan plan = planned(graph);
  std::vector<HostStep> chains = steps_of(plan, HostStepKind::chain);
  REQUIRE(chains.size() == 1);
  INFO(compiler::host_steps_text(plan));
  REQUIRE(chains.front().nodes.size() == 4);
  const std::vector<NodeId>& nodes = chains.front().nodes;
  CHECK(chains.front().chunk_local == std::vector<NodeId>{nodes[0], nodes[2]});
  CHECK_THAT(compiler::host_steps_text(plan),
             Catch::Contains("[per chunk %" + std::to_string(nodes[0]) + ", %" +
                             std::to_string(nodes[2]) + "]"));
}

// The host step that computes `variable`'s new value, or null.
const HostStep* step_computing(const compiler::Plan& plan, const std::string& variable) {
  auto update = std::find_if(plan.graph.updates().begin(), plan.graph.updates().end(),
                             [&](const NamedNode& named) { return named.name == variable; });
  if (update == plan.graph.updates().end()) return nullptr;
  for (const HostStep& host : plan.host_steps) {
    if (std::find(host.nodes.begin(), host.nodes.end(), update->node) != host.nodes.end())
      return &host;
  }
  return nullptr;
}

TEST_CASE("an AdamW update of a parameter is one chain over its state") {
  models::TracedStep step = test::traced_step("{name: fc_mnist, hidden_sizes: [96, 80]}", 4);
  compiler::Plan plan = planned(std::move(step.graph));
  INFO(compiler::host_steps_text(plan));
  auto step_computing = [&](const std::string& variable) {
    return ::step_computing(plan, variable);
  };
  std::size_t parameters = 0;
  for (const Variable& variable : plan.graph.variables()) {
    if (variable.role != VariableRole::parameter) continue;
    std::string state = "optimizer.state." + std::to_string(parameters++) + ".";
    const HostStep* update = step_computing(variable.name);
    REQUIRE(update != nullptr);
    CHECK(update->kind == HostStepKind::chain);
    CHECK(step_computing(state + "exp_avg") == update);
    CHECK(step_computing(state + "exp_avg_sq") == update);
    CHECK(update->chunk_local.size() >= 5);
    CHECK(update->in_registers);
  }
  CHECK(parameters == 6);
}

TEST_CASE("in a mixed-precision plan each weight's update rounds it into the copy products read") {
  models::TracedStep step = test::traced_step("{name: fc_mnist, hidden_sizes: [96, 80]}", 4);
  compiler::Plan plan = planned(std::move(step.graph), {true, DType::bf16, 1});
  INFO(compiler::host_steps_text(plan));
  std::size_t copies = 0;
  for (const Variable& variable : plan.graph.variables()) {
    if (variable.role != VariableRole::half_copy) continue;
    ++copies;
    const HostStep* update = step_computing(plan, variable.name);
    REQUIRE(update != nullptr);
    CHECK(update == step_computing(plan, variable.copy_of));
    CHECK(update->in_registers);
  }
  CHECK(copies == 3);  // the three weight matrices; the biases are added in f32
  std::vector<HostStep> gemms = steps_of(plan, HostStepKind::gemm);
  std::size_t reading_copies = 0;
  for (const HostStep& gemm : gemms) {
    for (NodeId operand : {gemm.operand_a, gemm.operand_b}) {
      const Node& node = plan.graph.node(operand);
      CHECK_FALSE(
          (node.op == OpKind::cast && plan.graph.node(node.inputs[0]).op == OpKind::variable));
      if (node.op == OpKind::variable) ++reading_copies;
    }
  }
  CHECK(reading_copies >= copies);
}

TEST_CASE(
    "chains of f32 arithmetic, exp, exact gelu and sigmoid, comparisons, finiteness, where and "
    "16-bit casts run in registers, broadcasting or not") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{1000}, DType::f32}));
  Tensor y(graph, graph.add_input("y", {{1000}, DType::f32}));
  Tensor h(graph, graph.add_input("h", {{1000}, DType::bf16}));
  Tensor grid(graph, graph.add_input("g", {{10, 100}, DType::f32}));
  Tensor row(graph, graph.add_input("r", {{10, 1}, DType::f32}));
  Tensor big(graph, graph.add_input("b", {{compiler::kLoneChainElements}, DType::f32}));
  Tensor c(graph, graph.add_input("c", {{1000}, DType::cb16}));
  Tensor kept = where(x < y, sqrt(abs(x)) * 2.0, -y) + cast(h, DType::f32) * cast(c, DType::f32);
  graph.add_output("kept", cast(kept, DType::bf16).id());
  graph.add_output("kept16", cast(kept * 3.0, DType::f16).id());
  graph.add_output("not_finite", cast(logical_not(is_finite(x / y)), DType::f32).id());
  graph.add_output("transcendental", (log(x * y) + 1.0).id());
  graph.add_output("exp_gelu", (exp(x) * gelu(y) + sigmoid(x)).id());
  graph.add_output("tanh_gelu", (gelu(x * y, true) + 1.0).id());
  graph.add_output("broadcast", ((grid * 3.0 - row) * 2.0).id());
  graph.add_output("lone", maximum(big, 0.5).id());
  compiler::Plan plan = planned(graph);
  std::string text = compiler::host_steps_text(plan);
  INFO(text);
  auto chain_computing = [&](const std::string& output) {
    NodeId node = *plan.graph.find_output(output);
    return chain_where(plan, [&](const HostStep& chain) {
      return std::find(chain.nodes.begin(), chain.nodes.end(), node) != chain.nodes.end();
    });
  };
  HostStep in_registers = chain_computing("kept");
  CHECK(in_registers.in_registers);
  CHECK(chain_computing("kept16").in_registers);
  CHECK(chain_computing("not_finite").in_registers);
  CHECK_FALSE(chain_computing("transcendental").in_registers);
  CHECK(chain_computing("exp_gelu").in_registers);
  CHECK_FALSE(chain_computing("tanh_gelu").in_registers);
  CHECK(chain_computing("broadcast").in_registers);
  CHECK_THAT(text, Catch::Contains("[in registers: %" +
                                   std::to_string(in_registers.chunk_local.front()) + ", %"));
  // A lone node has no values to keep: its own kernel streams it.
  HostStep lone = chain_computing("lone");
  CHECK(lone.nodes.size() == 1);
  CHECK_FALSE(lone.in_registers);
}

TEST_CASE("a chain takes the sums of its values over every axis as it goes, storing none of them") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{5000}, DType::f32}));
  Tensor y(graph, graph.add_input("y", {{5000}, DType::f32}));
  Tensor flag = cast(logical_not(is_finite(x / y)), DType::f32);  // dynamic loss scaling's check
  Tensor squared = x * x;                                         // global_norm's, a lone node
  Tensor grown = log(x) * y;                                      // not in registers
  Tensor counted = sum(flag, {0});
  graph.add_output("count", counted.id());
  graph.add_output("squares", sum(squared, {0}).id());
  graph.add_output("grown", sum(grown, {0}).id());
  compiler::Plan plan = planned(graph);
  std::string text = compiler::host_steps_text(plan);
  INFO(text);
  auto chain_summing = [&](const std::string& output) {
    NodeId node = *plan.graph.find_output(output);
    return chain_where(
        plan, [&](const HostStep& chain) { return chain.sums == std::vector<NodeId>{node}; });
  };
  HostStep count = chain_summing("count");
  CHECK(count.in_registers);
  NodeId summed = plan.graph.node(count.sums.front()).inputs.front();
  CHECK(std::find(count.chunk_local.begin(), count.chunk_local.end(), summed) !=
        count.chunk_local.end());
  CHECK(plan.memory.buffer_of[static_cast<std::size_t>(summed)] < 0);
  CHECK_THAT(text, Catch::Contains("[sums as it goes: %" + std::to_string(count.sums.front()) +
                                   " reduce_sum]"));
  HostStep squares = chain_summing("squares");
  CHECK(squares.nodes.size() == 1);
  CHECK(squares.in_registers);  // a lone node, but one the chain sums
  CHECK_FALSE(chain_summing("grown").in_registers);
  for (const HostStep& step : plan.host_steps)
    CHECK(plan.graph.node(step.nodes.front()).op != OpKind::reduce_sum);
}

TEST_CASE("every node of every kernel is run or folded by exactly one host step") {
  compiler::Plan plan = planned(linear_layer({16}));
  std::vector<int> covered(plan.graph.size(), 0);
  for (const HostStep& step : plan.host_steps) {
    for (NodeId id : step.nodes)
      ++covered[static_cast<std::size_t>(id)];
    for (const std::vector<NodeId>* ids : {&step.folded, &step.sums}) {
      for (NodeId id : *ids)
        ++covered[static_cast<std::size_t>(id)];
    }
  }
  for (const compiler::Kernel& kernel : plan.kernels) {
    for (NodeId id : kernel.nodes)
      CHECK(covered[static_cast<std::size_t>(id)] == 1);
  }
}

TEST_CASE("a chain takes its sums after its nodes, wherever they lie among them") {
  Graph graph;
  Tensor scaled(graph, graph.add_input("scaled", {{64, 32}, DType::f32}));
  Tensor gradient = scaled / 1024.0;  // unscaled
  // The finite check's count comes before the squares the norm sums: one pass takes both.
  Tensor bad = sum(cast(logical_not(is_finite(gradient)), DType::f32), {0, 1});
  Tensor squares = sum(gradient * gradient, {0, 1});
  graph.add_output("norm", sqrt(where(equal(bad, 0.0), squares, 0.0)).id());
  compiler::Plan plan = planned(std::move(graph));
  INFO(compiler::host_steps_text(plan));
  HostStep chain = chain_where(plan, [](const HostStep& step) { return !step.sums.empty(); });
  CHECK(chain.sums == std::vector<NodeId>{bad.id(), squares.id()});
  CHECK(chain.nodes.size() == 5);  // div, is_finite, logical_not, cast, mul
  CHECK(chain.in_registers);
}

TEST_CASE("a softmax writes the 16-bit copy its product reads, a cast folded into its step") {
  Graph graph;
  Tensor scores(graph, graph.add_input("scores", {{2, 16, 16}, DType::f32}));
  Tensor values(graph, graph.add_input("values", {{2, 16, 8}, DType::f32}));
  Tensor probabilities = softmax(scores);
  graph.add_output("attended", matmul(probabilities, values).id());
  graph.add_output("probabilities", probabilities.id());  // kept in f32 too, as for the gradient
  compiler::Plan plan = planned(std::move(graph), {true, DType::bf16, 1});
  INFO(compiler::host_steps_text(plan));
  auto softmax_step =
      std::find_if(plan.host_steps.begin(), plan.host_steps.end(), [&](const HostStep& step) {
        return plan.graph.node(step.nodes.front()).op == OpKind::softmax;
      });
  REQUIRE(softmax_step != plan.host_steps.end());
  REQUIRE(softmax_step->rounded >= 0);
  CHECK(plan.kernels[static_cast<std::size_t>(softmax_step->kernel)].name == "fused_softmax");
  CHECK(softmax_step->folded == std::vector<NodeId>{softmax_step->rounded});
  HostStep product = steps_of(plan, HostStepKind::gemm).front();
  CHECK(product.operand_a == softmax_step->rounded);
  for (const HostStep& step : plan.host_steps) {  // no pass of its own reads the probabilities
    CHECK(std::find(step.nodes.begin(), step.nodes.end(), softmax_step->rounded) ==
          step.nodes.end());
  }
}

namespace {

// Attention's probabilities and their gradient over rows of 16 scores, as the decoders trace
// them: the scores scaled and causally masked before the softmax; its gradient masked, scaled and
// rounded to 16 bits for the products after it. The gradient's upstream comes from the product
// with the values, as in a forward pass's attention, or is `given` before the probabilities, as
// for those made again for the backward pass (recompute-attention). With `keep_masked`, the step
// also returns the masked scores.
Graph masked_attention(bool keep_masked, bool given = false) {
  Graph graph;
  Tensor scores(graph, graph.add_input("scores", {{2, 3, 16, 16}, DType::f32}));
  Tensor upstream(graph, graph.add_input("upstream", {{2, 3, 16, 16}, DType::f32}));
  Tensor values(graph, graph.add_input("values", {{2, 3, 16, 8}, DType::bf16}));
  Tensor causal = iota(graph, {16, 16}, 0) >= iota(graph, {16, 16}, 1);
  Tensor masked = where(causal, scores * 0.25, -1e9);
  Tensor probabilities = softmax(masked);
  Tensor attended = matmul(cast(probabilities, DType::bf16), values);
  graph.add_output("attended", attended.id());
  if (!given) upstream = upstream * cast(matmul(attended, swap_last_axes(values)), DType::f32);
  Tensor gradient =
      cast(where(causal, softmax_grad(probabilities, upstream), 0.0) * 0.25, DType::bf16);
  graph.add_output("value_gradient", matmul(gradient, values).id());
  if (keep_masked) graph.add_output("masked", masked.id());
  return graph;
}

const HostStep& step_running(const compiler::Plan& plan, OpKind op) {
  auto found = std::find_if(plan.host_steps.begin(), plan.host_steps.end(), [&](const HostStep& s) {
    return plan.graph.node(s.nodes.front()).op == op;
  });
  REQUIRE(found != plan.host_steps.end());
  return *found;
}

std::vector<OpKind> ops_of(const compiler::Plan& plan, const std::vector<NodeId>& ids) {
  std::vector<OpKind> ops;
  for (NodeId id : ids)
    ops.push_back(plan.graph.node(id).op);
  return ops;
}

}  // namespace

TEST_CASE("attention's scale and mask run row by row in its softmax, and after its gradient") {
  compiler::Plan plan = planned(masked_attention(false));
  std::string text = compiler::host_steps_text(plan);
  INFO(text);
  const HostStep& forward = step_running(plan, OpKind::softmax);
  CHECK(ops_of(plan, forward.row_chain) == std::vector<OpKind>{OpKind::mul, OpKind::where});
  CHECK(forward.chunk_local == forward.row_chain);  // the masked scores are never stored
  CHECK(forward.rounded >= 0);
  CHECK(plan.kernels[static_cast<std::size_t>(forward.kernel)].name == "fused_softmax");
  CHECK(compiler::host_step_call(forward) == "node+chain2@rows");
  const HostStep& backward = step_running(plan, OpKind::softmax_grad);
  CHECK(ops_of(plan, backward.row_chain) ==
        std::vector<OpKind>{OpKind::where, OpKind::mul, OpKind::cast});
  // Only the 16-bit gradient the products read is stored.
  std::vector<NodeId> per_row = {backward.nodes.front(), backward.row_chain[0],
                                 backward.row_chain[1]};
  CHECK(backward.chunk_local == per_row);
  CHECK(plan.memory.buffer_of[static_cast<std::size_t>(backward.row_chain.back())] >= 0);
  for (const HostStep& step : plan.host_steps) {  // no pass of its own over the rows
    for (NodeId id : forward.row_chain)
      CHECK(std::find(step.nodes.begin(), step.nodes.end(), id) == step.nodes.end());
    for (NodeId id : backward.row_chain)
      CHECK(std::find(step.nodes.begin(), step.nodes.end(), id) == step.nodes.end());
  }
  CHECK_THAT(text, Catch::Contains("softmax [its input by rows: %") &&
                       Catch::Contains("softmax_grad [then by rows: %") &&
                       Catch::Contains("[per row: %"));
}

TEST_CASE("a softmax only its gradient and 16-bit copy read is computed by the gradient's step") {
  // Attention's probabilities made again for the backward pass: one pass over the rows computes
  // them, rounds them into the copy and takes their gradient; their f32 values are never stored.
  compiler::Plan plan = planned(masked_attention(false, true));
  std::string text = compiler::host_steps_text(plan);
  INFO(text);
  for (const HostStep& step : plan.host_steps)
    CHECK(plan.graph.node(step.nodes.front()).op != OpKind::softmax);
  const HostStep& gradient = step_running(plan, OpKind::softmax_grad);
  REQUIRE(gradient.row_softmax >= 0);
  CHECK(plan.graph.node(gradient.row_softmax).op == OpKind::softmax);
  CHECK(plan.memory.buffer_of[static_cast<std::size_t>(gradient.row_softmax)] < 0);
  CHECK(ops_of(plan, gradient.softmax_chain) == std::vector<OpKind>{OpKind::mul, OpKind::where});
  CHECK(ops_of(plan, gradient.row_chain) ==
        std::vector<OpKind>{OpKind::where, OpKind::mul, OpKind::cast});
  REQUIRE(gradient.rounded >= 0);
  CHECK(plan.graph.node(gradient.rounded).inputs.front() == gradient.row_softmax);
  CHECK(gradient.folded == std::vector<NodeId>{gradient.row_softmax, gradient.rounded});
  std::vector<NodeId> per_row = gradient.softmax_chain;
  per_row.push_back(gradient.row_softmax);
  per_row.push_back(gradient.nodes.front());
  per_row.insert(per_row.end(), gradient.row_chain.begin(), gradient.row_chain.end() - 1);
  CHECK(gradient.chunk_local == per_row);
  CHECK(plan.kernels[static_cast<std::size_t>(gradient.kernel)].name == "fused_softmax");
  CHECK(compiler::host_step_call(gradient) == "node+softmax+chain5@rows");
  CHECK_THAT(text, Catch::Contains("softmax_grad [its %" + std::to_string(gradient.row_softmax) +
                                   " softmax by rows, of %"));
  // The product with the values reads the copy the step rounds.
  std::vector<HostStep> products = steps_of(plan, HostStepKind::gemm);
  CHECK(std::any_of(products.begin(), products.end(), [&](const HostStep& product) {
    return product.operand_a == gradient.rounded;
  }));
}

TEST_CASE("masked scores the step returns are stored, not computed in the softmax's rows") {
  compiler::Plan plan = planned(masked_attention(true));
  INFO(compiler::host_steps_text(plan));
  const HostStep& forward = step_running(plan, OpKind::softmax);
  CHECK(forward.row_chain.empty());
  CHECK(forward.chunk_local.empty());
  CHECK(step_running(plan, OpKind::softmax_grad).row_chain.size() == 3);
}

TEST_CASE("a softmax only its rounded copy reads keeps its f32 rows one at a time") {
  // An eval step's attention: the products read the probabilities' 16-bit copy, nothing their f32
  // values, which the training step's softmax_grad reads.
  Graph graph;
  Tensor scores(graph, graph.add_input("scores", {{2, 3, 16, 16}, DType::f32}));
  Tensor values(graph, graph.add_input("values", {{2, 3, 16, 8}, DType::bf16}));
  Tensor causal = iota(graph, {16, 16}, 0) >= iota(graph, {16, 16}, 1);
  Tensor probabilities = softmax(where(causal, scores * 0.25, -1e9));
  graph.add_output("attended", matmul(cast(probabilities, DType::bf16), values).id());
  compiler::Plan plan = planned(graph);
  std::string text = compiler::host_steps_text(plan);
  INFO(text);
  const HostStep& forward = step_running(plan, OpKind::softmax);
  REQUIRE(forward.rounded >= 0);
  REQUIRE(forward.row_chain.size() == 2);
  std::vector<NodeId> per_row = forward.row_chain;
  per_row.push_back(forward.nodes.front());
  CHECK(forward.chunk_local == per_row);
  for (const compiler::ScratchLayout::Place& place : plan.scratch.kernel_values)
    CHECK(place.node != forward.nodes.front());
  CHECK_THAT(text, Catch::Contains("[per row: %" + std::to_string(forward.row_chain[0]) + ", %" +
                                   std::to_string(forward.row_chain[1]) + ", %" +
                                   std::to_string(forward.nodes.front()) + "]"));

  compiler::Plan training = planned(masked_attention(false));
  const HostStep& kept = step_running(training, OpKind::softmax);
  CHECK(std::find(kept.chunk_local.begin(), kept.chunk_local.end(), kept.nodes.front()) ==
        kept.chunk_local.end());
}

TEST_CASE("a softmax drops out the rows it rounds, a dropout only its 16-bit copy reads") {
  // A training step's attention dropout between the probabilities and their 16-bit copy; with
  // `gradient`, their gradient reads them too, its upstream given before them (as for
  // probabilities made again for the backward pass), and computes them.
  for (bool gradient : {false, true}) {
    INFO((gradient ? "the gradient reads" : "only the dropout reads") << " the probabilities");
    Graph graph;
    Tensor scores(graph, graph.add_input("scores", {{2, 3, 16, 16}, DType::f32}));
    Tensor step(graph, graph.add_input("step", {{}, DType::i32}));
    Tensor values(graph, graph.add_input("values", {{2, 3, 16, 8}, DType::bf16}));
    Tensor causal = iota(graph, {16, 16}, 0) >= iota(graph, {16, 16}, 1);
    Tensor probabilities = softmax(where(causal, scores * 0.25, -1e9));
    Tensor dropped = dropout(probabilities, step, 0.1, 3, 5);
    graph.add_output("attended", matmul(cast(dropped, DType::bf16), values).id());
    if (gradient) graph.add_output("gradient", softmax_grad(probabilities, scores).id());
    compiler::Plan plan = planned(graph);
    std::string text = compiler::host_steps_text(plan);
    INFO(text);
    const HostStep& forward = step_running(plan, gradient ? OpKind::softmax_grad : OpKind::softmax);
    CHECK(forward.dropout == dropped.id());
    REQUIRE(forward.rounded >= 0);
    CHECK(plan.graph.node(forward.rounded).inputs[0] == dropped.id());
    std::vector<OpKind> folded{OpKind::cast, OpKind::dropout};
    if (gradient) folded.insert(folded.begin(), OpKind::softmax);
    CHECK(ops_of(plan, forward.folded) == folded);
    for (NodeId id : {probabilities.id(), dropped.id()}) {
      CHECK(std::find(forward.chunk_local.begin(), forward.chunk_local.end(), id) !=
            forward.chunk_local.end());
      for (const compiler::ScratchLayout::Place& place : plan.scratch.kernel_values)
        CHECK(place.node != id);
    }
    CHECK(compiler::host_step_call(forward) ==
          (gradient ? "node+softmax+dropout+chain2@rows" : "node+dropout+chain2@rows"));
    CHECK_THAT(text, Catch::Contains("[drops out as %" + std::to_string(dropped.id()) +
                                     "] [rounds into %" + std::to_string(forward.rounded) + "]"));
    for (const HostStep& other : plan.host_steps)
      CHECK(plan.graph.node(other.nodes.front()).op != OpKind::dropout);
  }
}
