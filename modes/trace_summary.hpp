#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "nn/scope.hpp"

namespace csrun::modes {

// What tracing a trainer's step produced, and the batch it was traced for.
struct TraceSummary {
  bool training = true;
  std::int64_t batch_size = 0;           // traced: samples per system per (micro-)step
  std::int64_t system_batch = 0;         // samples per system per optimizer step
  bool micro_batch_fixed = false;        // the params set micro_batch_size
  std::int64_t tokens_per_sample = 0;    // sequence models; 0 otherwise
  nn::AttentionBlocks attention_blocks;  // attention traced a block of queries at a time
  std::size_t ops = 0;
  std::int64_t parameters = 0;
  double flops = 0.0;  // of one step on one system
  std::string fingerprint;
  // The eval step beside a training step: planned for the host only (evaluation reports host
  // rates), never mapped onto the wafer, cached under its own key.
  bool host_only = false;

  // Samples one system takes per optimizer step (the traced batch is a micro-batch of it).
  std::int64_t samples_per_system() const { return std::max(system_batch, batch_size); }
};

}  // namespace csrun::modes
