// 20-step training curves of a tiny model of every network csrun builds against PyTorch
// (test/data/golden/curves.json, made by scripts/golden/curves.py): same initial weights, same
// batches; the traced training step runs on the fp64 reference evaluator. Relative error <= 1e-4,
// for the losses and, with batch norm, the running statistics and an evaluation using them.

#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "support/golden_curves.hpp"

using namespace csrun;
using graph::HostTensor;

TEST_CASE("20-step training curves match PyTorch") {
  for (const test::GoldenCurve& curve : test::golden_curves()) {
    INFO(curve.name);
    const graph::Graph& graph = curve.step.graph;

    // Parameter names and shapes are PyTorch's.
    std::set<std::pair<std::string, graph::Shape>> ours;
    for (const graph::Variable& variable : graph.variables()) {
      if (variable.role == graph::VariableRole::parameter)
        ours.insert({variable.name, graph.node(variable.node).type.shape});
    }
    std::set<std::pair<std::string, graph::Shape>> theirs(curve.parameters.begin(),
                                                          curve.parameters.end());
    for (const auto& [name, shape] : ours) {
      INFO("csrun has " << name << " " << graph::shape_string(shape));
      CHECK(theirs.count({name, shape}) == 1);
    }
    for (const auto& [name, shape] : theirs) {
      INFO("PyTorch has " << name << " " << graph::shape_string(shape));
      CHECK(ours.count({name, shape}) == 1);
    }
    CHECK(curve.step.parameter_count == curve.model.parameter_count);

    std::vector<graph::NodeId> fetch;
    for (const graph::NamedNode& update : graph.updates())
      fetch.push_back(update.node);
    std::size_t updates = fetch.size();
    fetch.push_back(*graph.find_output("loss"));
    auto scale_output = graph.find_output("loss_scale");
    if (scale_output) fetch.push_back(*scale_output);
    graph::Feeds state = test::golden_initial_state(graph);
    double worst = 0.0;
    graph::Feeds first_state;
    for (std::size_t s = 0; s < curve.losses.size(); ++s) {
      graph::Feeds feeds = state;
      graph::Feeds batch = test::golden_batch(curve, static_cast<int>(s));
      feeds.insert(batch.begin(), batch.end());
      std::vector<HostTensor> values = graph::evaluate_reference(graph, feeds, fetch);
      for (std::size_t u = 0; u < updates; ++u)
        state[graph.updates()[u].name] = values[u];
      if (s == 0) first_state = state;
      double loss = values[updates].values[0];
      worst = std::max(worst, std::fabs(loss - curve.losses[s]) / std::fabs(curve.losses[s]));
      if (scale_output) CHECK(values[updates + 1].values[0] == curve.loss_scales[s]);
    }
    CHECK(worst <= 1e-4);
    // Running statistics: their values after the first step, and an evaluation that uses the
    // last step's.
    for (const auto& [name, expected] : curve.statistics) {
      INFO(name);
      REQUIRE(first_state.contains(name));
      for (std::size_t i = 0; i < expected.size(); ++i)
        CHECK(first_state[name].values[i] == Approx(expected[i]).epsilon(1e-4));
    }
    if (!curve.eval_loss) continue;
    models::TracedStep eval =
        models::trace_step(curve.model, curve.batch_size, {models::StepKind::eval, 1, {}});
    graph::Feeds feeds = test::golden_batch(curve, 0);
    for (const graph::Variable& variable : eval.graph.variables())
      feeds[variable.name] = state.at(variable.name);
    std::vector<graph::NodeId> loss = {*eval.graph.find_output("loss")};
    double evaluated = graph::evaluate_reference(eval.graph, feeds, loss)[0].values[0];
    CHECK(evaluated == Approx(*curve.eval_loss).epsilon(1e-4));
  }
}
