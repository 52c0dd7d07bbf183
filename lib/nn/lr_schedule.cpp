#include "lr_schedule.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace csrun::nn {

namespace {

using config::ClassSpec;

double number(const ClassSpec& spec, const char* key, double fallback = 0.0) {
  const config::Node* value = spec.params.find(key);
  return value && value->is_number() ? value->as_number() : fallback;
}

bool flag(const ClassSpec& spec, const char* key) {
  const config::Node* value = spec.params.find(key);
  return value && value->is_bool() && value->as_bool();
}

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
  return where(down < x, down + 1.0, down);
}

// low + (high - low) (1 + cos(pi fraction)) / 2
Tensor cosine(double high, double low, const Tensor& fraction) {
  return low + 0.5 * (high - low) * (1.0 + cos(std::numbers::pi * fraction));
}

Tensor power_of(graph::Graph& graph, double base, const Tensor& exponent) {
  return pow(constant(graph, base), exponent);
}

Tensor polynomial(const ClassSpec& s, const Tensor& step) {
  double initial = number(s, "initial_learning_rate");
  double end = number(s, "end_learning_rate");
  double total = number(s, "total_iters", 1.0);
  Tensor span = flag(s, "cycle") ? total * maximum(ceil_of(step / total), 1.0)
                                 : constant(step.graph(), total);
  Tensor progress = flag(s, "cycle") ? step / span : minimum(step, total) / total;
  return (initial - end) * pow(1.0 - progress, number(s, "power", 1.0)) + end;
}

Tensor warm_restarts(const ClassSpec& s, const Tensor& step) {
  double period = number(s, "T_0", 1.0);
  double growth = number(s, "T_mult", 1.0);
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
  return cosine(number(s, "initial_learning_rate"), number(s, "eta_min"), position / length);
}

Tensor sequential(graph::Graph& graph, const ClassSpec& s, const Tensor& step) {
  std::vector<double> milestones = numbers(s, "milestones");
  Tensor lr = schedule_value(graph, s.children.at(0), step);
  for (std::size_t i = 1; i < s.children.size(); ++i) {
    double start = milestones.at(i - 1);
    lr = where(step >= start, schedule_value(graph, s.children[i], step - start), lr);
  }
  return lr;
}

// The first schedule's rate times each further schedule's factor relative to its start, as
// PyTorch chains multiplicative schedulers.
Tensor chained(graph::Graph& graph, const std::vector<ClassSpec>& members, const Tensor& step) {
  Tensor lr = schedule_value(graph, members.at(0), step);
  Tensor zero = constant(graph, 0.0);
  for (std::size_t i = 1; i < members.size(); ++i) {
    lr = lr * schedule_value(graph, members[i], step) / schedule_value(graph, members[i], zero);
  }
  return lr;
}

}  // namespace

Tensor schedule_value(graph::Graph& graph, const ClassSpec& s, const Tensor& step) {
  const std::string& type = s.type;
  double initial = number(s, "initial_learning_rate");
  double total = number(s, "total_iters", 1.0);
  if (type == "ConstantLR") return constant(graph, number(s, "learning_rate"));
  if (type == "LinearLR") {
    double end = number(s, "end_learning_rate");
    return initial + (end - initial) * minimum(step, total) / total;
  }
  if (type == "ExponentialLR") {
    Tensor t = step / total;
    return initial *
           power_of(graph, number(s, "decay_rate"), flag(s, "staircase") ? floor_of(t) : t);
  }
  if (type == "InverseExponentialTimeDecayLR") {
    Tensor t = pow(step, number(s, "step_exponent", 1.0)) / total;
    if (flag(s, "staircase")) t = floor_of(t);
    return initial / (1.0 + number(s, "decay_rate") * t);
  }
  if (type == "InverseSquareRootDecayLR") {
    return initial * number(s, "scale", 1.0) / sqrt(maximum(step, number(s, "warmup_steps", 1.0)));
  }
  if (type == "PolynomialLR") return polynomial(s, step);
  if (type == "CosineDecayLR") {
    return cosine(initial, number(s, "end_learning_rate"), minimum(step, total) / total);
  }
  if (type == "CosineAnnealingLR")
    return cosine(initial, number(s, "eta_min"), step / number(s, "T_max", 1.0));
  if (type == "CosineAnnealingWarmRestarts") return warm_restarts(s, step);
  if (type == "StepLR") {
    return initial *
           power_of(graph, number(s, "gamma"), floor_of(step / number(s, "step_size", 1.0)));
  }
  if (type == "MultiStepLR") {
    Tensor passed = constant(graph, 0.0);
    for (double milestone : numbers(s, "milestones"))
      passed = passed + cast(step >= milestone, graph::DType::f32);
    return initial * power_of(graph, number(s, "gamma"), passed);
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
