#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.hpp"

namespace csrun::nn {

// How an eval metric combines over the batches of an evaluation: the mean of the per-batch
// values, or ratios of sums, as the Model Zoo's metrics accumulate their totals over the whole
// evaluation. A ratio metric's value is [2, C] (each class's numerator, then its denominator),
// summed over the batches; the result is the mean over the classes of numerator / denominator
// (0 for a class whose denominator stays 0) — an accuracy over tokens (C = 1), a macro-averaged
// F1; or that mean over the classes whose denominator is not 0 (the Model Zoo's mean IoU and
// Dice coefficient, which leave out classes that neither occur nor are predicted); or the exp
// of the ratio (C = 1): a perplexity, exp(the loss summed over the tokens / the tokens).
enum class MetricAverage : std::uint8_t { mean, ratio, ratio_of_present, exp_of_ratio };

inline bool sums_ratios(MetricAverage average) {
  return average != MetricAverage::mean;
}

// A metric of an eval step, by its Model Zoo name.
struct Metric {
  std::string name;
  graph::Tensor value;
  MetricAverage average = MetricAverage::mean;
};

}  // namespace csrun::nn
