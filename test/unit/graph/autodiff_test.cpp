// Every differentiable op's gradient, checked against central finite differences computed with
// the fp64 reference evaluator.

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "graph/autodiff.hpp"
#include "graph/counter_rng.hpp"
#include "graph/reference_evaluator.hpp"
#include "graph/tensor.hpp"

using namespace csrun::graph;

namespace {

struct OperandSpec {
  Shape shape;
  double low = -1.0;
  double high = 1.0;
};

using Build = std::function<Tensor(Graph&, const std::vector<Tensor>&)>;

HostTensor random_values(const OperandSpec& spec, std::uint64_t seed) {
  HostTensor value = HostTensor::filled(spec.shape, 0.0);
  for (std::size_t i = 0; i < value.values.size(); ++i) {
    double u = uniform01(mix_keys(seed, i));
    // Keep a margin from the range's ends so perturbations stay inside it.
    value.values[i] = spec.low + (spec.high - spec.low) * (0.05 + 0.9 * u);
  }
  return value;
}

// loss = sum(op(...) * w) with fixed random w, so every output element matters differently.
double check_gradients(const std::vector<OperandSpec>& specs, const Build& build) {
  Graph graph;
  std::vector<Tensor> xs;
  Feeds feeds;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    xs.emplace_back(
        graph, graph.add_variable(name, {specs[i].shape, DType::f32}, VariableRole::parameter, {}));
    feeds[name] = random_values(specs[i], 17 + i);
  }
  Tensor y = build(graph, xs);
  HostTensor weights = random_values({y.shape(), -1.0, 1.0}, 99);
  Tensor loss = sum(y * constant_values(graph, weights.values, y.shape()));
  std::vector<Tensor> grads = gradients(loss, xs);
  std::vector<NodeId> fetch;
  for (const Tensor& g : grads)
    fetch.push_back(g.id());
  std::vector<HostTensor> analytic = evaluate_reference(graph, feeds, fetch);
  double worst = 0.0;
  const double h = 1e-6;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    REQUIRE(analytic[i].shape == specs[i].shape);
    for (std::size_t k = 0; k < feeds["x" + std::to_string(i)].values.size(); ++k) {
      auto perturbed = [&](double delta) {
        Feeds shifted = feeds;
        shifted["x" + std::to_string(i)].values[k] += delta;
        NodeId id = loss.id();
        return evaluate_reference(graph, shifted, std::span<const NodeId>(&id, 1))[0].values[0];
      };
      double numeric = (perturbed(h) - perturbed(-h)) / (2 * h);
      double error = std::fabs(numeric - analytic[i].values[k]) / std::max(1.0, std::fabs(numeric));
      worst = std::max(worst, error);
    }
  }
  return worst;
}

Tensor indices(Graph& graph, std::vector<double> values, Shape shape) {
  return constant_values(graph, std::move(values), std::move(shape), DType::i32);
}

}  // namespace

TEST_CASE("gradients of elementwise ops match finite differences") {
  struct Case {
    const char* name;
    std::vector<OperandSpec> operands;
    Build build;
  };
  std::vector<Case> cases = {
      {"add broadcast", {{{2, 3}}, {{3}}}, [](Graph&, auto& x) { return x[0] + x[1]; }},
      {"sub broadcast", {{{2, 3}}, {{2, 1}}}, [](Graph&, auto& x) { return x[0] - x[1]; }},
      {"mul", {{{2, 3}}, {{2, 3}}}, [](Graph&, auto& x) { return x[0] * x[1]; }},
      {"div", {{{2, 3}}, {{2, 3}, 0.5, 2.0}}, [](Graph&, auto& x) { return x[0] / x[1]; }},
      {"pow", {{{4}, 0.5, 2.0}, {{4}, -1.0, 2.0}}, [](Graph&, auto& x) { return pow(x[0], x[1]); }},
      {"maximum",
       {{{5}, -1.0, 0.0}, {{5}, 0.1, 1.0}},
       [](Graph&, auto& x) { return maximum(x[0], x[1]) + minimum(x[0], x[1]) * 2.0; }},
      {"where",
       {{{2, 3}}, {{2, 3}}},
       [](Graph&, auto& x) { return where(x[0] > 0.0, x[0] * x[1], x[1]); }},
      {"neg abs", {{{6}, 0.2, 1.0}}, [](Graph&, auto& x) { return abs(-x[0]) + abs(x[0] - 2.0); }},
      {"exp log", {{{6}, 0.2, 2.0}}, [](Graph&, auto& x) { return exp(x[0]) + log(x[0]); }},
      {"sqrt rsqrt", {{{6}, 0.2, 2.0}}, [](Graph&, auto& x) { return sqrt(x[0]) + rsqrt(x[0]); }},
      {"sin cos", {{{6}, -3.0, 3.0}}, [](Graph&, auto& x) { return sin(x[0]) + cos(x[0] * 2.0); }},
      {"tanh sigmoid",
       {{{6}, -2.0, 2.0}},
       [](Graph&, auto& x) { return tanh(x[0]) + sigmoid(x[0]); }},
      {"relu", {{{6}, 0.1, 1.0}}, [](Graph&, auto& x) { return relu(x[0]) + relu(-x[0]); }},
      {"erf", {{{6}, -2.0, 2.0}}, [](Graph&, auto& x) { return erf(x[0]); }},
      {"gelu exact", {{{6}, -3.0, 3.0}}, [](Graph&, auto& x) { return gelu(x[0]); }},
      {"gelu tanh", {{{6}, -3.0, 3.0}}, [](Graph&, auto& x) { return gelu(x[0], true); }},
      {"cast round trip",
       {{{4}}},
       [](Graph&, auto& x) { return cast(cast(x[0], DType::f32), DType::f32) * 3.0; }},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(check_gradients(c.operands, c.build) < 1e-6);
  }
}

TEST_CASE("every differentiable elementwise op of the op table has a gradient rule") {
  // Walks ops.def, so an op added there is checked without an edit here: positive operands in
  // [0.5, 2] keep every op differentiable (log, sqrt, pow, relu away from 0, no ties).
  int checked = 0;
  for (unsigned index = 0; index < kOpCount; ++index) {
    auto op = static_cast<OpKind>(index);
    bool unary = is_unary_elementwise(op) && op != OpKind::logical_not && op != OpKind::is_finite &&
                 op != OpKind::cast;
    bool binary = is_binary_elementwise(op) && !is_comparison(op) && op != OpKind::logical_and &&
                  op != OpKind::logical_or;
    if (!unary && !binary) continue;
    INFO(op_name(op));
    std::vector<OperandSpec> operands(unary ? 1 : 2, OperandSpec{{5}, 0.5, 2.0});
    if (binary) operands[1] = {{5}, 0.55, 2.1};
    CHECK(check_gradients(operands, [op](Graph&, const std::vector<Tensor>& x) {
            return apply(op, x);
          }) < 1e-6);
    ++checked;
  }
  CHECK(checked >= 20);
}

TEST_CASE("gradients of reductions, layout and compute ops match finite differences") {
  struct Case {
    const char* name;
    std::vector<OperandSpec> operands;
    Build build;
  };
  std::vector<Case> cases = {
      {"sum",
       {{{2, 3, 4}}},
       [](Graph&, auto& x) {
         return sum(x[0], {0, 2});
       }},
      {"mean keepdims", {{{2, 3, 4}}}, [](Graph&, auto& x) { return mean(x[0], {1}, true); }},
      {"max", {{{3, 4}}}, [](Graph&, auto& x) { return reduce_max(x[0], {1}); }},
      {"reshape",
       {{{2, 6}}},
       [](Graph&, auto& x) {
         return reshape(x[0], {3, 4});
       }},
      {"transpose",
       {{{2, 3, 4}}},
       [](Graph&, auto& x) {
         return transpose(x[0], {2, 0, 1});
       }},
      {"slice", {{{4, 5}}}, [](Graph&, auto& x) { return slice(x[0], 1, 1, 4); }},
      {"pad",
       {{{2, 3}}},
       [](Graph&, auto& x) {
         return pad(x[0], {1, 0}, {0, 2});
       }},
      {"concat",
       {{{2, 3}}, {{2, 2}}},
       [](Graph&, auto& x) {
         return concat({x[0], x[1]}, 1);
       }},
      {"broadcast_to",
       {{{3, 1}}},
       [](Graph&, auto& x) {
         return broadcast_to(x[0], {2, 3, 4});
       }},
      {"windows 2d",
       {{{2, 4, 5}}},
       [](Graph&, auto& x) {
         return windows(x[0], {3, 2});
       }},
      {"windows 3d",
       {{{1, 3, 4, 3}}},
       [](Graph&, auto& x) {
         return windows(x[0], {2, 3, 2});
       }},
      {"windows_sum",
       {{{2, 6, 2, 3}}},
       [](Graph&, auto& x) {
         return windows_sum(x[0], {3, 2});
       }},
      {"matmul", {{{3, 4}}, {{4, 2}}}, [](Graph&, auto& x) { return matmul(x[0], x[1]); }},
      {"batched matmul broadcast",
       {{{2, 3, 4}}, {{4, 5}}},
       [](Graph&, auto& x) { return matmul(x[0], x[1]); }},
      {"softmax", {{{3, 5}}}, [](Graph&, auto& x) { return softmax(x[0], 1); }},
      {"softmax first axis", {{{3, 5}}}, [](Graph&, auto& x) { return softmax(x[0], 0); }},
      {"log_softmax", {{{3, 5}}}, [](Graph&, auto& x) { return log_softmax(x[0]); }},
      {"layer_norm", {{{3, 6}}}, [](Graph&, auto& x) { return layer_norm(x[0], 1e-5); }},
      {"gather",
       {{{5, 3}}},
       [](Graph& g, auto& x) {
         return gather(x[0], indices(g, {4, 0, 4, 2}, {2, 2}));
       }},
      {"scatter_add",
       {{{4, 3}}},
       [](Graph& g, auto& x) {
         return scatter_add(indices(g, {1, 0, 1, 3}, {4}), x[0], 5);
       }},
      {"one_hot matmul",
       {{{4, 3}}},
       [](Graph& g, auto& x) {
         return matmul(one_hot(indices(g, {3, 0}, {2}), 4), x[0]);
       }},
      {"dropout",
       {{{4, 8}}},
       [](Graph& g, auto& x) {
         return dropout(x[0], constant(g, 7.0, {}, DType::i32), 0.5, 11, 3);
       }},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(check_gradients(c.operands, c.build) < 1e-6);
  }
}

TEST_CASE("a loss that does not depend on a tensor gives it zeros, gradients accumulate") {
  Graph graph;
  Tensor a(graph, graph.add_variable("a", {{3}, DType::f32}, VariableRole::parameter, {}));
  Tensor b(graph, graph.add_variable("b", {{2}, DType::f32}, VariableRole::parameter, {}));
  Tensor loss = sum(a * a + a);
  std::vector<Tensor> grads = gradients(loss, std::vector<Tensor>{a, b});
  Feeds feeds = {{"a", HostTensor{{3}, DType::f32, {1, 2, 3}}}, {"b", HostTensor::filled({2}, 5)}};
  std::vector<NodeId> fetch = {grads[0].id(), grads[1].id()};
  auto values = evaluate_reference(graph, feeds, fetch);
  CHECK(values[0].values == std::vector<double>{3, 5, 7});
  CHECK(values[1].values == std::vector<double>{0, 0});
}
