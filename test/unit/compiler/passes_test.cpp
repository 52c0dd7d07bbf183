#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>

#include "compiler/compile.hpp"
#include "compiler/memory_plan.hpp"
#include "compiler/passes.hpp"
#include "compiler/static_values.hpp"
#include "graph/autodiff.hpp"
#include "graph/number_formats.hpp"
#include "graph/reference_evaluator.hpp"
#include "graph/tensor.hpp"
#include "nn/convolution.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;
using namespace csrun::graph;
using compiler::Program;

namespace {

std::size_t count_ops(const Graph& graph, OpKind op) {
  return static_cast<std::size_t>(std::count_if(graph.nodes().begin(), graph.nodes().end(),
                                                [&](const Node& node) { return node.op == op; }));
}

const Node& output_node(const Graph& graph, const std::string& name) {
  return graph.node(*graph.find_output(name));
}

// The values of every output of a program's graph for the same feeds.
std::vector<double> outputs_of(const Graph& graph, const Feeds& feeds) {
  std::vector<NodeId> fetch;
  for (const NamedNode& output : graph.outputs())
    fetch.push_back(output.node);
  std::vector<double> values;
  for (const HostTensor& tensor : evaluate_reference(graph, feeds, fetch))
    values.insert(values.end(), tensor.values.begin(), tensor.values.end());
  return values;
}

const compiler::Fusion* fusion_of(const Program& program, NodeId id) {
  for (const compiler::Fusion& fusion : program.fusions) {
    if (std::find(fusion.nodes.begin(), fusion.nodes.end(), id) != fusion.nodes.end())
      return &fusion;
  }
  return nullptr;
}

// The memory plan of `graph` compiled by the standard passes but `pass_left_out`.
compiler::MemoryPlan memory_without(const Graph& graph, std::string_view pass_left_out) {
  Program program{graph, {}};
  compiler::standard_passes({}).without(pass_left_out).run(program);
  return compiler::plan_memory(program.graph, compiler::match_kernels(program));
}

struct Fixture {
  Graph graph;
  Tensor x{graph, graph.add_input("x", {{4, 8}, DType::f32})};
  Tensor w{graph, graph.add_variable("model.w", {{8, 8}, DType::f32}, VariableRole::parameter, {})};

  Feeds feeds() const { return test::sample_feeds(graph); }
};

}  // namespace

TEST_CASE("dead-code elimination drops what no result needs and keeps the interface") {
  Fixture f;
  Tensor unused = exp(f.x) * 3.0;
  (void)unused;
  f.graph.add_variable("model.unread", {{2}, DType::f32}, VariableRole::parameter, {});
  f.graph.add_output("y", (f.x + 1.0).id());
  Program program{f.graph, {}};
  CHECK(compiler::eliminate_dead_code(program) == 3);  // exp, the constant 3, mul
  CHECK(count_ops(program.graph, OpKind::exp) == 0);
  CHECK(program.graph.find_variable("model.unread"));
  CHECK(program.graph.find_input("x"));
  CHECK(outputs_of(program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
  CHECK(compiler::eliminate_dead_code(program) == 0);
}

TEST_CASE("common subexpressions merge, commutative operands in either order") {
  Fixture f;
  Tensor a = f.x + matmul(f.x, f.w);
  Tensor b = matmul(f.x, f.w) + f.x;
  f.graph.add_output("y", (a * b).id());
  Program program{f.graph, {}};
  std::size_t before = program.graph.size();
  CHECK(compiler::eliminate_common_subexpressions(program) == 2);  // the matmul and the add
  CHECK(program.graph.size() == before - 2);
  CHECK(count_ops(program.graph, OpKind::matmul) == 1);
  CHECK(outputs_of(program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
}

TEST_CASE("constant folding computes what constants alone decide, up to a size") {
  Fixture f;
  Tensor scale = sqrt(constant(f.graph, 16.0)) * 2.0;       // 8
  Tensor small = constant(f.graph, 1.5, {64, 64}) * 2.0;    // 4,096 elements: folds
  Tensor big = constant(f.graph, 1.5, {100, 100}) * 2.0;    // 10,000: stays
  Tensor positions = iota(f.graph, {4, 8}, 1, DType::f32);  // a generator: stays
  f.graph.add_output("y", (f.x * scale + positions).id());
  f.graph.add_output("small", small.id());
  f.graph.add_output("big", big.id());
  Program program{f.graph, {}};
  CHECK(compiler::fold_constants(program) == 3);  // sqrt, the mul by 2, the small mul
  CHECK(count_ops(program.graph, OpKind::sqrt) == 0);
  CHECK(count_ops(program.graph, OpKind::iota) == 1);
  CHECK(output_node(program.graph, "small").op == OpKind::constant);
  CHECK(output_node(program.graph, "small").attrs.values == std::vector<double>{3.0});
  CHECK(output_node(program.graph, "big").op == OpKind::mul);
  const Node& add = output_node(program.graph, "y");
  const Node& mul = program.graph.node(add.inputs[0]);
  CHECK(program.graph.node(mul.inputs[1]).attrs.values == std::vector<double>{8.0});
  CHECK(outputs_of(program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
  CHECK(compiler::fold_constants(program) == 0);
}

TEST_CASE("algebraic simplification applies only identities that keep every bit") {
  Fixture f;
  Tensor y = ((f.x + 0.0) * 1.0) / 4.0;                      // x * 0.25
  Tensor squared = pow(y, 2.0);                              // y * y
  Tensor root = pow(abs(y) + 1.0, 0.5);                      // sqrt
  Tensor again = -(-y);                                      // y
  Tensor flat = reshape(reshape(squared, {32}), {2, 16});    // one reshape
  Tensor same = transpose(transpose(root, {1, 0}), {1, 0});  // root
  Tensor product = swap_last_axes(matmul(f.x, f.w));         // w^T x^T
  Tensor chosen = where(f.x > 0.0, again, again);            // again
  f.graph.add_output("flat", flat.id());
  f.graph.add_output("same", same.id());
  f.graph.add_output("product", product.id());
  f.graph.add_output("chosen", chosen.id());
  f.graph.add_output("cast", cast(f.x, DType::f32).id());
  Program program{f.graph, {}};
  CHECK(compiler::simplify_algebra(program) > 0);
  CHECK(compiler::eliminate_dead_code(program) > 0);
  const Graph& g = program.graph;
  CHECK(count_ops(g, OpKind::div) == 0);
  CHECK(count_ops(g, OpKind::pow) == 0);
  CHECK(count_ops(g, OpKind::neg) == 0);
  CHECK(count_ops(g, OpKind::where) == 0);
  CHECK(count_ops(g, OpKind::cast) == 0);
  CHECK(count_ops(g, OpKind::sqrt) == 1);
  CHECK(count_ops(g, OpKind::reshape) == 1);
  CHECK(output_node(g, "same").op == OpKind::sqrt);
  CHECK(output_node(g, "product").op == OpKind::matmul);
  CHECK(output_node(g, "chosen").op == OpKind::mul);
  std::vector<double> before = outputs_of(f.graph, f.feeds());
  std::vector<double> after = outputs_of(g, f.feeds());
  REQUIRE(before.size() == after.size());
  for (std::size_t i = 0; i < before.size(); ++i)
    CHECK(after[i] == Approx(before[i]).epsilon(1e-12));
}

TEST_CASE("a transpose of a product another node also reads stays a transpose") {
  Fixture f;
  Tensor product = matmul(f.x, f.w);
  f.graph.add_output("t", swap_last_axes(product).id());
  f.graph.add_output("p", product.id());
  Program program{f.graph, {}};
  compiler::simplify_algebra(program);
  CHECK(output_node(program.graph, "t").op == OpKind::transpose);
}

TEST_CASE("keys split into heads and swapped for a product stay a row copy and a layout") {
  // scores = q k^T per head: the swap over the head split is the product's operand layout; made
  // one transpose, it would gather its rows an element at a time. Another reader keeps the
  // merge (transposes of transposes become one).
  Graph graph;
  Tensor q(graph, graph.add_input("q", {{2, 6, 3, 4}, DType::f32}));
  Tensor k(graph, graph.add_input("k", {{2, 6, 3, 4}, DType::f32}));
  Tensor q_heads = transpose(q, {0, 2, 1, 3});
  Tensor k_heads = transpose(k, {0, 2, 1, 3});
  graph.add_output("scores", matmul(q_heads, swap_last_axes(k_heads)).id());
  graph.add_output("keys", tanh(swap_last_axes(transpose(q, {0, 2, 1, 3}))).id());
  Program program{graph, {}};
  compiler::simplify_algebra(program);
  const Graph& g = program.graph;
  const Node& swapped = g.node(output_node(g, "scores").inputs[1]);
  REQUIRE(swapped.op == OpKind::transpose);
  CHECK(swaps_last_two_axes(swapped.attrs.perm));
  CHECK(g.node(swapped.inputs[0]).attrs.perm == std::vector<std::int64_t>{0, 2, 1, 3});
  const Node& merged = g.node(output_node(g, "keys").inputs[0]);
  CHECK(merged.attrs.perm == std::vector<std::int64_t>{0, 2, 3, 1});
  CHECK(outputs_of(g, test::sample_feeds(g)) == outputs_of(graph, test::sample_feeds(graph)));
}

TEST_CASE("mixed precision: 16-bit matmul operands, results by precision_opt_level") {
  auto lowered = [](int level) {
    Fixture f;
    Tensor q = reshape(matmul(f.x, f.w), {2, 2, 4, 2});
    Tensor scores = matmul(q, swap_last_axes(q));  // batched: attention-like
    f.graph.add_output("dense", matmul(f.x, f.w).id());
    f.graph.add_output("again", matmul(f.x + 1.0, f.w).id());
    f.graph.add_output("attention", softmax(scores, -1).id());
    Program program{f.graph, {}};
    CHECK(compiler::lower_precision(program, {true, DType::bf16, level}) > 0);
    return program;
  };
  auto matmuls = [](const Graph& graph) {
    std::vector<const Node*> found;
    for (const Node& node : graph.nodes()) {
      if (node.op == OpKind::matmul) found.push_back(&node);
    }
    return found;
  };
  for (int level : {0, 1, 2}) {
    INFO("precision_opt_level " << level);
    Program program = lowered(level);
    const Graph& g = program.graph;
    for (const Node* node : matmuls(g)) {
      CHECK(g.node(node->inputs[0]).type.dtype == DType::bf16);
      CHECK(g.node(node->inputs[1]).type.dtype == DType::bf16);
      bool batched = node->type.rank() > 2;
      DType expected = level == 0 || (level == 1 && batched) ? DType::f32 : DType::bf16;
      CHECK(node->type.dtype == expected);
    }
    // Results keep their f32 types.
    CHECK(output_node(g, "dense").type.dtype == DType::f32);
    bool softmax_in_half = g.node(output_node(g, "attention").inputs[0]).op == OpKind::softmax &&
                           g.node(output_node(g, "attention").inputs[0]).type.dtype == DType::bf16;
    CHECK(softmax_in_half == (level == 2));
  }
  Fixture f;
  f.graph.add_output("y", matmul(f.x, f.w).id());
  Program program{f.graph, {}};
  CHECK(compiler::lower_precision(program, {false, DType::bf16, 1}) == 0);
  CHECK(count_ops(program.graph, OpKind::cast) == 0);
}

TEST_CASE(
    "mixed precision: a reshape that keeps the rows of a softmax or an elementwise value is taken "
    "of its 16-bit form") {
  // Grouped-query attention: the probabilities of 4 heads reshaped into 2 groups of 2 for the
  // product with the values; the rounding then joins the softmax's kernel.
  Graph graph;
  Tensor scores(graph, graph.add_input("scores", {{1, 4, 8, 8}, DType::f32}));
  Tensor values(graph, graph.add_input("values", {{1, 2, 8, 4}, DType::f32}));
  Tensor flat(graph, graph.add_input("flat", {{8, 8}, DType::f32}));
  Tensor tall(graph, graph.add_input("tall", {{4, 8}, DType::f32}));
  Tensor grouped = reshape(softmax(scores, -1), {1, 2, 16, 8});
  graph.add_output("context", matmul(grouped, values).id());
  graph.add_output("scaled", matmul(reshape(scores * 2.0, {1, 2, 16, 8}), values).id());
  // A reshape that does not keep the rows stays below its cast.
  graph.add_output("columns", matmul(reshape(softmax(flat, -1), {16, 4}), tall).id());
  Program program{graph, {}};
  CHECK(compiler::lower_precision(program, {true, DType::bf16, 1}) > 0);
  const Graph& g = program.graph;
  INFO(g.to_text());
  auto left_operand = [&](const std::string& output) -> const Node& {
    const Node* product = &output_node(g, output);
    if (product->op == OpKind::cast) product = &g.node(product->inputs[0]);  // a 16-bit result
    return g.node(product->inputs[0]);
  };
  for (std::string output : {"context", "scaled"}) {
    const Node& reshaped = left_operand(output);
    REQUIRE(reshaped.op == OpKind::reshape);
    CHECK(reshaped.type.dtype == DType::bf16);
    const Node& rounded = g.node(reshaped.inputs[0]);
    CHECK(rounded.op == OpKind::cast);
    CHECK(g.node(rounded.inputs[0]).type.dtype == DType::f32);
  }
  const Node& cast = left_operand("columns");
  CHECK(cast.op == OpKind::cast);
  CHECK(g.node(cast.inputs[0]).op == OpKind::reshape);
}

TEST_CASE(
    "mixed precision: the loss reads 16-bit logits, and its gradient is 16-bit when only "
    "products read it") {
  auto lowered = [](bool bias_gradient) {
    Fixture f;
    Tensor labels(f.graph, f.graph.add_input("labels", {{4}, DType::i32}));
    Tensor g(f.graph, f.graph.add_input("g", {{4}, DType::f32}));
    Tensor logits = matmul(f.x, f.w);
    Tensor gradient = softmax_cross_entropy_grad(logits, labels, g);
    f.graph.add_output("loss", softmax_cross_entropy(logits, labels).id());
    f.graph.add_output("dx", matmul(gradient, swap_last_axes(f.w)).id());
    f.graph.add_output("dw", matmul(swap_last_axes(f.x), gradient).id());
    if (bias_gradient) f.graph.add_output("db", sum(gradient, {0}).id());
    Program program{f.graph, {}};
    compiler::lower_precision(program, {true, DType::bf16, 1});
    compiler::eliminate_dead_code(program);
    return program;
  };
  for (bool bias_gradient : {false, true}) {
    INFO("a bias gradient reads the logits' gradient: " << bias_gradient);
    Program program = lowered(bias_gradient);
    const Graph& g = program.graph;
    const Node& loss = output_node(g, "loss");
    CHECK(loss.type.dtype == DType::f32);
    CHECK(g.node(loss.inputs[0]).op == OpKind::matmul);
    CHECK(g.node(loss.inputs[0]).type.dtype == DType::bf16);
    for (const Node& node : g.nodes()) {
      if (node.op != OpKind::softmax_cross_entropy_grad) continue;
      CHECK(g.node(node.inputs[0]).op == OpKind::matmul);
      CHECK(node.type.dtype == (bias_gradient ? DType::f32 : DType::bf16));
    }
    // The only casts left: x and w to 16 bits, dx and dw back to f32, and the gradient to 16
    // bits where it stays f32 (no f32 copy of the logits).
    CHECK(count_ops(g, OpKind::cast) == (bias_gradient ? 5u : 4u));
  }
}

TEST_CASE("a weight read by several products is converted to 16 bits once") {
  Fixture f;
  f.graph.add_output("a", matmul(f.x, f.w).id());
  f.graph.add_output("b", matmul(exp(f.x), f.w).id());
  Program program{f.graph, {}};
  compiler::lower_precision(program, {true, DType::cb16, 0});
  NodeId w = program.graph.find_variable("model.w")->node;
  std::size_t casts_of_w = 0;
  for (const Node& node : program.graph.nodes())
    casts_of_w += node.op == OpKind::cast && node.inputs[0] == w ? 1 : 0;
  CHECK(casts_of_w == 1);
}

TEST_CASE(
    "a fusion reads a reshape of a computed value made after its first node, not one of a "
    "variable") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor flat(graph, graph.add_input("flat", {{32}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{32}, DType::f32}, VariableRole::parameter, {}));
  Tensor computed = exp(flat);
  Tensor scaled = x * 3.0;
  Tensor from_computed = scaled + reshape(computed, {4, 8});
  Tensor doubled = x * 2.0;
  // A step that borrows its variables (a split batch's micro-step) copies w into its reshape
  // where the reshape comes: a kernel before it would read the copy of the step before.
  Tensor from_variable = doubled + reshape(w, {4, 8});
  graph.add_output("from_computed", from_computed.id());
  graph.add_output("from_variable", from_variable.id());
  Program program{graph, {}};
  CHECK(compiler::fuse_elementwise(program) > 0);
  const compiler::Fusion* computed_fusion = fusion_of(program, from_computed.id());
  REQUIRE(computed_fusion != nullptr);
  CHECK(computed_fusion == fusion_of(program, scaled.id()));
  const compiler::Fusion* variable_fusion = fusion_of(program, from_variable.id());
  CHECK_FALSE((variable_fusion != nullptr && variable_fusion == fusion_of(program, doubled.id())));
  // The kernels' order holds: the view of the computed value is ready before its reader.
  CHECK_NOTHROW(compiler::match_kernels(program));
}

TEST_CASE("matmul fusion takes the operand loads, bias, reshape, cast and activation") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{2, 3, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{16, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor b(graph, graph.add_variable("b", {{16}, DType::f32}, VariableRole::parameter, {}));
  Tensor rows = reshape(x, {6, 8});
  Tensor y = gelu(reshape(matmul(rows, swap_last_axes(w)) + b, {2, 3, 16}));
  graph.add_output("y", y.id());
  Program program{graph, {}};
  compiler::lower_precision(program, {true, DType::bf16, 1});
  CHECK(compiler::fuse_matmuls(program) > 0);
  REQUIRE(program.fusions.size() == 1);
  const compiler::Fusion& fusion = program.fusions.front();
  CHECK(fusion.pattern == "matmul");
  std::vector<OpKind> ops;
  for (NodeId id : fusion.nodes)
    ops.push_back(program.graph.node(id).op);
  for (OpKind op : {OpKind::transpose, OpKind::matmul, OpKind::add, OpKind::reshape, OpKind::gelu})
    CHECK(std::count(ops.begin(), ops.end(), op) >= 1);
  CHECK(std::count(ops.begin(), ops.end(), OpKind::cast) == 3);  // both operands and the product
  CHECK(std::is_sorted(fusion.nodes.begin(), fusion.nodes.end()));
  CHECK(program.graph.node(fusion.nodes.back()).op == OpKind::gelu);
}

TEST_CASE("a product's operand rounded from an elementwise result is rounded by that kernel") {
  // Softmax's gradient masked and scaled, then rounded for the products that read it: the
  // elementwise kernel stores the 16-bit values alone.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{8, 8}, DType::f32}));
  Tensor mask(graph, graph.add_input("mask", {{8, 8}, DType::boolean}));
  Tensor w(graph, graph.add_variable("w", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  Tensor masked = where(mask, x * 0.5, 0.0);
  graph.add_output("y", matmul(masked, w).id());
  Program program{graph, {}};
  compiler::lower_precision(program, {true, DType::bf16, 1});
  CHECK(compiler::fuse_matmuls(program) > 0);
  CHECK(compiler::fuse_elementwise(program) > 0);
  NodeId rounded = -1;
  for (std::size_t i = 0; i < program.graph.size(); ++i) {
    const Node& node = program.graph.node(static_cast<NodeId>(i));
    if (node.op == OpKind::cast && node.type.dtype == DType::bf16 &&
        program.graph.node(node.inputs[0]).op == OpKind::where)
      rounded = static_cast<NodeId>(i);
  }
  REQUIRE(rounded >= 0);
  const compiler::Fusion* kernel = fusion_of(program, rounded);
  REQUIRE(kernel != nullptr);
  CHECK(kernel->pattern == "elementwise");
  CHECK(kernel == fusion_of(program, program.graph.node(rounded).inputs[0]));
  compiler::CompileOptions options;
  options.precision = {true, DType::bf16, 1};
  CHECK_NOTHROW(compiler::compile_step(graph, options));
}

TEST_CASE("a product's operand rounded from another product's activation is the product's cast") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{8, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor v(graph, graph.add_variable("v", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  graph.add_output("y", matmul(relu(matmul(x, w)), v).id());
  Program program{graph, {}};
  compiler::lower_precision(program, {true, DType::bf16, 1});
  compiler::fuse_matmuls(program);
  // The relu is the first product's epilogue: its rounding loads the second product's operand,
  // as no elementwise kernel computes the relu.
  for (std::size_t i = 0; i < program.graph.size(); ++i) {
    const Node& node = program.graph.node(static_cast<NodeId>(i));
    if (node.op != OpKind::cast || program.graph.node(node.inputs[0]).op != OpKind::relu) continue;
    const compiler::Fusion* kernel = fusion_of(program, static_cast<NodeId>(i));
    REQUIRE(kernel != nullptr);
    CHECK(kernel->pattern == "matmul");
    CHECK(kernel != fusion_of(program, node.inputs[0]));
  }
}

TEST_CASE("a 16-bit product widened for elementwise readers alone is widened by its reader") {
  // A weight's gradient, read by its update: stored in 16 bits, widened a chunk at a time.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{8, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  graph.add_output("y", (matmul(x, w) * 2.0 + 1.0).id());
  Program program{graph, {}};
  compiler::lower_precision(program, {true, DType::bf16, 1});
  CHECK(compiler::fuse_matmuls(program) > 0);
  CHECK(compiler::fuse_elementwise(program) > 0);
  REQUIRE(program.fusions.size() == 2);
  for (const compiler::Fusion& fusion : program.fusions) {
    INFO(fusion.pattern);
    for (NodeId id : fusion.nodes) {
      const Node& node = program.graph.node(id);
      bool widens = node.op == OpKind::cast && node.type.dtype == DType::f32;
      CHECK(widens == (fusion.pattern == "elementwise" && id == fusion.nodes.front()));
    }
  }
  CHECK(program.graph.node(program.fusions[0].nodes.back()).op == OpKind::matmul);
  CHECK(program.fusions[1].nodes.size() == 3);  // cast, mul, add
}

TEST_CASE("sink-casts widens a 16-bit value just before its first reader, which fuses with it") {
  // As the logits' weight gradient: widened where it is computed, read much later.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{8, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  Tensor v(graph, graph.add_variable("v", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  Tensor widened = cast(cast(matmul(x, w), DType::bf16), DType::f32);
  Tensor between = tanh(matmul(x, v));
  graph.add_output("y", (widened * 2.0 + between).id());
  Program program{graph, {}};
  CHECK(compiler::sink_casts(program) == 1);
  const Graph& sunk = program.graph;
  NodeId reader = sunk.node(*sunk.find_output("y")).inputs[0];  // widened * 2
  NodeId moved = sunk.node(reader).inputs[0];
  CHECK(sunk.node(moved).op == OpKind::cast);
  CHECK(moved == reader - 1);
  CHECK(outputs_of(sunk, test::sample_feeds(sunk)) == outputs_of(graph, test::sample_feeds(graph)));
  CHECK(compiler::sink_casts(program) == 0);

  CHECK(compiler::fuse_elementwise(program) > 0);
  auto fusion_of = [&](NodeId id) {
    for (const compiler::Fusion& fusion : program.fusions) {
      if (std::find(fusion.nodes.begin(), fusion.nodes.end(), id) != fusion.nodes.end())
        return &fusion;
    }
    return static_cast<const compiler::Fusion*>(nullptr);
  };
  REQUIRE(fusion_of(moved) != nullptr);
  CHECK(fusion_of(moved) == fusion_of(reader));
}

TEST_CASE("sink-casts leaves a gradient widened for its update next to the gradient") {
  // schedule-updates moves the update up to the widening; sinking it would hold the update back.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{8, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  Tensor hidden = tanh(matmul(x, w));
  graph.add_output("loss", sum(hidden, {0, 1}).id());
  graph.set_phase(Phase::backward);
  Tensor gradient = cast(cast(matmul(transpose(x, {1, 0}), hidden), DType::bf16), DType::f32);
  Tensor later = tanh(matmul(x, w));
  graph.add_output("later", later.id());
  graph.set_phase(Phase::update);
  graph.set_update("w", (w - 0.1 * gradient).id());
  Program program{graph, {}};
  CHECK(compiler::sink_casts(program) == 0);
}

TEST_CASE("half-copies: a weight cast to 16 bits and updated reads a copy its update keeps") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor frozen(graph,
                graph.add_variable("frozen", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor v(graph, graph.add_variable("v", {{8}, DType::f32}, VariableRole::parameter, {}));
  Tensor hidden = cast(matmul(cast(x, DType::bf16), cast(w, DType::bf16)), DType::f32);
  Tensor out = cast(matmul(cast(hidden, DType::bf16), cast(frozen, DType::bf16)), DType::f32);
  graph.add_output("loss", sum(out * v, {0, 1}).id());
  graph.set_phase(Phase::update);
  graph.set_update("w", (w - w * 0.01).id());
  graph.set_update("v", (v * 0.5).id());
  Program program{graph, {}};
  CHECK(compiler::keep_half_copies(program) == 1);
  const Graph& kept = program.graph;
  INFO(kept.to_text());

  const Variable* copy = kept.find_variable("w@bf16");
  REQUIRE(copy != nullptr);
  CHECK(copy->role == VariableRole::half_copy);
  CHECK(copy->copy_of == "w");
  CHECK(kept.node(copy->node).type == TensorType{{8, 8}, DType::bf16});
  CHECK(kept.find_variable("frozen@bf16") == nullptr);  // not updated: cast where it is read
  CHECK(kept.find_variable("v@bf16") == nullptr);       // read in f32 only
  auto update_of = [&](const char* name) {
    for (const NamedNode& update : kept.updates()) {
      if (update.name == name) return update.node;
    }
    return NodeId{-1};
  };
  NodeId parameter = kept.find_variable("w")->node;
  NodeId new_value = update_of("w");
  NodeId copy_update = update_of("w@bf16");
  for (const Node& node : kept.nodes())
    CHECK_FALSE((node.op == OpKind::cast && node.inputs.front() == parameter));
  REQUIRE(copy_update >= 0);
  const Node& narrowing = kept.node(copy_update);
  CHECK(narrowing.op == OpKind::cast);
  CHECK(narrowing.inputs == std::vector<NodeId>{new_value});
  CHECK(narrowing.phase == Phase::update);

  // The same results, the copy holding the weight rounded (as the feeds and the runtime keep it),
  // and after the step the new weight rounded.
  CHECK(outputs_of(kept, test::sample_feeds(kept)) == outputs_of(graph, test::sample_feeds(graph)));
  std::vector<NodeId> fetch{new_value, copy_update};
  std::vector<HostTensor> after = evaluate_reference(kept, test::sample_feeds(kept), fetch);
  for (std::size_t i = 0; i < after[0].values.size(); ++i) {
    CHECK(after[1].values[i] == round_to_format(after[0].values[i], format_of(DType::bf16)));
  }
  CHECK(compiler::keep_half_copies(program) == 0);
}

TEST_CASE("half-copies: a weight not updated gets a copy when the backward pass reads it so") {
  // A split batch's micro-step: forward and backward, the update in a plan of its own. An eval
  // step (forward only) keeps its casts: a copy would hold memory the step does not.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w1(graph, graph.add_variable("w1", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor w2(graph, graph.add_variable("w2", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor hidden = cast(matmul(cast(x, DType::bf16), cast(w1, DType::bf16)), DType::f32);
  Tensor out = cast(matmul(cast(hidden, DType::bf16), cast(w2, DType::bf16)), DType::f32);
  graph.add_output("loss", sum(out, {0, 1}).id());
  graph.set_phase(Phase::backward);
  Tensor hidden_grad = matmul(cast(out * 2.0, DType::bf16), cast(w2, DType::bf16));
  graph.add_output("hidden_grad", cast(hidden_grad, DType::f32).id());
  Program program{graph, {}};
  CHECK(compiler::keep_half_copies(program) == 2);  // both casts of w2
  const Graph& kept = program.graph;
  INFO(kept.to_text());
  REQUIRE(kept.find_variable("w2@bf16") != nullptr);
  CHECK(kept.find_variable("w1@bf16") == nullptr);
  CHECK(kept.updates().empty());  // the runtime rounds w2 into its copy when w2 is written
  CHECK(outputs_of(kept, test::sample_feeds(kept)) == outputs_of(graph, test::sample_feeds(graph)));

  // With its layers recomputed, the backward pass rounds w2 again with the layer's forward pass:
  // no copy to keep between the passes.
  Program recomputing{graph, {}};
  CHECK(compiler::keep_half_copies(recomputing, true) == 0);
  CHECK(recomputing.graph.variables().size() == 2);
}

TEST_CASE("matmul fusion leaves a reshape beyond the kernel's rank to a view") {
  // A 3D convolution's product [N, C, D * H * W] viewed as [N, C, D, H, W].
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{2, 8, 4}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{6, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor y = reshape(matmul(w, x), {2, 6, 1, 2, 2});
  graph.add_output("y", y.id());
  Program program{graph, {}};
  compiler::fuse_matmuls(program);
  for (const compiler::Fusion& fusion : program.fusions) {
    for (NodeId id : fusion.nodes)
      CHECK(program.graph.node(id).op != OpKind::reshape);
  }
  CHECK_NOTHROW(compiler::compile_step(graph, {}));
}

TEST_CASE("elementwise fusion joins chains of one shape and stops at other shapes") {
  Fixture f;
  Tensor mask = iota(f.graph, {4, 8}, 1) > 3;  // static: computed once, any position
  Tensor chain = where(mask, tanh(f.x * 2.0 + 1.0), 0.0);
  Tensor total = sum(chain, {1});   // a reduction ends the chain
  Tensor other = exp(total) + 1.0;  // another shape: another fusion
  f.graph.add_output("chain", chain.id());
  f.graph.add_output("other", other.id());
  Program program{f.graph, {}};
  CHECK(compiler::fuse_elementwise(program) > 0);
  REQUIRE(program.fusions.size() == 2);
  for (const compiler::Fusion& fusion : program.fusions) {
    CHECK(fusion.pattern == "elementwise");
    Shape shape = program.graph.node(fusion.nodes.front()).type.shape;
    for (NodeId id : fusion.nodes) {
      CHECK(program.graph.node(id).type.shape == shape);
      CHECK(graph::op_class(program.graph.node(id).op) == OpClass::elementwise);
    }
  }
  CHECK(program.fusions[0].nodes.size() == 4);  // mul, add, tanh, where
}

TEST_CASE("schedule-updates moves an update to follow its gradient, still updating in place") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w1(graph, graph.add_variable("w1", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  Tensor w2(graph, graph.add_variable("w2", {{16, 2}, DType::f32}, VariableRole::parameter, {}));
  Tensor hidden = tanh(matmul(x, w1));
  Tensor out = matmul(hidden, w2);
  graph.add_output("loss", sum(out, {0, 1}).id());
  graph.set_phase(Phase::backward);  // as autodiff traces it: w2's gradient first
  Tensor out_grad = out * 0.5;
  Tensor grad2 = matmul(transpose(hidden, {1, 0}), out_grad);
  Tensor hidden_grad = matmul(out_grad, transpose(w2, {1, 0})) * (1.0 - hidden * hidden);
  Tensor grad1 = matmul(transpose(x, {1, 0}), hidden_grad);
  graph.set_phase(Phase::update);  // the optimizer's loop, parameter by parameter
  graph.set_update("w1", (w1 - 0.1 * grad1).id());
  graph.set_update("w2", (w2 - 0.1 * grad2).id());
  Program program{graph, {}};
  CHECK(compiler::schedule_updates(program) > 0);
  const Graph& scheduled = program.graph;
  auto update_of = [&](const char* name) {
    for (const NamedNode& update : scheduled.updates()) {
      if (update.name == name) return update.node;
    }
    return NodeId{-1};
  };
  NodeId last_backward = 0;
  for (std::size_t i = 0; i < scheduled.size(); ++i) {
    if (scheduled.nodes()[i].phase == Phase::backward) last_backward = static_cast<NodeId>(i);
  }
  CHECK(update_of("w2") < last_backward);  // before w1's gradient is complete
  CHECK(update_of("w1") > last_backward);
  CHECK(outputs_of(scheduled, test::sample_feeds(scheduled)) ==
        outputs_of(graph, test::sample_feeds(graph)));
  CHECK(compiler::schedule_updates(program) == 0);

  compiler::Plan plan =
      compiler::build_plan(compiler::compile_step(graph, {}), {}, compiler::PrecisionPolicy{});
  for (const NamedNode& update : plan.graph.updates()) {
    INFO(update.name);
    NodeId variable = plan.graph.find_variable(update.name)->node;
    CHECK(plan.memory.buffer_of[static_cast<std::size_t>(update.node)] ==
          plan.memory.buffer_of[static_cast<std::size_t>(variable)]);
  }
}

TEST_CASE(
    "schedule-updates brings a weight's decay term, which reads no gradient, with its reader") {
  // AdamW's decoupled decay, lr * weight_decay * w: placed where its operands are ready (after the
  // forward pass's last read of w), each weight's term would live until its gradient.
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  Tensor lr(graph, graph.add_variable("lr", {{}, DType::f32}, VariableRole::statistic, {}));
  Tensor hidden = tanh(matmul(x, w));
  graph.add_output("loss", sum(hidden, {0, 1}).id());
  graph.set_phase(Phase::backward);
  Tensor gradient = matmul(transpose(x, {1, 0}), hidden * 0.5);
  graph.set_phase(Phase::update);
  Tensor rate = lr * 0.01;
  Tensor decay = rate * w;
  Tensor stepped = w - 0.1 * gradient;
  graph.set_update("w", (stepped - decay).id());
  Program program{graph, {}};
  compiler::schedule_updates(program);
  const Graph& scheduled = program.graph;
  std::size_t last_backward = 0;
  for (std::size_t i = 0; i < scheduled.size(); ++i) {
    if (scheduled.nodes()[i].phase == Phase::backward) last_backward = i;
  }
  for (std::size_t i = 0; i < scheduled.size(); ++i) {
    const graph::Node& node = scheduled.nodes()[i];
    if (node.phase != Phase::update || graph::element_count(node.type.shape) <= 1) continue;
    INFO(i << ": " << graph::op_name(node.op));
    CHECK(i > last_backward);
  }
  CHECK(outputs_of(scheduled, test::sample_feeds(scheduled)) ==
        outputs_of(graph, test::sample_feeds(graph)));
}

namespace {

// A step with dynamic loss scaling's shape: a weight's gradient, a 16-bit product, is widened and
// unscaled, every gradient is checked for non-finite values, and the update takes the gradient
// only when every check passed (`checked`), else the plain one.
struct LossScaledStep {
  Graph graph;
  NodeId gradient16 = -1;
  NodeId unscaled = -1;

  explicit LossScaledStep(bool checked) {
    Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
    Tensor w(graph, graph.add_variable("w", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
    Tensor scale(graph, graph.add_variable("scale", {{}, DType::f32}, VariableRole::statistic, {}));
    Tensor hidden = tanh(matmul(x, w));
    graph.add_output("loss", sum(hidden, {0, 1}).id());
    graph.set_phase(Phase::backward);
    Tensor gradient = cast(matmul(transpose(x, {1, 0}), hidden), DType::cb16);
    Tensor widened = cast(gradient, DType::f32) / scale;
    gradient16 = gradient.id();
    unscaled = widened.id();
    graph.set_phase(Phase::update);
    Tensor bad = sum(cast(logical_not(is_finite(widened)), DType::f32), {0, 1});
    Tensor chosen = checked ? where(equal(bad, 0.0), widened, 0.0) : widened;
    graph.set_update("w", (w - 0.1 * chosen).id());
    graph.add_output("bad", bad.id());
  }
};

}  // namespace

TEST_CASE("recompute: an update waiting for every gradient's check widens the 16-bit gradient") {
  LossScaledStep step(true);
  Program program{step.graph, {}};
  CHECK(compiler::recompute_values(program) == 2);  // the widening and the division
  const Graph& recomputed = program.graph;
  INFO(recomputed.to_text());
  NodeId update = -1;
  for (const NamedNode& named : recomputed.updates())
    update = named.node;
  NodeId chosen = recomputed.node(update).inputs[1];  // 0.1 * where(...)
  NodeId where_node = recomputed.node(chosen).inputs[1];
  REQUIRE(recomputed.node(where_node).op == OpKind::where);
  NodeId again = recomputed.node(where_node).inputs[1];
  CHECK(again != step.unscaled);
  CHECK(recomputed.node(again).op == OpKind::div);
  NodeId widened_again = recomputed.node(again).inputs[0];
  CHECK(recomputed.node(widened_again).op == OpKind::cast);
  CHECK(recomputed.node(widened_again).inputs[0] == step.gradient16);
  CHECK(widened_again == where_node - 2);  // just before its reader

  // The same loss, check and new weight, bit for bit.
  std::vector<NodeId> fetch{update, *recomputed.find_output("bad")};
  std::vector<NodeId> fetch_before{step.graph.updates().front().node,
                                   *step.graph.find_output("bad")};
  Feeds feeds = test::sample_feeds(step.graph);
  std::vector<HostTensor> after = evaluate_reference(recomputed, feeds, fetch);
  std::vector<HostTensor> before = evaluate_reference(step.graph, feeds, fetch_before);
  CHECK(after[0].values == before[0].values);
  CHECK(after[1].values == before[1].values);
  CHECK(compiler::recompute_values(program) == 0);

  // The check's kernel keeps the unscaled gradient in registers: only the update reads the
  // gradient again, from the 16-bit product, in its own kernel.
  CHECK(compiler::fuse_elementwise(program) > 0);
  const compiler::Fusion* check = fusion_of(program, step.unscaled);
  REQUIRE(check != nullptr);
  CHECK(fusion_of(program, again) == fusion_of(program, where_node));
  CHECK(fusion_of(program, again) != check);
  for (NodeId reader = 0; reader < static_cast<NodeId>(recomputed.size()); ++reader) {
    const std::vector<NodeId>& inputs = recomputed.node(reader).inputs;
    if (std::find(inputs.begin(), inputs.end(), step.unscaled) != inputs.end())
      CHECK(fusion_of(program, reader) == check);
  }
}

TEST_CASE(
    "recompute: a split batch's update unscales its summed gradient again where it reads it") {
  // The gradient is the update's input: unscaled once for the check, kept there, it would take
  // a whole copy of the gradients until the last update (4.7 GB for Llama 3.2 1B).
  Graph graph;
  Tensor w(graph, graph.add_variable("w", {{8, 16}, DType::f32}, VariableRole::parameter, {}));
  Tensor summed(graph, graph.add_input("gradient/w", {{8, 16}, DType::f32}));
  Tensor scale(graph, graph.add_variable("scale", {{}, DType::f32}, VariableRole::statistic, {}));
  graph.set_phase(Phase::update);
  Tensor unscaled = summed / scale;
  Tensor bad = sum(cast(logical_not(is_finite(unscaled)), DType::f32), {0, 1});
  graph.set_update("w", (w - 0.1 * where(equal(bad, 0.0), unscaled, 0.0)).id());
  graph.add_output("bad", bad.id());
  Program program{graph, {}};
  CHECK(compiler::recompute_values(program) == 1);  // the division, from the input
  const Graph& recomputed = program.graph;
  INFO(recomputed.to_text());
  NodeId where_node =
      recomputed.node(recomputed.node(recomputed.updates().front().node).inputs[1]).inputs[1];
  REQUIRE(recomputed.node(where_node).op == OpKind::where);
  NodeId again = recomputed.node(where_node).inputs[1];
  CHECK(again != unscaled.id());
  CHECK(recomputed.node(again).op == OpKind::div);
  CHECK(recomputed.node(again).inputs[0] == summed.id());
  Feeds feeds = test::sample_feeds(graph);
  std::vector<NodeId> after{recomputed.updates().front().node};
  std::vector<NodeId> before{graph.updates().front().node};
  CHECK(evaluate_reference(recomputed, feeds, after)[0].values ==
        evaluate_reference(graph, feeds, before)[0].values);
}

TEST_CASE("recompute: a value its reader can share a kernel with is not computed twice") {
  LossScaledStep step(false);  // the update reads the gradient without waiting for the check
  Program program{step.graph, {}};
  CHECK(compiler::recompute_values(program) == 0);
}

namespace {

// Two 3x3 convolutions (padding 1) and their gradients, as a training step traces them.
struct ConvolutionStep {
  Graph graph;
  NodeId first_windows = -1;

  ConvolutionStep() {
    Tensor x(graph, graph.add_input("x", {{2, 8, 12, 12}, DType::f32}));
    Tensor w1(graph,
              graph.add_variable("w1", {{8, 8, 3, 3}, DType::f32}, VariableRole::parameter, {}));
    Tensor w2(graph,
              graph.add_variable("w2", {{8, 8, 3, 3}, DType::f32}, VariableRole::parameter, {}));
    Tensor hidden = tanh(nn::convolve(x, w1, 1, 1));
    Tensor y = nn::convolve(hidden, w2, 1, 1);
    Tensor loss = sum(y * y, {0, 1, 2, 3});
    graph.add_output("loss", loss.id());
    for (std::size_t i = 0; i < graph.size(); ++i) {
      if (graph.nodes()[i].op == OpKind::windows && first_windows < 0)
        first_windows = static_cast<NodeId>(i);
    }
    graph.set_phase(Phase::backward);
    std::vector<Tensor> grads = gradients(loss, std::vector<Tensor>{w1, w2, x});
    graph.add_output("w1_grad", grads[0].id());
    graph.add_output("w2_grad", grads[1].id());
    graph.add_output("x_grad", grads[2].id());
  }
};

}  // namespace

TEST_CASE("recompute-windows: a weight's gradient reads windows made again from the input") {
  ConvolutionStep step;
  Program program{step.graph, {}};
  CHECK(compiler::recompute_windows(program) == 6);  // per convolution: pad, windows, reshape
  const Graph& g = program.graph;
  INFO(g.to_text());
  CHECK(count_ops(g, OpKind::windows) == 4);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Node& node = g.nodes()[i];
    for (NodeId operand : node.inputs) {
      const Node& read = g.node(operand);
      bool windows_value =
          read.op == OpKind::windows ||
          (read.op == OpKind::reshape && g.node(read.inputs[0]).op == OpKind::windows);
      if (windows_value) CHECK(read.phase == node.phase);  // each phase its own windows
    }
    if (node.op == OpKind::windows && node.phase == Phase::backward) {
      const Node& padded = g.node(node.inputs[0]);
      CHECK(padded.op == OpKind::pad);
      CHECK(padded.phase == Phase::backward);
      CHECK(static_cast<std::size_t>(node.inputs[0]) == i - 1);  // just before the windows
    }
  }
  CHECK(outputs_of(g, test::sample_feeds(g)) ==
        outputs_of(step.graph, test::sample_feeds(step.graph)));
  CHECK(compiler::recompute_windows(program) == 0);

  // The forward windows no longer live until the backward pass: the arena is smaller.
  compiler::MemoryPlan kept_memory = memory_without(step.graph, "recompute-windows");
  compiler::CompiledStep compiled = compiler::compile_step(step.graph, {});
  compiler::MemoryPlan memory = compiler::plan_memory(compiled.program.graph, compiled.kernels);
  INFO("windows kept: " << kept_memory.peak_bytes << " bytes, recomputed: " << memory.peak_bytes);
  CHECK(memory.peak_bytes < kept_memory.peak_bytes);
}

namespace {

// `layers` layers of causal self-attention of `heads` heads over a sequence of `length` (width
// 16), sharing their projections, their probabilities dropped out and rounded to bfloat16 for
// their product with the values, and the gradients of the three projections, as a training step
// traces them.
struct AttentionStep {
  Graph graph;

  AttentionStep(std::int64_t length, std::int64_t heads, int layers = 1) {
    constexpr std::int64_t kWidth = 16;
    std::int64_t head_width = kWidth / heads;
    Tensor h(graph, graph.add_input("x", {{2, length, kWidth}, DType::f32}));
    Tensor step(graph, graph.add_variable("step", {{}, DType::i32}, VariableRole::statistic, {}));
    auto projection = [&](const char* name) {
      return Tensor(graph, graph.add_variable(name, {{kWidth, kWidth}, DType::f32},
                                              VariableRole::parameter, {}));
    };
    std::vector<Tensor> weights{projection("wq"), projection("wk"), projection("wv")};
    for (int layer = 0; layer < layers; ++layer) {
      auto heads_of = [&](const Tensor& w) {
        Tensor projected = matmul(h, w);
        return transpose(reshape(projected, {2, length, heads, head_width}), {0, 2, 1, 3});
      };
      Tensor q = heads_of(weights[0]);
      Tensor k = heads_of(weights[1]);
      Tensor v = heads_of(weights[2]);
      Tensor scores = matmul(q, swap_last_axes(k)) * 0.25;
      Tensor causal = iota(graph, {length, length}, 1) <= iota(graph, {length, length}, 0);
      Tensor masked = where(causal, scores, -1e9);
      Tensor probabilities = dropout(softmax(masked, -1), step, 0.25, 5, 1 + layer);
      Tensor context = matmul(cast(cast(probabilities, DType::bf16), DType::f32), v);
      h = reshape(transpose(context, {0, 2, 1, 3}), {2, length, kWidth});
    }
    Tensor loss = sum(h * h, {0, 1, 2});
    graph.add_output("loss", loss.id());
    graph.set_phase(Phase::backward);
    std::vector<Tensor> grads = gradients(loss, weights);
    for (std::size_t i = 0; i < grads.size(); ++i)
      graph.add_output("grad" + std::to_string(i), grads[i].id());
  }
};

std::size_t count_ops_in(const Graph& g, OpKind op, Phase phase) {
  return static_cast<std::size_t>(
      std::count_if(g.nodes().begin(), g.nodes().end(),
                    [&](const Node& node) { return node.op == op && node.phase == phase; }));
}

}  // namespace

TEST_CASE(
    "recompute-attention: a long sequence's probabilities are made again for the backward "
    "pass, for the same bits") {
  AttentionStep step(64, 2);
  Program program{step.graph, {}};
  compiler::eliminate_dead_code(program);  // the gradients of the scale and the mask's fill
  Graph before = program.graph;
  std::size_t added = compiler::recompute_attention(program);
  const Graph& g = program.graph;
  INFO(g.to_text());
  // The scores' product, the scale, the mask, the softmax, the dropout and the two casts; the
  // queries, the transposed keys and the mask are read where they are.
  CHECK(added == 7);
  CHECK(count_ops_in(g, OpKind::softmax, Phase::backward) == 1);
  CHECK(count_ops_in(g, OpKind::dropout, Phase::backward) ==
        count_ops_in(before, OpKind::dropout, Phase::backward) + 1);
  CHECK(count_ops_in(g, OpKind::matmul, Phase::backward) ==
        count_ops_in(before, OpKind::matmul, Phase::backward) + 1);
  // No value of the probabilities' size that the forward pass makes is read by a later phase.
  std::int64_t probabilities = 2 * 2 * 64 * 64;
  for (const Node& node : g.nodes()) {
    if (node.phase == Phase::forward) continue;
    for (NodeId operand : node.inputs) {
      const Node& read = g.node(operand);
      if (read.phase == Phase::forward) CHECK(element_count(read.type.shape) < probabilities);
    }
  }
  Feeds feeds = test::sample_feeds(step.graph);
  CHECK(outputs_of(g, feeds) == outputs_of(step.graph, feeds));
  CHECK(compiler::recompute_attention(program) == 0);

  // The probabilities no longer live until the backward pass: the arena of two layers, whose
  // first layer's probabilities would be kept through the second's backward pass, is smaller.
  AttentionStep layers(64, 2, 2);
  compiler::CompiledStep compiled = compiler::compile_step(layers.graph, {});
  compiler::MemoryPlan memory = compiler::plan_memory(compiled.program.graph, compiled.kernels);
  compiler::MemoryPlan kept = memory_without(layers.graph, "recompute-attention");
  INFO("probabilities kept: " << kept.peak_bytes << " bytes, recomputed: " << memory.peak_bytes);
  CHECK(memory.peak_bytes < kept.peak_bytes);
}

TEST_CASE(
    "recompute-activations: SwiGLU's sigmoid and product and the norms' outputs are made again "
    "for the backward pass, for the same values") {
  models::TracedStep step = test::traced_step(
      "{name: llama, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, num_heads: 4, "
      "filter_size: 32, max_position_embeddings: 8, position_embedding_type: rotary, "
      "rotary_dim: 4, norm_type: rmsnorm, nonlinearity: swiglu, share_embedding_weights: false, "
      "use_bias_in_output: false, use_projection_bias_in_attention: false}",
      2);
  Program program{step.graph, {}};
  compiler::eliminate_dead_code(program);
  Graph before = program.graph;
  CHECK(compiler::recompute_activations(program) > 0);
  const Graph& g = program.graph;
  INFO(g.to_text());
  // Each layer's sigmoid of the gate's input, once more where the backward pass reads it.
  CHECK(count_ops_in(g, OpKind::sigmoid, Phase::backward) ==
        count_ops_in(before, OpKind::sigmoid, Phase::backward) + 2);
  // No forward f32 value an elementwise node makes from what is stored anyway is read later.
  for (const Node& node : g.nodes()) {
    if (node.phase == Phase::forward) continue;
    for (NodeId operand : node.inputs) {
      const Node& read = g.node(operand);
      if (read.phase == Phase::forward && read.op == OpKind::sigmoid) FAIL(g.to_text());
    }
  }
  Feeds feeds = test::sample_feeds(step.graph);
  CHECK(outputs_of(g, feeds) == outputs_of(before, feeds));
  CHECK(compiler::recompute_activations(program) == 0);
  // The recomputed values no longer live from the forward pass to the backward.
  compiler::MemoryPlan memory = memory_without(step.graph, "");
  compiler::MemoryPlan kept = memory_without(step.graph, "recompute-activations");
  INFO("kept: " << kept.peak_bytes << " bytes, recomputed: " << memory.peak_bytes);
  CHECK(memory.peak_bytes < kept.peak_bytes);
}

TEST_CASE(
    "recompute-layers: the backward pass runs each layer's forward pass again from the layers' "
    "outputs, for the same values") {
  models::TracedStep step = test::traced_step(
      "{name: gpt2, vocab_size: 40, hidden_size: 16, num_hidden_layers: 3, num_heads: 4, "
      "filter_size: 32, max_position_embeddings: 8, dropout_rate: 0.1, "
      "attention_dropout_rate: 0.1}",
      2);
  Program program{step.graph, {}};
  compiler::eliminate_dead_code(program);
  Graph before = program.graph;
  CHECK(compiler::recompute_layers(program) > 0);
  const Graph& g = program.graph;
  INFO(g.to_text());
  // Each layer's products once more in the backward pass: the queries', keys' and values'
  // projections, the scores, the probabilities times the values, the output projection and the
  // first feed-forward product (the second's result only leaves the layer, summed).
  CHECK(count_ops_in(g, OpKind::matmul, Phase::backward) ==
        count_ops_in(before, OpKind::matmul, Phase::backward) + 3 * 7);
  CHECK(count_ops_in(g, OpKind::dropout, Phase::backward) >
        count_ops_in(before, OpKind::dropout, Phase::backward));
  // A later phase reads no forward value of a layer but what leaves it (the next layer's input)
  // and what every step computes alike (the causal mask).
  auto layer = [&](const Node& node) { return listed_module(g.scope_name(node.scope)); };
  std::vector<bool> statics = compiler::static_values(g);
  for (const Node& node : g.nodes()) {
    if (node.phase == Phase::forward) continue;
    for (NodeId operand : node.inputs) {
      const Node& read = g.node(operand);
      if (read.phase != Phase::forward || layer(read).empty() ||
          op_class(read.op) == OpClass::leaf || statics[static_cast<std::size_t>(operand)])
        continue;
      bool leaves = false;
      for (const Node& reader : g.nodes()) {
        bool reads =
            std::find(reader.inputs.begin(), reader.inputs.end(), operand) != reader.inputs.end();
        leaves =
            leaves || (reads && reader.phase == Phase::forward && layer(reader) != layer(read));
      }
      INFO("%" << operand << " " << op_name(read.op) << " in " << layer(read));
      CHECK(leaves);
    }
  }
  Feeds feeds = test::sample_feeds(step.graph);
  CHECK(outputs_of(g, feeds) == outputs_of(before, feeds));
  CHECK(compiler::recompute_layers(program) == 0);
  // Only the layers' outputs live from the forward pass to the backward: less memory at the peak.
  compiler::CompiledStep recomputed = compiler::compile_step(step.graph, {{}, {}, true});
  compiler::MemoryPlan memory = compiler::plan_memory(recomputed.program.graph, recomputed.kernels);
  compiler::MemoryPlan kept = memory_without(step.graph, "");
  INFO("kept: " << kept.peak_bytes << " bytes, recomputed: " << memory.peak_bytes);
  CHECK(memory.peak_bytes < kept.peak_bytes);
  CHECK(memory.persistent_bytes == kept.persistent_bytes);
  // A layer made again reads its weights before their updates, which still write them in place.
  const Graph& compiled = recomputed.program.graph;
  for (const NamedNode& update : compiled.updates()) {
    INFO(update.name);
    NodeId variable = compiled.find_variable(update.name)->node;
    CHECK(memory.buffer_of[static_cast<std::size_t>(update.node)] ==
          memory.buffer_of[static_cast<std::size_t>(variable)]);
  }
}

TEST_CASE(
    "recompute-layers: an RMS norm's square made again for the backward pass stays out of the "
    "forward pass's kernels, so only the layers' outputs live from one pass to the other") {
  models::TracedStep step = test::traced_step(
      "{name: llama, vocab_size: 40, hidden_size: 16, num_hidden_layers: 3, num_heads: 4, "
      "filter_size: 32, max_position_embeddings: 8, position_embedding_type: rotary, "
      "rotary_dim: 4, norm_type: rmsnorm, nonlinearity: swiglu, share_embedding_weights: false, "
      "use_bias_in_output: false, use_projection_bias_in_attention: false, dropout_rate: 0.0, "
      "attention_dropout_rate: 0.0}",
      2);
  compiler::PrecisionPolicy cbfloat16{true, DType::cb16, 1};
  compiler::CompiledStep compiled = compiler::compile_step(step.graph, {cbfloat16, {}, true});
  const Graph& g = compiled.program.graph;
  compiler::MemoryPlan memory = compiler::plan_memory(g, compiled.kernels);
  // A kernel runs where its first node comes.
  auto forward_kernel = [&](std::int32_t kernel) {
    NodeId first = compiled.kernels.at(static_cast<std::size_t>(kernel)).nodes.front();
    return g.node(first).phase == Phase::forward;
  };
  std::size_t crossing = 0;
  for (const compiler::Buffer& buffer : memory.buffers) {
    if (buffer.kind != compiler::BufferKind::temporary ||
        buffer.last_use >= static_cast<std::int32_t>(compiled.kernels.size()) ||
        !forward_kernel(buffer.first_use) || forward_kernel(buffer.last_use))
      continue;
    INFO("%" << buffer.value << " " << op_name(g.node(buffer.value).op) << " "
             << g.scope_name(g.node(buffer.value).scope));
    CHECK(g.node(buffer.value).phase == Phase::forward);
    const TensorType& type = g.node(buffer.value).type;
    crossing += type == TensorType{{2, 8, 16}, DType::f32} ? 1 : 0;
  }
  // The embedding's output and each layer's (the last one's read by the final norm's backward
  // pass), each stored once.
  CHECK(crossing == 4);
}

namespace {

// The program after `last` of the standard passes with `precision`, `left_out` left out.
Program program_after(const Graph& graph, const compiler::PrecisionPolicy& precision,
                      std::string_view last, std::string_view left_out) {
  Program program{graph, {}};
  std::optional<Program> seen;
  compiler::standard_passes(precision).without(left_out).run(
      program, [&](std::string_view pass, const Program& after) {
        if (pass == last) seen = after;
      });
  REQUIRE(seen);
  return *seen;
}

}  // namespace

TEST_CASE(
    "attention's blocks of keys and values are slices of their 16-bit form, copied again for "
    "the backward pass") {
  // Llama's grouped queries over 64 positions, 16 at a time: under the causal mask each block
  // multiplies the keys and values up to its last query, a slice of them.
  test::CheckedTrainerModel checked = test::checked_model(
      "{name: llama, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, num_heads: 4, "
      "attention_module: multiquery_attention, extra_attention_params: {num_kv_groups: 2}, "
      "filter_size: 32, max_position_embeddings: 64, position_embedding_type: rotary, "
      "rotary_dim: 4, norm_type: rmsnorm, nonlinearity: swiglu, share_embedding_weights: false, "
      "use_bias_in_output: false, use_projection_bias_in_attention: false}");
  models::TraceOptions options = checked.training_options();
  options.attention_query_block = 16;
  models::TracedStep step = models::trace_step(checked.model, 2, options);
  compiler::PrecisionPolicy precision{true, DType::bf16, 1};
  Program program = program_after(step.graph, precision, "recompute-activations", "");
  const Graph& g = program.graph;
  INFO(g.to_text());
  std::size_t sliced = 0;
  for (const Node& node : g.nodes()) {
    for (NodeId operand : node.inputs) {
      const Node& read = g.node(operand);
      if (read.op != OpKind::slice) continue;
      // A product reads its blocks of keys and values as slices of their rounded whole, which
      // is rounded once.
      if (node.op == OpKind::matmul) {
        ++sliced;
        CHECK(read.type.dtype == DType::bf16);
        CHECK(g.node(read.inputs[0]).type.dtype == DType::bf16);
      }
      // A later phase copies a slice again instead of reading the one the forward pass made.
      if (node.phase != Phase::forward) CHECK(read.phase != Phase::forward);
    }
  }
  // The first three of the four blocks read slices; the last reads all the keys. In each of the
  // two layers, at least the forward product with the values and the backward product with the
  // keys read theirs directly.
  CHECK(sliced >= 2 * 2 * 3);
  Program kept =
      program_after(step.graph, precision, "recompute-attention", "recompute-activations");
  // The same variables (the weights' 16-bit copies among them), so the same feeds.
  Feeds feeds = test::sample_feeds(g);
  CHECK(outputs_of(g, feeds) == outputs_of(kept.graph, feeds));
}

TEST_CASE("recompute-attention: short sequences keep their probabilities") {
  AttentionStep step(4, 2);  // the probabilities are a small share of what the backward reads
  Program program{step.graph, {}};
  compiler::eliminate_dead_code(program);
  CHECK(compiler::recompute_attention(program) == 0);
}

TEST_CASE(
    "mixed precision: a convolution's windows are taken of its 16-bit input, their gradient "
    "summed from the 16-bit product") {
  ConvolutionStep step;
  Program program{step.graph, {}};
  CHECK(compiler::lower_precision(program, {true, DType::bf16, 1}) > 0);
  CHECK(compiler::eliminate_dead_code(program) > 0);
  const Graph& g = program.graph;
  INFO(g.to_text());
  NodeId windows = -1;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Node& node = g.nodes()[i];
    if (node.op != OpKind::windows) continue;
    CHECK(node.type.dtype == DType::bf16);
    CHECK(g.node(node.inputs[0]).op == OpKind::pad);
    CHECK(g.node(node.inputs[0]).type.dtype == DType::bf16);
    if (windows < 0) windows = static_cast<NodeId>(i);
  }
  CHECK(count_ops(g, OpKind::windows) == 2);  // the backward pass reads the forward's
  // The input gradients sum the 16-bit products' windows into f32 sums: no f32 copy of them.
  CHECK(count_ops(g, OpKind::windows_sum) == 2);
  for (const Node& node : g.nodes()) {
    if (node.op == OpKind::windows_sum) {
      CHECK(node.type.dtype == DType::f32);
      CHECK(g.node(node.inputs[0]).type.dtype == DType::bf16);
    }
    bool window_sized = node.type.rank() == 5;
    if (window_sized) CHECK(node.type.dtype == DType::bf16);
  }
  // The same values as the f32 windows rounded: a cast moves no value, a pad's zeros are zeros.
  Feeds feeds = test::sample_feeds(step.graph);
  std::vector<double> rounded =
      evaluate_reference(step.graph, feeds, std::vector<NodeId>{step.first_windows}).front().values;
  for (double& value : rounded)
    value = round_to_format(value, format_of(DType::bf16));
  CHECK(evaluate_reference(g, feeds, std::vector<NodeId>{windows}).front().values == rounded);
}

TEST_CASE(
    "convolve-gradients: an f32 input gradient is the output gradient padded and convolved with "
    "the mirrored weights") {
  ConvolutionStep step;
  Program program{step.graph, {}};
  REQUIRE(count_ops(program.graph, OpKind::windows_sum) == 2);
  CHECK(compiler::convolve_gradients(program) == 2);  // x's gradient and the hidden value's
  const Graph& g = program.graph;
  INFO(g.to_text());
  CHECK(count_ops(g, OpKind::windows_sum) == 0);
  CHECK(count_ops(g, OpKind::windows) == 4);
  for (const Node& node : g.nodes()) {
    if (node.op != OpKind::windows || node.phase != Phase::backward) continue;
    const Node& padded = g.node(node.inputs[0]);
    CHECK(padded.op == OpKind::pad);
    CHECK(padded.attrs.begins == std::vector<std::int64_t>{0, 0, 2, 2});  // the kernel less one
  }
  // The same sums in another order.
  Feeds feeds = test::sample_feeds(step.graph);
  std::vector<double> rewritten = outputs_of(g, feeds);
  std::vector<double> traced = outputs_of(step.graph, feeds);
  REQUIRE(rewritten.size() == traced.size());
  for (std::size_t i = 0; i < traced.size(); ++i)
    CHECK(rewritten[i] == Approx(traced[i]).epsilon(1e-12).margin(1e-12));
  CHECK(compiler::convolve_gradients(program) == 0);

  // Under mixed precision the gradient sums a 16-bit product's windows: left as it is.
  Program mixed{step.graph, {}};
  CHECK(compiler::lower_precision(mixed, {true, DType::bf16, 1}) > 0);
  CHECK(compiler::convolve_gradients(mixed) == 0);
}

TEST_CASE("fuse-matmul: a product forms a convolution's windows as it multiplies") {
  ConvolutionStep step;
  auto windows_in_products = [](const compiler::CompiledStep& compiled) {
    std::size_t count = 0;
    for (const compiler::Fusion& fusion : compiled.program.fusions) {
      if (fusion.pattern != "matmul") continue;
      for (NodeId id : fusion.nodes)
        count += compiled.program.graph.node(id).op == OpKind::windows;
    }
    return count;
  };
  compiler::CompiledStep f32 = compiler::compile_step(step.graph, {});
  INFO(f32.program.graph.to_text());
  // Every windows op: two forward products, two weights' gradients, two input gradients.
  CHECK(count_ops(f32.program.graph, OpKind::windows) == 6);
  CHECK(windows_in_products(f32) == 6);
  // bfloat16 windows too, of the forward products and the weights' gradients; the input
  // gradients sum the 16-bit product onto the windows (windows_sum) as the kernel computes it.
  compiler::CompileOptions mixed;
  mixed.precision = {true, DType::bf16, 1};
  compiler::CompiledStep bf16 = compiler::compile_step(step.graph, mixed);
  CHECK(count_ops(bf16.program.graph, OpKind::windows) == 4);
  CHECK(windows_in_products(bf16) == 4);
  CHECK(count_ops(bf16.program.graph, OpKind::windows_sum) == 2);
  std::size_t summed = 0;
  for (const compiler::Fusion& fusion : bf16.program.fusions) {
    if (fusion.pattern != "matmul") continue;
    for (NodeId id : fusion.nodes)
      summed += bf16.program.graph.node(id).op == OpKind::windows_sum;
  }
  CHECK(summed == 2);
}

TEST_CASE("simplify: a 1x1 convolution's windows and their sums are reshapes, a pad of 0 nothing") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{2, 3, 5, 5}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{4, 3, 1, 1}, DType::f32}, VariableRole::parameter, {}));
  Tensor y = nn::convolve(x, w, 1, 0);
  Tensor loss = sum(y * y, {0, 1, 2, 3});
  graph.add_output("loss", loss.id());
  graph.set_phase(Phase::backward);
  graph.add_output("x_grad", gradients(loss, std::vector<Tensor>{x})[0].id());
  REQUIRE(count_ops(graph, OpKind::windows) == 1);
  REQUIRE(count_ops(graph, OpKind::windows_sum) == 1);
  Program program{graph, {}};
  CHECK(compiler::simplify_algebra(program) > 0);
  CHECK(compiler::eliminate_dead_code(program) > 0);
  CHECK(count_ops(program.graph, OpKind::windows) == 0);
  CHECK(count_ops(program.graph, OpKind::windows_sum) == 0);
  CHECK(count_ops(program.graph, OpKind::pad) == 0);
  CHECK(outputs_of(program.graph, test::sample_feeds(program.graph)) ==
        outputs_of(graph, test::sample_feeds(graph)));
}

TEST_CASE("elementwise fusion keeps a later phase's nodes out of the forward pass's kernels") {
  Fixture f;
  Tensor shifted = f.x + 1.0;
  Tensor out = tanh(shifted);
  f.graph.add_output("y", out.id());
  f.graph.set_phase(Phase::backward);
  // Made again from a forward value for the backward pass: in the forward's kernel it would be
  // computed, and stored, before the forward pass ends.
  Tensor squared = shifted * shifted;
  Tensor combined = squared * 2.0 + out;  // reads the forward kernel's result and squared's
  f.graph.add_output("g", combined.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  REQUIRE(program.fusions.size() == 2);
  for (const compiler::Fusion& fusion : program.fusions) {
    Phase phase = program.graph.node(fusion.nodes.front()).phase;
    for (NodeId id : fusion.nodes)
      CHECK(program.graph.node(id).phase == phase);
  }
  CHECK(program.fusions[1].nodes.front() == squared.id());
  compiler::CompiledStep compiled = compiler::compile_step(f.graph, {});
  CHECK(outputs_of(compiled.program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
}

TEST_CASE("elementwise fusion makes one kernel of the groups a node combines") {
  Fixture f;
  Tensor m(f.graph, f.graph.add_input("m", {{4, 8}, DType::f32}));
  Tensor v(f.graph, f.graph.add_input("v", {{4, 8}, DType::f32}));
  // Adam's moments: each starts a group of its own; the update reads both.
  Tensor next_m = 0.9 * m + 0.1 * f.x;
  Tensor next_v = 0.999 * v + 0.001 * f.x * f.x;
  Tensor update = next_m / (sqrt(next_v) + 1e-8);
  f.graph.add_output("m", next_m.id());
  f.graph.add_output("v", next_v.id());
  f.graph.add_output("update", update.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  REQUIRE(program.fusions.size() == 1);
  CHECK(program.fusions[0].nodes.size() == 10);
  CHECK_NOTHROW(compiler::compile_step(f.graph, {}));
}

TEST_CASE("elementwise fusion keeps groups apart when a value between them would form a cycle") {
  Fixture f;
  Tensor doubled = f.x * 2.0;
  Tensor total = sum(doubled, {0});  // a reduction of the first group, after its first node
  Tensor scaled = f.x * total;       // a group of its own, after the reduction
  Tensor combined = doubled + scaled;
  f.graph.add_output("y", combined.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  // doubled cannot share a kernel with scaled: the sum between them reads doubled and feeds
  // scaled. The add joins scaled's group, whose operands all come before it.
  REQUIRE(program.fusions.size() == 1);
  CHECK(program.fusions[0].nodes == std::vector<NodeId>{scaled.id(), combined.id()});
  compiler::CompiledStep compiled = compiler::compile_step(f.graph, {});
  CHECK(outputs_of(compiled.program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
}

TEST_CASE("a sum over every axis of an f32 value joins the kernel that computes the value, last") {
  Fixture f;
  Tensor squared = f.x * f.x;
  Tensor total = sum(squared, {0, 1});  // global_norm's sum of squares
  Tensor partial = sum(squared, {0});   // not over every axis: a reduce kernel of its own
  Tensor scaled = squared * total;      // reads the sum: not in the sum's kernel
  f.graph.add_output("total", total.id());
  f.graph.add_output("partial", partial.id());
  f.graph.add_output("scaled", scaled.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  REQUIRE(program.fusions.size() == 1);
  CHECK(program.fusions[0].nodes == std::vector<NodeId>{squared.id(), total.id()});
  compiler::CompiledStep compiled = compiler::compile_step(f.graph, {});
  CHECK(outputs_of(compiled.program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
}

TEST_CASE("a gradient's finite check and its norm take their sums in one pass over it") {
  Fixture f;
  Tensor scale(f.graph, f.graph.add_input("scale", {{}, DType::f32}));
  Tensor gradient = f.x / scale;
  Tensor bad = sum(cast(logical_not(is_finite(gradient)), DType::f32), {0, 1});
  Tensor finite = equal(bad, 0.0);
  Tensor norm = sqrt(where(finite, sum(gradient * gradient, {0, 1}), 0.0));
  Tensor stepped = where(finite, gradient, 0.0) * norm;  // waits for both sums
  f.graph.add_output("norm", norm.id());
  f.graph.add_output("stepped", stepped.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  const compiler::Fusion* check = fusion_of(program, gradient.id());
  REQUIRE(check != nullptr);
  NodeId squared = f.graph.node(f.graph.node(norm.id()).inputs[0]).inputs[1];
  NodeId total_of_squares = f.graph.node(squared).inputs[0];
  CHECK(fusion_of(program, total_of_squares) == check);
  CHECK(fusion_of(program, bad.id()) == check);
  CHECK(fusion_of(program, stepped.id()) != check);

  compiler::CompiledStep compiled = compiler::compile_step(f.graph, {});
  CHECK(outputs_of(compiled.program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
}

TEST_CASE("a node that reads a kernel's sum, or leads elsewhere than to sums, stays out of it") {
  Fixture f;
  Tensor squared = f.x * f.x;
  Tensor total = sum(squared, {0, 1});
  Tensor reads_total = squared * total;  // needs the whole sum
  Tensor stored = squared + 1.0;         // an output: would be stored by the sum's kernel
  Tensor again = sum(reads_total, {0, 1});
  f.graph.add_output("again", again.id());
  f.graph.add_output("stored", stored.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  const compiler::Fusion* summing = fusion_of(program, total.id());
  REQUIRE(summing != nullptr);
  CHECK(fusion_of(program, reads_total.id()) != summing);
  CHECK(fusion_of(program, stored.id()) != summing);
  compiler::CompiledStep compiled = compiler::compile_step(f.graph, {});
  CHECK(outputs_of(compiled.program.graph, f.feeds()) == outputs_of(f.graph, f.feeds()));
}

TEST_CASE("a sum of a value no elementwise kernel computes stays a reduce kernel") {
  Fixture f;
  Tensor counted = sum(cast(f.x > 0.0, DType::f32), {0, 1});
  Tensor of_input = sum(f.x, {0, 1});
  f.graph.add_output("counted", counted.id());
  f.graph.add_output("of_input", of_input.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  REQUIRE(program.fusions.size() == 1);  // the comparison, its cast to 0 or 1 and their count
  CHECK(program.fusions[0].nodes.back() == counted.id());
  compiler::CompiledStep compiled = compiler::compile_step(f.graph, {});
  std::size_t reduce_kernels = 0;
  for (const compiler::Kernel& kernel : compiled.kernels)
    reduce_kernels += kernel.name == "reduce" ? 1 : 0;
  CHECK(reduce_kernels == 1);  // the input's own sum
}

TEST_CASE("elementwise fusions stay within their size limit") {
  Fixture f;
  Tensor y = f.x;
  for (std::size_t i = 0; i < compiler::kMaxElementwiseFusion + 10; ++i)
    y = tanh(y);
  f.graph.add_output("y", y.id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  REQUIRE(program.fusions.size() == 2);
  CHECK(program.fusions[0].nodes.size() == compiler::kMaxElementwiseFusion);
}

TEST_CASE("passes that rebuild the graph refuse to run after fusion") {
  Fixture f;
  f.graph.add_output("y", tanh(exp(f.x)).id());
  Program program{f.graph, {}};
  compiler::fuse_elementwise(program);
  CHECK_THROWS_AS(compiler::eliminate_dead_code(program), std::logic_error);
}
