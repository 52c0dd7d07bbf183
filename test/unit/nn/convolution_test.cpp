// How a convolution is lowered: im2col's windows and their gradients, counted in the traced graph.

#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "graph/autodiff.hpp"
#include "nn/convolution.hpp"

using namespace csrun::graph;

namespace {

std::int64_t count_of(const Graph& graph, OpKind op) {
  return std::count_if(graph.nodes().begin(), graph.nodes().end(),
                       [op](const Node& node) { return node.op == op; });
}

}  // namespace

TEST_CASE("a stride-1 convolution takes its windows in one op, their gradient in one sum") {
  // 3x3 and 3x3x3 kernels: nine and twenty-seven windows of the padded input, once a slice per
  // window concatenated, and in the backward pass a pad per window's gradient added up.
  for (Shape x_shape : {Shape{2, 3, 8, 8}, Shape{2, 3, 6, 6, 6}}) {
    INFO(shape_string(x_shape));
    Graph graph;
    Tensor x(graph, graph.add_variable("x", {x_shape, DType::f32}, VariableRole::parameter, {}));
    Shape w_shape(x_shape.size(), 3);
    w_shape[0] = 4;
    Tensor w(graph, graph.add_variable("w", {w_shape, DType::f32}, VariableRole::parameter, {}));
    Tensor y = csrun::nn::convolve(x, w, 1, 1);
    CHECK(count_of(graph, OpKind::windows) == 1);
    CHECK(count_of(graph, OpKind::slice) == 0);
    CHECK(count_of(graph, OpKind::concat) == 0);
    std::vector<Tensor> wrt = {x, w};
    gradients(sum(y), wrt);
    CHECK(count_of(graph, OpKind::windows_sum) == 1);
    CHECK(count_of(graph, OpKind::pad) == 1);    // the input's
    CHECK(count_of(graph, OpKind::slice) == 1);  // its gradient: the padded input's gradient
  }
}

TEST_CASE("a strided convolution takes a strided slice per window") {
  Graph graph;
  Tensor x(graph, graph.add_variable("x", {{2, 3, 8, 8}, DType::f32}, VariableRole::parameter, {}));
  Tensor w(graph, graph.add_variable("w", {{4, 3, 3, 3}, DType::f32}, VariableRole::parameter, {}));
  Tensor y = csrun::nn::convolve(x, w, 2, 1);
  CHECK(y.shape() == Shape{2, 4, 4, 4});
  CHECK(count_of(graph, OpKind::windows) == 0);
  CHECK(count_of(graph, OpKind::concat) == 1);
}
