#pragma once

#include <cstdint>
#include <string>

#include "graph/reference_evaluator.hpp"
#include "models/step_trace.hpp"

namespace csrun::test {

// A model given as a trainer-format mapping ("{name: gpt2, hidden_size: 16, ...}"), checked
// against the registry, with the trainer it came in (device CSX, AdamW, `init_extra` trainer
// keys). Fails the test when the params do not load.
struct CheckedTrainerModel {
  models::CheckedModel model;
  config::TrainerSpec trainer;

  // Trace options for the trainer's training step (seed 1).
  models::TraceOptions training_options() const;
};
CheckedTrainerModel checked_model(const std::string& model_yaml,
                                  const std::string& init_extra = "");

// The step of a model given as a trainer-format mapping ("{name: gpt2, hidden_size: 16, ...}"),
// traced over `batch_size` samples: the training step (with `optimizer`, the CSX device and
// `init_extra` trainer keys), or the eval step. Fails the test when the params do not load.
models::TracedStep traced_step(const std::string& model_yaml, std::int64_t batch_size,
                               bool training = true, const std::string& init_extra = "");

// Deterministic values for every input and variable of a graph: small floats, 1 for integers (a
// valid index, label and mask of every model), and constant-initialized variables at their value.
graph::Feeds sample_feeds(const graph::Graph& graph);

}  // namespace csrun::test
