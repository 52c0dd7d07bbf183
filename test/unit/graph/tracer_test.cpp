#include <catch2/catch.hpp>

#include "graph/autodiff.hpp"
#include "graph/fingerprint.hpp"
#include "graph/tensor.hpp"

using namespace csrun::graph;

namespace {

// A tiny "model": a loop of `layers` residual steps, and a side effect counted per trace.
int side_effects = 0;

Graph trace_model(int layers, bool change_op = false) {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  Tensor w(graph, graph.add_variable("model.w", {{8, 8}, DType::f32}, VariableRole::parameter, {}));
  ++side_effects;
  for (int i = 0; i < layers; ++i)
    x = (change_op ? relu(matmul(x, w)) : tanh(matmul(x, w))) + x;
  graph.add_output("loss", mean(x).id());
  return graph;
}

}  // namespace

TEST_CASE("a data-dependent branch on a traced tensor fails and names the model line") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{3}, DType::f32}));
  int line = __LINE__ + 3;
  auto branch = [&] {
    Tensor y = x;
    if (sum(x) > 0.0) y = x * 2.0;
    return y;
  };
  try {
    branch();
    FAIL("no TracingError");
  } catch (const TracingError& error) {
    std::string message = error.what();
    CHECK(
        message.find("converting to bool the traced tensor made by `greater` at tracer_test.cpp:" +
                     std::to_string(line)) != std::string::npos);
    CHECK(message.find("where(condition, a, b)") != std::string::npos);
  }
  // Outside the macro: compilers place a location inside a multi-line macro differently.
  int item_line = __LINE__ + 1;
  auto read_item = [&] { return sum(x).item(); };
  CHECK_THROWS_WITH(
      read_item(),
      Catch::Contains("reading a number (item()) from the traced tensor made by `reduce_sum`") &&
          Catch::Contains("tracer_test.cpp:" + std::to_string(item_line)));
  CHECK_THROWS_AS(x.to_host(), TracingError);
}

TEST_CASE("loops unroll, and model code runs once per trace") {
  side_effects = 0;
  Graph one = trace_model(1);
  Graph three = trace_model(3);
  CHECK(side_effects == 2);
  // Leaves x and w; 3 nodes per layer (matmul, tanh, add); mean.
  CHECK(one.size() == 2 + 3 * 1 + 1);
  CHECK(three.size() == 2 + 3 * 3 + 1);
}

TEST_CASE("fingerprints are stable, and a diff names the first differing node") {
  Graph a = trace_model(2);
  Graph b = trace_model(2);
  CHECK(fingerprint(a) == fingerprint(b));
  CHECK(fingerprint(a).size() == 16);
  CHECK_FALSE(first_difference(a, b));
  Graph c = trace_model(2, true);
  CHECK(fingerprint(a) != fingerprint(c));
  auto difference = first_difference(a, c);
  REQUIRE(difference);
  CHECK(difference->find("node %3 was tanh(%2)") != std::string::npos);
  CHECK(difference->find("it is now relu(%2)") != std::string::npos);
  auto longer = first_difference(a, trace_model(3));
  REQUIRE(longer);
  CHECK(longer->find("node %8 was reduce_mean(%7)") != std::string::npos);
  CHECK(longer->find("it is now matmul(%7, %1)") != std::string::npos);
}

TEST_CASE("shape and dtype mismatches are errors that name the op, operands and line") {
  Graph graph;
  Tensor a(graph, graph.add_input("a", {{2, 3}, DType::f32}));
  Tensor b(graph, graph.add_input("b", {{4, 5}, DType::f32}));
  Tensor ids(graph, graph.add_input("ids", {{2}, DType::i32}));
  CHECK_THROWS_WITH(matmul(a, b),
                    Catch::Contains("matmul(f32[2, 3], f32[4, 5]) at tracer_test.cpp:") &&
                        Catch::Contains("inner dimensions differ"));
  CHECK_THROWS_WITH(a + b, Catch::Contains("cannot broadcast [2, 3] with [4, 5]"));
  CHECK_THROWS_WITH(a + cast(a, DType::bf16), Catch::Contains("cast one of them"));
  CHECK_THROWS_WITH(exp(ids), Catch::Contains("needs a floating-point operand, got i32[2]"));
  CHECK_THROWS_WITH(reshape(a, {4}), Catch::Contains("cannot reshape f32[2, 3] to [4]"));
  CHECK_THROWS_WITH(sum(a, {2}), Catch::Contains("axis 2 is out of range for rank 2"));
  CHECK_THROWS_AS(graph.add_input("a", {{1}, DType::f32}), GraphError);
}

TEST_CASE(
    "windows' sums take their result type from the op, floating only, their gradient the "
    "operand's") {
  Graph graph;
  Tensor g(graph, graph.add_input("g", {{2, 9, 4, 4}, DType::bf16}));
  CHECK(windows_sum(g, {3, 3}).type() == TensorType{{2, 6, 6}, DType::bf16});
  Attributes widened;
  widened.shape = {3, 3};
  widened.dtype = DType::f32;
  Tensor sums = apply(OpKind::windows_sum, {g}, widened);
  CHECK(sums.type() == TensorType{{2, 6, 6}, DType::f32});
  // Its gradient is the windows of the result's gradient, in the operand's type.
  Tensor g_grad = gradients(sum(sums, {0, 1, 2}), std::vector<Tensor>{g})[0];
  CHECK(g_grad.type() == g.type());
  Attributes counted = widened;
  counted.dtype = DType::i32;
  CHECK_THROWS_WITH(apply(OpKind::windows_sum, {g}, counted),
                    Catch::Contains("needs a floating-point result type, got i32"));
}

TEST_CASE("the text form lists nodes, types and model lines") {
  Graph graph = trace_model(1);
  std::string text = graph.to_text();
  CHECK(text.find("%0 = input \"x\" : f32[4, 8]") != std::string::npos);
  CHECK(text.find("%2 = matmul %0, %1 : f32[4, 8]   # tracer_test.cpp:") != std::string::npos);
  CHECK(text.find("output \"loss\" = %5") != std::string::npos);
}

TEST_CASE("a variable that claims to be a 16-bit copy is checked against its parameter") {
  Graph graph;
  graph.add_variable("w", {{8, 8}, DType::f32}, VariableRole::parameter, {});
  graph.add_variable("m", {{8, 8}, DType::f32}, VariableRole::optimizer_state, {});
  auto add_copy = [&](const std::string& of, TensorType type, VariableRole role) {
    Variable copy;
    copy.name = "copy of " + of + " " + type.to_string();
    copy.role = role;
    copy.copy_of = of;
    Node origin;
    origin.op = OpKind::variable;
    origin.type = std::move(type);
    graph.add_variable(copy, origin);
  };
  CHECK_NOTHROW(add_copy("w", {{8, 8}, DType::f16}, VariableRole::half_copy));
  CHECK_THROWS_WITH(add_copy("w", {{8, 8}, DType::f32}, VariableRole::half_copy),
                    Catch::Contains("is a 16-bit copy of w but holds f32[8, 8]"));
  CHECK_THROWS_WITH(add_copy("w", {{8, 4}, DType::bf16}, VariableRole::half_copy),
                    Catch::Contains("which is not an earlier parameter of type f32[8, 4]"));
  CHECK_THROWS_WITH(add_copy("m", {{8, 8}, DType::bf16}, VariableRole::half_copy),
                    Catch::Contains("copies m, which is not an earlier parameter"));
  CHECK_THROWS_WITH(add_copy("nothing", {{8, 8}, DType::bf16}, VariableRole::half_copy),
                    Catch::Contains("copies nothing, which is not"));
  CHECK_THROWS_WITH(add_copy("", {{8, 8}, DType::bf16}, VariableRole::half_copy),
                    Catch::Contains("is a 16-bit copy of no parameter"));
  CHECK_THROWS_WITH(add_copy("w", {{8, 8}, DType::bf16}, VariableRole::parameter),
                    Catch::Contains("copies a parameter but is a parameter"));
}

TEST_CASE("a node becomes a constant of its own type in place, its readers unchanged") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{2}, DType::f32}));
  Tensor w(graph, graph.add_variable("w", {{2}, DType::f32}, VariableRole::parameter, {}));
  Tensor sum = constant(graph, 1.0, {2}) + constant(graph, 2.0, {2});
  Tensor y = x * sum;
  graph.add_output("y", y.id());
  std::size_t size = graph.size();

  Attributes three;
  three.shape = {2};
  three.values = {3.0};
  graph.replace_with_constant(sum.id(), three);
  CHECK(graph.size() == size);
  CHECK(graph.node(sum.id()).op == OpKind::constant);
  CHECK(graph.node(sum.id()).inputs.empty());
  CHECK(graph.node(sum.id()).attrs.values == std::vector<double>{3.0});
  CHECK(graph.node(y.id()).inputs == std::vector<NodeId>{x.id(), sum.id()});
  CHECK(graph.variable_of(w.id()).name == "w");

  Attributes wide = three;
  wide.shape = {3};
  CHECK_THROWS_WITH(graph.replace_with_constant(y.id(), wide),
                    Catch::Contains("is f32[2], not the constant's f32[3]"));
  Attributes miscounted = three;
  miscounted.values = {1.0, 2.0, 3.0};
  CHECK_THROWS_WITH(graph.replace_with_constant(y.id(), miscounted),
                    Catch::Contains("needs one value or one per element"));
  CHECK_THROWS_WITH(graph.replace_with_constant(x.id(), three), Catch::Contains("is a leaf"));
  CHECK_THROWS_WITH(graph.variable_of(x.id()), Catch::Contains("is not a variable"));
}

TEST_CASE(
    "nodes keep their addresses as a graph grows, a copy equals it, a moved-from one is empty") {
  Graph graph = trace_model(200);  // several chunks of nodes
  REQUIRE(graph.size() > 2 * NodeList::kChunk);
  const Node* first = &graph.node(0);
  const Node* last = &graph.node(static_cast<NodeId>(graph.size() - 1));
  for (int i = 0; i < 3 * static_cast<int>(NodeList::kChunk); ++i)
    graph.add(OpKind::neg, {0});
  CHECK(&graph.node(0) == first);
  CHECK(&graph.node(static_cast<NodeId>(graph.size() - 3 * NodeList::kChunk - 1)) == last);
  CHECK(std::distance(graph.nodes().begin(), graph.nodes().end()) ==
        static_cast<std::ptrdiff_t>(graph.size()));
  Graph copy = graph;
  CHECK(copy == graph);
  CHECK(&copy.node(0) != first);
  copy.add(OpKind::neg, {0});
  CHECK_FALSE(copy == graph);
  Graph moved = std::move(copy);
  CHECK(moved.size() == graph.size() + 1);
  CHECK(copy.nodes().empty());  // NOLINT(bugprone-use-after-move): what a move leaves
  CHECK_THROWS_AS(graph.node(static_cast<NodeId>(graph.size())), std::out_of_range);
}
