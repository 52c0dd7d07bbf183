#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan.hpp"
#include "config/run_spec.hpp"
#include "data/dataloader.hpp"
#include "data/dataset.hpp"
#include "host_batch.hpp"
#include "models/step_trace.hpp"
#include "modes.hpp"
#include "validation_stage.hpp"

namespace csrun::modes {

// The batch fields a step of `layout` reads, as the runner feeds them.
std::vector<data::SampleField> sample_fields(const models::BatchLayout& layout);

// A step beside the trainer's planned one (the eval step, the micro-steps and update of a split
// batch), planned as it was (same precision, through the compile cache) for the host only: they
// report host rates. Throws std::runtime_error naming `what` when it cannot be compiled.
compiler::Plan plan_on_host(const config::TrainerSpec& trainer, bool training,
                            std::int64_t batch_size, graph::Graph step,
                            std::int64_t tokens_per_sample, const RunOptions& options,
                            const std::string& what);

// A global batch that runs as micro-steps of `micro_batch` samples: the micro-step, which adds
// its gradients where the update reads them, and the update.
struct SplitStep {
  compiler::Plan micro_step;
  compiler::Plan update;
  std::vector<data::SampleField> fields;
  std::vector<std::string> normalizer_fields;  // models::TracedSplitStep's
};
SplitStep plan_split_step(const CheckedTrainer& checked, const config::TrainerSpec& trainer,
                          const data::DataloaderSpec& loader, std::int64_t micro_batch,
                          const RunOptions& options);

// How csrun train runs `checked`'s training step (`fused`, its plan) on this machine
// (plan_host_batch). Where it splits the batch and the parameters and optimizer state fit, the
// micro-step and update are planned (through the compile cache) and `host` has their memory;
// check_fits_host then judges the run.
struct TrainingOnHost {
  HostBatch host;
  std::optional<SplitStep> split;
};
TrainingOnHost training_on_host(const CheckedTrainer& checked, const config::TrainerSpec& trainer,
                                const compiler::Plan& fused, const RunOptions& options);

}  // namespace csrun::modes
