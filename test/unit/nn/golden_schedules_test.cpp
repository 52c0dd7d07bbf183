// Every LR schedule against PyTorch's schedulers or the Cerebras closed forms
// (test/data/golden/schedules.json, made by scripts/golden/schedules.py), 300 steps each.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "graph/reference_evaluator.hpp"
#include "nn/lr_schedule.hpp"
#include "support/params_fixture.hpp"

using namespace csrun;
using nlohmann::json;

TEST_CASE("every learning-rate schedule matches PyTorch over 300 steps") {
  std::ifstream file(std::string(CSRUN_TEST_DATA) + "/golden/schedules.json");
  REQUIRE(file);
  json golden = json::parse(file);
  for (const json& c : golden["cases"]) {
    std::string name = c["name"];
    INFO(name);
    // JSON is YAML: the schedule goes into a params file as written.
    auto loaded = test::load_params_text(
        "trainer:\n  init:\n    device: CPU\n    model: {name: fc_mnist, depth: 1, hidden_size: "
        "2}\n"
        "    optimizer: {SGD: {}}\n    schedulers: [" +
        c["spec"].dump() + "]\n");
    INFO(loaded.dump());
    REQUIRE_FALSE(loaded.diagnostics.has_errors());
    graph::Graph graph;
    graph::Tensor step(graph, graph.add_input("step", {{}, graph::DType::f32}));
    graph::Tensor lr = nn::learning_rate(graph, loaded.trainer().schedulers, step, std::nullopt);
    std::vector<double> expected = c["rates"].get<std::vector<double>>();
    double worst = 0.0;
    for (std::size_t s = 0; s < expected.size(); ++s) {
      graph::Feeds feeds = {{"step", graph::HostTensor::scalar(static_cast<double>(s))}};
      graph::NodeId id = lr.id();
      double actual =
          graph::evaluate_reference(graph, feeds, std::span<const graph::NodeId>(&id, 1))[0]
              .values[0];
      worst =
          std::max(worst, std::fabs(actual - expected[s]) / std::max(std::fabs(expected[s]), 1e-8));
    }
    CHECK(worst <= 1e-5);
  }
}

TEST_CASE("without schedulers the optimizer's learning rate holds, and one is needed") {
  graph::Graph graph;
  graph::Tensor step(graph, graph.add_input("step", {{}, graph::DType::f32}));
  graph::Tensor lr = nn::learning_rate(graph, {}, step, 0.25);
  graph::Feeds feeds = {{"step", graph::HostTensor::scalar(7.0)}};
  graph::NodeId id = lr.id();
  CHECK(graph::evaluate_reference(graph, feeds, std::span<const graph::NodeId>(&id, 1))[0]
            .values[0] == Approx(0.25));
  CHECK_THROWS_WITH(nn::learning_rate(graph, {}, step, std::nullopt),
                    "no learning rate: give the optimizer a learning_rate or add a scheduler");
}
