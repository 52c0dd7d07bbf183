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

TEST_CASE("a stride-1 convolution slices each window once and pads each window's gradient once") {
  // 3x3 and 3x3x3 kernels: nine and twenty-seven windows of the padded input. A window sliced
  // one axis at a time took twelve slices (three shared) and twelve pads in its gradient.
  for (Shape x_shape : {Shape{2, 3, 8, 8}, Shape{2, 3, 6, 6, 6}}) {
    INFO(shape_string(x_shape));
    Graph graph;
    Tensor x(graph, graph.add_variable("x", {x_shape, DType::f32}, VariableRole::parameter, {}));
    Shape w_shape(x_shape.size(), 3);
    w_shape[0] = 4;
    Tensor w(graph, graph.add_variable("w", {w_shape, DType::f32}, VariableRole::parameter, {}));
    Tensor y = csrun::nn::convolve(x, w, 1, 1);
    std::int64_t windows = x_shape.size() == 4 ? 9 : 27;
    CHECK(count_of(graph, OpKind::slice) == windows);
    std::vector<Tensor> wrt = {x, w};
    gradients(sum(y), wrt);
    CHECK(count_of(graph, OpKind::pad) == 1 + windows);  // the input's, then one per window
  }
}
