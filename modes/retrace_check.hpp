#pragma once

// retrace_every_iteration: csrun compiles the training step once, from one trace of the model
// code. With the flag, the model code is traced again before every step and the graph compared
// with the compiled one, so model code that builds a different graph from step to step (or has
// side effects that must run every step) is caught where it happens.

#include <cstdint>

#include "graph/graph.hpp"
#include "models/step_trace.hpp"
#include "runner/callbacks.hpp"

namespace csrun::modes {

class RetraceCheck : public runner::Callback {
 public:
  RetraceCheck(models::CheckedModel model, std::int64_t batch_size, models::TraceOptions options,
               graph::Graph compiled);

  // Throws std::runtime_error naming the step and the first node that differs.
  void on_train_batch_start(const runner::RunState& state) override;

 private:
  models::CheckedModel model_;
  std::int64_t batch_size_;
  models::TraceOptions options_;
  graph::Graph compiled_;
};

}  // namespace csrun::modes
