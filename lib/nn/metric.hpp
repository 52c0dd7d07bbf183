#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.hpp"

namespace csrun::nn {

// How an eval metric combines over the batches of an evaluation: the mean of the per-batch
// values, or their geometric mean (the exp of the mean log), as a perplexity averages.
enum class MetricAverage : std::uint8_t { mean, geometric };

// A metric of an eval step, by its Model Zoo name.
struct Metric {
  std::string name;
  graph::Tensor value;
  MetricAverage average = MetricAverage::mean;
};

}  // namespace csrun::nn
