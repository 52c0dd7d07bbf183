#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/metric.hpp"
#include "runtime/executable.hpp"

namespace csrun::runner {

// A ratio metric's value from its totals over an evaluation ([numerators..., denominators...]):
// the mean over classes of numerator / denominator; a class whose denominator is 0 counts as 0
// (ratio) or not at all (ratio_of_present); exp_of_ratio: the exp of its one ratio (NaN without
// a denominator).
double mean_ratio(const std::vector<double>& totals, nn::MetricAverage average);

// An eval step's outputs over the batches of an evaluation, each averaged as its model declares
// (a ratio metric: mean_ratio of the summed numerators and denominators; any other: the mean).
class MetricTotals {
 public:
  MetricTotals(const runtime::Executable& step,
               const std::map<std::string, nn::MetricAverage>& averages);
  // Adds the outputs of the batch the step has just run.
  void add(const runtime::Executable& step);
  // Each output's average over the batches added.
  std::map<std::string, double> averages() const;

 private:
  struct Output {
    std::string name;
    runtime::Executable::Slot slot;
    nn::MetricAverage average;
    std::vector<double> totals;  // one, or a ratio's numerators then denominators
  };
  std::vector<Output> outputs_;
  std::int64_t batches_ = 0;
};

}  // namespace csrun::runner
