#include "host_steps.hpp"

#include <iostream>

#include "compile_driver.hpp"
#include "graph/fingerprint.hpp"
#include "report.hpp"
#include "storage/host_memory.hpp"

namespace csrun::modes {

std::vector<data::SampleField> sample_fields(const models::BatchLayout& layout) {
  std::vector<data::SampleField> fields;
  for (const models::BatchField& field : layout) {
    std::int64_t rows = field.type.shape.empty() ? 1 : field.type.shape.front();
    bool integer = field.type.dtype == graph::DType::i32;
    fields.push_back({field.name, integer, graph::element_count(field.type.shape) / rows,
                      integer ? field.value_limit : 0});
  }
  return fields;
}

compiler::Plan plan_on_host(const config::TrainerSpec& trainer, bool training,
                            std::int64_t batch_size, graph::Graph step,
                            std::int64_t tokens_per_sample, const RunOptions& options,
                            const std::string& what) {
  TraceSummary trace;
  trace.training = training;
  trace.host_only = true;
  trace.batch_size = batch_size;
  trace.system_batch = batch_size;
  trace.tokens_per_sample = tokens_per_sample;
  trace.fingerprint = graph::fingerprint(step);
  config::Diagnostics diagnostics;
  std::optional<PlannedTrainer> planned =
      plan_step(trainer, trace, std::move(step), options, diagnostics);
  print_diagnostics(diagnostics, options.shown, std::cerr);
  if (!planned) throw std::runtime_error(what + " cannot be compiled (see the errors above)");
  return std::move(planned->plan);
}

SplitStep plan_split_step(const CheckedTrainer& checked, const config::TrainerSpec& trainer,
                          const data::DataloaderSpec& loader, std::int64_t micro_batch,
                          const RunOptions& options) {
  models::CheckedModel model = model_reading(*checked.model, loader);
  models::TracedSplitStep split = models::trace_split_step(
      model, micro_batch, loader.batch_size, trace_options(trainer, models::StepKind::train));
  std::int64_t tokens = split.micro_step.tokens_per_sample;
  return {plan_on_host(trainer, true, micro_batch, std::move(split.micro_step.graph), tokens,
                       options, "the micro-step"),
          plan_on_host(trainer, true, loader.batch_size, std::move(split.update), tokens, options,
                       "the update step"),
          sample_fields(split.micro_step.batch), std::move(split.normalizer_fields)};
}

TrainingOnHost training_on_host(const CheckedTrainer& checked, const config::TrainerSpec& trainer,
                                const compiler::Plan& fused, const RunOptions& options) {
  TrainingOnHost training{plan_host_batch(trainer, *checked.trace, fused), std::nullopt};
  HostBatch& host = training.host;
  if (!checked.train_loader || host.micro_batch == checked.train_loader->batch_size)
    return training;
  // A run whose state alone does not fit is refused whatever its micro-step takes.
  if (storage::exceeds_usable_memory(host.state_bytes)) return training;
  training.split =
      plan_split_step(checked, trainer, *checked.train_loader, host.micro_batch, options);
  host = with_split_plans(host, training.split->micro_step, training.split->update,
                          trainer.backend.cluster.num_csx);
  return training;
}

}  // namespace csrun::modes
