#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.hpp"

namespace csrun::nn {

// How an eval metric combines over the batches of an evaluation: the mean of the per-batch
// values, their geometric mean (the exp of the mean log), as a perplexity averages, or ratios of
// sums: the metric's value is [2, C] (each class's numerator, then its denominator), summed over
// the batches, and the result is the mean over the classes of numerator / denominator (0 for a
// class whose denominator stays 0) — an accuracy over tokens (C = 1), a macro-averaged F1.
enum class MetricAverage : std::uint8_t { mean, geometric, ratio };

// A metric of an eval step, by its Model Zoo name.
struct Metric {
  std::string name;
  graph::Tensor value;
  MetricAverage average = MetricAverage::mean;
};

}  // namespace csrun::nn
