#include "metric_totals.hpp"

#include <algorithm>
#include <cmath>

namespace csrun::runner {

MetricTotals::MetricTotals(const runtime::Executable& step,
                           const std::map<std::string, nn::MetricAverage>& averages) {
  for (const graph::NamedNode& output : step.plan().graph.outputs()) {
    auto declared = averages.find(output.name);
    nn::MetricAverage average =
        declared == averages.end() ? nn::MetricAverage::mean : declared->second;
    runtime::Executable::Slot slot = step.slot(output.name);
    auto width = static_cast<std::size_t>(
        average == nn::MetricAverage::ratio ? graph::element_count(step.type(slot).shape) : 1);
    outputs_.push_back({output.name, slot, average, std::vector<double>(width, 0.0)});
  }
}

void MetricTotals::add(const runtime::Executable& step) {
  for (Output& output : outputs_) {
    if (output.average == nn::MetricAverage::ratio) {
      std::vector<double> values = step.read(output.slot);
      for (std::size_t i = 0; i < values.size(); ++i)
        output.totals[i] += values[i];
      continue;
    }
    double value = step.scalar(output.slot);
    output.totals[0] += output.average == nn::MetricAverage::geometric ? std::log(value) : value;
  }
  ++batches_;
}

namespace {

// The mean over classes of numerator / denominator; [numerators..., denominators...].
double mean_ratio(const std::vector<double>& totals) {
  std::size_t classes = totals.size() / 2;
  if (classes == 0) return 0.0;
  double sum = 0.0;
  for (std::size_t c = 0; c < classes; ++c) {
    double denominator = totals[classes + c];
    sum += denominator == 0.0 ? 0.0 : totals[c] / denominator;
  }
  return sum / static_cast<double>(classes);
}

}  // namespace

std::map<std::string, double> MetricTotals::averages() const {
  std::map<std::string, double> result;
  for (const Output& output : outputs_) {
    if (output.average == nn::MetricAverage::ratio) {
      result[output.name] = mean_ratio(output.totals);
      continue;
    }
    double mean = output.totals[0] / static_cast<double>(std::max<std::int64_t>(batches_, 1));
    result[output.name] = output.average == nn::MetricAverage::geometric ? std::exp(mean) : mean;
  }
  return result;
}

}  // namespace csrun::runner
