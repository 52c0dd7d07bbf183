#include "metric_totals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace csrun::runner {

MetricTotals::MetricTotals(const runtime::Executable& step,
                           const std::map<std::string, nn::MetricAverage>& averages) {
  for (const graph::NamedNode& output : step.plan().graph.outputs()) {
    auto declared = averages.find(output.name);
    nn::MetricAverage average =
        declared == averages.end() ? nn::MetricAverage::mean : declared->second;
    runtime::Executable::Slot slot = step.slot(output.name);
    auto width = static_cast<std::size_t>(
        nn::sums_ratios(average) ? graph::element_count(step.type(slot).shape) : 1);
    outputs_.push_back({output.name, slot, average, std::vector<double>(width, 0.0)});
  }
}

void MetricTotals::add(const runtime::Executable& step) {
  for (Output& output : outputs_) {
    if (nn::sums_ratios(output.average)) {
      std::vector<double> values = step.read(output.slot);
      for (std::size_t i = 0; i < values.size(); ++i)
        output.totals[i] += values[i];
      continue;
    }
    output.totals[0] += step.scalar(output.slot);
  }
  ++batches_;
}

double mean_ratio(const std::vector<double>& totals, nn::MetricAverage average) {
  if (average == nn::MetricAverage::exp_of_ratio) {
    // No token at all has no perplexity (the Model Zoo's divides by zero).
    return totals[1] == 0.0 ? std::numeric_limits<double>::quiet_NaN()
                            : std::exp(totals[0] / totals[1]);
  }
  std::size_t classes = totals.size() / 2;
  double sum = 0.0;
  std::size_t counted = 0;
  for (std::size_t c = 0; c < classes; ++c) {
    double denominator = totals[classes + c];
    if (denominator == 0.0 && average == nn::MetricAverage::ratio_of_present) continue;
    sum += denominator == 0.0 ? 0.0 : totals[c] / denominator;
    ++counted;
  }
  return counted == 0 ? 0.0 : sum / static_cast<double>(counted);
}

std::map<std::string, double> MetricTotals::averages() const {
  std::map<std::string, double> result;
  for (const Output& output : outputs_) {
    if (nn::sums_ratios(output.average)) {
      result[output.name] = mean_ratio(output.totals, output.average);
      continue;
    }
    result[output.name] =
        output.totals[0] / static_cast<double>(std::max<std::int64_t>(batches_, 1));
  }
  return result;
}

}  // namespace csrun::runner
