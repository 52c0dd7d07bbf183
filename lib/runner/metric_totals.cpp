#include "metric_totals.hpp"

#include <algorithm>
#include <cmath>

namespace csrun::runner {

MetricTotals::MetricTotals(const runtime::Executable& step,
                           const std::map<std::string, nn::MetricAverage>& averages) {
  for (const graph::NamedNode& output : step.plan().graph.outputs()) {
    auto declared = averages.find(output.name);
    bool geometric = declared != averages.end() && declared->second == nn::MetricAverage::geometric;
    outputs_.push_back({output.name, step.slot(output.name), geometric});
  }
}

void MetricTotals::add(const runtime::Executable& step) {
  for (Output& output : outputs_) {
    double value = step.scalar(output.slot);
    output.total += output.geometric ? std::log(value) : value;
  }
  ++batches_;
}

std::map<std::string, double> MetricTotals::averages() const {
  std::map<std::string, double> result;
  for (const Output& output : outputs_) {
    double mean = output.total / static_cast<double>(std::max<std::int64_t>(batches_, 1));
    result[output.name] = output.geometric ? std::exp(mean) : mean;
  }
  return result;
}

}  // namespace csrun::runner
