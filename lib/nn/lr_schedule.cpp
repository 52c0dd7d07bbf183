#include "lr_schedule.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace csrun::nn {

namespace {

using config::ClassSpec;

std::vector<double> numbers(const ClassSpec& spec, const char* key) {
  std::vector<double> values;
  if (const config::Node* list = spec.params.find(key)) {
    for (const config::Node& item : list->items())
      values.push_back(item.as_number());
  }
  return values;
}

// floor and ceil of non-negative values (steps never are negative).
Tensor floor_of(const Tensor& x) {
  return cast(cast(x, graph::DType::i32), graph::DType::f32);
}
Tensor ceil_of(const Tensor& x) {
  Tensor down = floor_of(x);
  Tensor up = down + 1.0;
  return where(down < x, up, down);
}

// low + (high - low) (1 + cos(pi fraction)) / 2
Tensor cosine(double high, double low, const Tensor& fraction) {
  return low + 0.5 * (high - low) * (1.0 + cos(std::numbers::pi * fraction));
}

Tensor power_of(graph::Graph& graph, double base, const Tensor& exponent) {
  return pow(constant(graph, base), exponent);
}

Tensor polynomial(const ClassSpec& s, const Tensor& step) {
  double initial = s.params.number_or("initial_learning_rate", 0.0);
  double end = s.params.number_or("end_learning_rate", 0.0);
  double total = s.params.number_or("total_iters", 1.0);
  bool cycle = s.params.flag_or("cycle", false);
  Tensor span = cycle ? total * maximum(ceil_of(step / total), 1.0) : constant(step.graph(), total);
  Tensor progress = cycle ? step / span : minimum(step, total) / total;
  return (initial - end) * pow(1.0 - progress, s.params.number_or("power", 1.0)) + end;
}

Tensor warm_restarts(const ClassSpec& s, const Tensor& step) {
  double period = s.params.number_or("T_0", 1.0);
  double growth = s.params.number_or("T_mult", 1.0);
  Tensor position;
  Tensor length;
  if (growth == 1.0) {
    position = step - period * floor_of(step / period);
    length = constant(step.graph(), period);
  } else {
    // Restart n starts at period (growth^n - 1) / (growth - 1) and lasts period growth^n.
    Tensor n = floor_of(log(step / period * (growth - 1.0) + 1.0) / std::log(growth));
    Tensor grown = power_of(step.graph(), growth, n);
    position = step - period * (grown - 1.0) / (growth - 1.0);
    length = period * grown;
  }
  return cosine(s.params.number_or("initial_learning_rate", 0.0),
                s.params.number_or("eta_min", 0.0), position / length);
}

Tensor sequential(graph::Graph& graph, const ClassSpec& s, const Tensor& step) {
  std::vector<double> milestones = numbers(s, "milestones");
  Tensor lr = schedule_value(graph, s.children.at(0), step);
  for (std::size_t i = 1; i < s.children.size(); ++i) {
    double start = milestones.at(i - 1);
    Tensor value = schedule_value(graph, s.children[i], step - start);
    lr = where(step >= start, value, lr);
  }
  return lr;
}

// The first schedule's rate times each further schedule's factor relative to its start, as
// PyTorch chains multiplicative schedulers.
Tensor chained(graph::Graph& graph, const std::vector<ClassSpec>& members, const Tensor& step) {
  Tensor lr = schedule_value(graph, members.at(0), step);
  Tensor zero = constant(graph, 0.0);
  for (std::size_t i = 1; i < members.size(); ++i) {
    Tensor at_start = schedule_value(graph, members[i], zero);
    lr = lr * schedule_value(graph, members[i], step) / at_start;
  }
  return lr;
}

}  // namespace

Tensor schedule_value(graph::Graph& graph, const ClassSpec& s, const Tensor& step) {
  const std::string& type = s.type;
  double initial = s.params.number_or("initial_learning_rate", 0.0);
  double total = s.params.number_or("total_iters", 1.0);
  if (type == "ConstantLR") return constant(graph, s.params.number_or("learning_rate", 0.0));
  if (type == "LinearLR") {
    double end = s.params.number_or("end_learning_rate", 0.0);
    return initial + (end - initial) * minimum(step, total) / total;
  }
  if (type == "ExponentialLR") {
    Tensor t = step / total;
    return initial * power_of(graph, s.params.number_or("decay_rate", 0.0),
                              s.params.flag_or("staircase", false) ? floor_of(t) : t);
  }
  if (type == "InverseExponentialTimeDecayLR") {
    Tensor t = pow(step, s.params.number_or("step_exponent", 1.0)) / total;
    if (s.params.flag_or("staircase", false)) t = floor_of(t);
    return initial / (1.0 + s.params.number_or("decay_rate", 0.0) * t);
  }
  if (type == "InverseSquareRootDecayLR") {
    return initial * s.params.number_or("scale", 1.0) /
           sqrt(maximum(step, s.params.number_or("warmup_steps", 1.0)));
  }
  if (type == "PolynomialLR") return polynomial(s, step);
  if (type == "CosineDecayLR") {
    return cosine(initial, s.params.number_or("end_learning_rate", 0.0),
                  minimum(step, total) / total);
  }
  if (type == "CosineAnnealingLR")
    return cosine(initial, s.params.number_or("eta_min", 0.0),
                  step / s.params.number_or("T_max", 1.0));
  if (type == "CosineAnnealingWarmRestarts") return warm_restarts(s, step);
  if (type == "StepLR") {
    return initial * power_of(graph, s.params.number_or("gamma", 0.0),
                              floor_of(step / s.params.number_or("step_size", 1.0)));
  }
  if (type == "MultiStepLR") {
    Tensor passed = constant(graph, 0.0);
    for (double milestone : numbers(s, "milestones"))
      passed = passed + cast(step >= milestone, graph::DType::f32);
    return initial * power_of(graph, s.params.number_or("gamma", 0.0), passed);
  }
  if (type == "PiecewiseConstantLR") {
    std::vector<double> rates = numbers(s, "learning_rates");
    std::vector<double> milestones = numbers(s, "milestones");
    Tensor lr = constant(graph, rates.at(0));
    for (std::size_t i = 0; i < milestones.size() && i + 1 < rates.size(); ++i) {
      lr = where(step >= milestones[i], rates[i + 1], lr);
    }
    return lr;
  }
  if (type == "SequentialLR") return sequential(graph, s, step);
  if (type == "ChainedScheduler") return chained(graph, s.children, step);
  throw std::invalid_argument("the learning-rate scheduler " + type +
                              " is not supported yet by csrun's simulator");
}

bool simulates_schedule(std::string_view type) {
  return type != "CyclicLR" && type != "OneCycleLR";
}

Tensor learning_rate(graph::Graph& graph, const std::vector<ClassSpec>& schedulers,
                     const Tensor& step, std::optional<double> optimizer_lr) {
  if (schedulers.empty()) {
    if (!optimizer_lr) {
      throw std::invalid_argument(
          "no learning rate: give the optimizer a learning_rate or add a scheduler");
    }
    return constant(graph, *optimizer_lr);
  }
  if (schedulers.size() == 1) return schedule_value(graph, schedulers.front(), step);
  return chained(graph, schedulers, step);
}

}  // namespace csrun::nn
