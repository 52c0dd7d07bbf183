#include "retrace_check.hpp"

#include <stdexcept>
#include <string>

#include "graph/fingerprint.hpp"

namespace csrun::modes {

RetraceCheck::RetraceCheck(models::CheckedModel model, std::int64_t batch_size,
                           models::TraceOptions options, graph::Graph compiled)
    : model_(std::move(model)),
      batch_size_(batch_size),
      options_(std::move(options)),
      compiled_(std::move(compiled)) {}

void RetraceCheck::on_train_batch_start(const runner::RunState& state) {
  models::TracedStep step = models::trace_step(model_, batch_size_, options_);
  std::optional<std::string> difference = graph::first_difference(compiled_, step.graph);
  if (!difference) return;
  throw std::runtime_error(
      "retrace_every_iteration: the model traced for step " +
      std::to_string(state.global_step + 1) +
      " builds a different graph from the one compiled (fingerprint " +
      graph::fingerprint(compiled_) + ", now " + graph::fingerprint(step.graph) +
      "): " + *difference +
      ". csrun compiles the step once; model code must build the same graph at every step");
}

}  // namespace csrun::modes
