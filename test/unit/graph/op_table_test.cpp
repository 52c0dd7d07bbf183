// The op table (lib/graph/ops.def) and what is derived from it: names, classes, operand counts,
// the attributes the IR listing shows, the elementwise builders, the checked operand count.

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "graph/tensor.hpp"

using namespace csrun::graph;

TEST_CASE("every op has one name, and its class and operand count agree with each other") {
  std::set<std::string> names;
  for (unsigned index = 0; index < kOpCount; ++index) {
    auto op = static_cast<OpKind>(index);
    INFO(op_name(op));
    CHECK(names.insert(op_name(op)).second);
    if (op_class(op) == OpClass::leaf) CHECK(op_arity(op) == 0);
    if (op_class(op) != OpClass::leaf) CHECK(op_arity(op) != 0);
    if (is_comparison(op)) CHECK(is_binary_elementwise(op));
  }
  CHECK(std::string(op_name(OpKind::layer_norm)) == "layer_norm");
  CHECK(op_class(OpKind::matmul) == OpClass::compute);
  CHECK(op_arity(OpKind::where) == 3);
  CHECK(op_arity(OpKind::concat) == -1);
  CHECK(is_unary_elementwise(OpKind::gelu));
  CHECK_FALSE(is_unary_elementwise(OpKind::softmax));
}

TEST_CASE("the generated builders record their op and the model line") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{3}, DType::f32}));
  unsigned line = __LINE__ + 1;
  Tensor difference = sub(x, 1.0);
  CHECK(difference.node().op == OpKind::sub);
  CHECK(difference.node().location.line() == line);
  CHECK(less(x, 0.0).dtype() == DType::boolean);
  CHECK((-x).node().op == OpKind::neg);
  CHECK(relu(x).node().op == OpKind::relu);
}

TEST_CASE("an op given the wrong number of operands is refused with the count") {
  Graph graph;
  NodeId x = graph.add_input("x", {{3}, DType::f32});
  CHECK_THROWS_WITH(graph.add(OpKind::add, {x}), Catch::Contains("takes 2 operand(s), got 1"));
  CHECK_THROWS_WITH(graph.add(OpKind::concat, {}), Catch::Contains("needs at least one operand"));
}

TEST_CASE("the IR listing shows the attributes each op reads") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{2, 3}, DType::f32}));
  Tensor step(graph, graph.add_input("step", {{}, DType::i32}));
  CHECK_THAT(graph.node_text(layer_norm(x, 1e-5).id()), Catch::Contains(" eps=1e-05"));
  CHECK_THAT(graph.node_text(sum(x, {1}, true).id()), Catch::Contains(" axes=[1] keepdims"));
  CHECK_THAT(graph.node_text(dropout(x, step, 0.25, 7, 3).id()),
             Catch::Contains(" rate=0.25 seed=7 salt=3"));
  CHECK_THAT(graph.node_text(gelu(x, true).id()), Catch::Contains(" approximate=tanh"));
  CHECK_THAT(graph.node_text(transpose(x, {1, 0}).id()), Catch::Contains(" perm=[1, 0]"));
  CHECK_THAT(graph.node_text(slice(x, 1, 0, 2).id()),
             Catch::Contains(" begins=[0, 0] ends=[2, 2]"));
  // A shape or dtype is in the node's type, not repeated as an attribute.
  CHECK_THAT(graph.node_text(reshape(x, {3, 2}).id()), !Catch::Contains("shape="));
  CHECK_THAT(graph.node_text(cast(x, DType::bf16).id()), !Catch::Contains("dtype="));
}
