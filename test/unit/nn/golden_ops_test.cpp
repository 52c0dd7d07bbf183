// Every op, and the convolutional layers built from them, against PyTorch
// (test/data/golden/ops.json, made by scripts/golden/ops.py): forward values and gradients,
// relative error <= 1e-5.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include "graph/autodiff.hpp"
#include "graph/reference_evaluator.hpp"
#include "nn/convolution.hpp"
#include "nn/layers.hpp"

using namespace csrun::graph;
using nlohmann::json;

namespace {

using Build = std::function<Tensor(Graph&, const std::vector<Tensor>&)>;

Tensor ids(Graph& graph, std::vector<double> values, Shape shape) {
  return constant_values(graph, std::move(values), std::move(shape), DType::i32);
}

const std::map<std::string, Build>& builders() {
  static const std::map<std::string, Build> all = {
      {"add", [](Graph&, auto& x) { return x[0] + x[1]; }},
      {"sub", [](Graph&, auto& x) { return x[0] - x[1]; }},
      {"mul", [](Graph&, auto& x) { return x[0] * x[1]; }},
      {"div", [](Graph&, auto& x) { return x[0] / x[1]; }},
      {"pow", [](Graph&, auto& x) { return pow(x[0], x[1]); }},
      {"maximum", [](Graph&, auto& x) { return maximum(x[0], x[1]); }},
      {"minimum", [](Graph&, auto& x) { return minimum(x[0], x[1]); }},
      {"where", [](Graph&, auto& x) { return where(x[0] > 0.0, x[0] * x[1], x[1]); }},
      {"neg", [](Graph&, auto& x) { return -x[0]; }},
      {"abs", [](Graph&, auto& x) { return abs(x[0]); }},
      {"exp", [](Graph&, auto& x) { return exp(x[0]); }},
      {"log", [](Graph&, auto& x) { return log(x[0]); }},
      {"sqrt", [](Graph&, auto& x) { return sqrt(x[0]); }},
      {"rsqrt", [](Graph&, auto& x) { return rsqrt(x[0]); }},
      {"sin", [](Graph&, auto& x) { return sin(x[0]); }},
      {"cos", [](Graph&, auto& x) { return cos(x[0]); }},
      {"tanh", [](Graph&, auto& x) { return tanh(x[0]); }},
      {"sigmoid", [](Graph&, auto& x) { return sigmoid(x[0]); }},
      {"relu", [](Graph&, auto& x) { return relu(x[0]); }},
      {"erf", [](Graph&, auto& x) { return erf(x[0]); }},
      {"gelu", [](Graph&, auto& x) { return gelu(x[0]); }},
      {"gelu_tanh", [](Graph&, auto& x) { return gelu(x[0], true); }},
      {"sum",
       [](Graph&, auto& x) {
         return sum(x[0], {0, 2});
       }},
      {"mean", [](Graph&, auto& x) { return mean(x[0], {1}, true); }},
      {"reduce_max", [](Graph&, auto& x) { return reduce_max(x[0], {1}); }},
      {"reshape",
       [](Graph&, auto& x) {
         return reshape(x[0], {3, 4});
       }},
      {"transpose",
       [](Graph&, auto& x) {
         return transpose(x[0], {2, 0, 1});
       }},
      {"slice", [](Graph&, auto& x) { return slice(x[0], 1, 1, 4); }},
      {"pad",
       [](Graph&, auto& x) {
         return pad(x[0], {1, 0}, {0, 2});
       }},
      {"concat",
       [](Graph&, auto& x) {
         return concat({x[0], x[1]}, 1);
       }},
      {"broadcast_to",
       [](Graph&, auto& x) {
         return broadcast_to(x[0], {2, 3, 4});
       }},
      {"matmul", [](Graph&, auto& x) { return matmul(x[0], x[1]); }},
      {"batched_matmul", [](Graph&, auto& x) { return matmul(x[0], x[1]); }},
      {"softmax", [](Graph&, auto& x) { return softmax(x[0], 1); }},
      {"log_softmax", [](Graph&, auto& x) { return log_softmax(x[0]); }},
      {"layer_norm", [](Graph&, auto& x) { return layer_norm(x[0], 1e-5); }},
      {"gather",
       [](Graph& g, auto& x) {
         return gather(x[0], ids(g, {4, 0, 4, 2}, {2, 2}));
       }},
      {"one_hot_matmul",
       [](Graph& g, auto& x) {
         return matmul(one_hot(ids(g, {3, 0}, {2}), 4), x[0]);
       }},
      {"cross_entropy",
       [](Graph& g, auto& x) {
         return csrun::nn::cross_entropy(x[0], ids(g, {5, 0, 2, 2}, {4}));
       }},
      {"conv2d", [](Graph&, auto& x) { return csrun::nn::convolve(x[0], x[1], 1, 1); }},
      {"conv2d_strided", [](Graph&, auto& x) { return csrun::nn::convolve(x[0], x[1], 2, 1); }},
      {"conv2d_1x1", [](Graph&, auto& x) { return csrun::nn::convolve(x[0], x[1], 1, 0); }},
      {"conv3d_strided", [](Graph&, auto& x) { return csrun::nn::convolve(x[0], x[1], 2, 1); }},
      {"conv_transpose2d",
       [](Graph&, auto& x) { return csrun::nn::upsample_convolve(x[0], x[1]); }},
      {"conv_transpose3d",
       [](Graph&, auto& x) { return csrun::nn::upsample_convolve(x[0], x[1]); }},
      {"max_pool2d", [](Graph&, auto& x) { return csrun::nn::max_pool(x[0], 2); }},
      {"max_pool3d", [](Graph&, auto& x) { return csrun::nn::max_pool(x[0], 2); }},
      {"group_norm", [](Graph&, auto& x) { return csrun::nn::group_normalize(x[0], 2, 1e-5); }},
      {"batch_norm", [](Graph&, auto& x) { return csrun::nn::batch_normalize(x[0], 1e-5); }},
  };
  return all;
}

json load(const char* name) {
  std::ifstream file(std::string(CSRUN_TEST_DATA) + "/golden/" + name);
  REQUIRE(file);
  return json::parse(file);
}

Shape shape_of(const json& value) {
  return value.get<Shape>();
}

double worst_error(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    worst = std::max(worst,
                     std::fabs(actual[i] - expected[i]) / std::max(std::fabs(expected[i]), 1e-2));
  }
  return worst;
}

}  // namespace

TEST_CASE("every op matches PyTorch, forward and backward") {
  json golden = load("ops.json");
  REQUIRE(golden["cases"].size() == builders().size());
  for (const json& c : golden["cases"]) {
    std::string name = c["name"];
    INFO(name);
    Graph graph;
    std::vector<Tensor> inputs;
    Feeds feeds;
    for (std::size_t i = 0; i < c["inputs"].size(); ++i) {
      const json& input = c["inputs"][i];
      std::string input_name = "x" + std::to_string(i);
      inputs.emplace_back(graph,
                          graph.add_variable(input_name, {shape_of(input["shape"]), DType::f32},
                                             VariableRole::parameter, {}));
      feeds[input_name] = HostTensor{shape_of(input["shape"]), DType::f32,
                                     input["values"].get<std::vector<double>>()};
    }
    Tensor output = builders().at(name)(graph, inputs);
    CHECK(output.shape() == shape_of(c["output"]["shape"]));
    Tensor loss = sum(
        output * constant_values(graph, c["weights"].get<std::vector<double>>(), output.shape()));
    std::vector<Tensor> grads = gradients(loss, inputs);
    std::vector<NodeId> fetch = {output.id()};
    for (const Tensor& g : grads)
      fetch.push_back(g.id());
    std::vector<HostTensor> values = evaluate_reference(graph, feeds, fetch);
    CHECK(worst_error(values[0].values, c["output"]["values"].get<std::vector<double>>()) <= 1e-5);
    for (std::size_t i = 0; i < grads.size(); ++i) {
      INFO("gradient of input " << i);
      CHECK(worst_error(values[i + 1].values, c["gradients"][i].get<std::vector<double>>()) <=
            1e-5);
    }
  }
}
