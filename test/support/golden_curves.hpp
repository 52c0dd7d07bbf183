#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/reference_evaluator.hpp"
#include "models/step_trace.hpp"

namespace csrun::test {

// One 20-step PyTorch training curve of test/data/golden/curves.json (scripts/golden/curves.py).
struct GoldenCurve {
  std::string name;
  std::int64_t batch_size = 0;
  std::vector<double> losses;
  std::vector<double> loss_scales;                               // with dynamic loss scaling
  std::vector<std::pair<std::string, graph::Shape>> parameters;  // PyTorch's names and shapes
  std::string init;  // the params' trainer.init section, as JSON (YAML reads it too)
  // With running statistics (BatchNorm's): their values after the last step, and the loss of the
  // first batch evaluated with them and the trained weights.
  std::map<std::string, std::vector<double>> statistics;
  std::optional<double> eval_loss;
  models::CheckedModel model;
  models::TracedStep step;  // the training step, traced as the curve's params say
};

// Which curves: float32 ones (compared within 1e-4), or the ones PyTorch ran under bfloat16
// autocast (compared with csrun's CSX bfloat16 within a documented tolerance).
enum class CurvePrecision { f32, bfloat16_autocast };

std::vector<GoldenCurve> golden_curves(CurvePrecision precision = CurvePrecision::f32);

// The curve's batch at `step`, as scripts/golden/curves.py makes it.
graph::Feeds golden_batch(const GoldenCurve& curve, int step);

// Every variable at its starting value: parameters as the golden scripts initialize them,
// other state at its initializer's constant (ones, or zero).
graph::Feeds golden_initial_state(const graph::Graph& graph);

}  // namespace csrun::test
