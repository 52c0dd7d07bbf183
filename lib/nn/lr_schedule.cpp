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

// The Model Zoo's CyclicLR (PyTorch's, without momentum cycling): a triangle from base_lr up
// to max_lr and back in each cycle, its height halved every cycle (triangular2) or scaled by
// gamma^step (exp_range).
Tensor cyclic(graph::Graph& graph, const ClassSpec& s, const Tensor& step) {
  double base = s.params.number_or("base_lr", 0.0);
  double up = s.params.number_or("step_size_up", 2000.0);
  double total = up + s.params.number_or("step_size_down", up);
  double rising_share = up / total;
  // One node-creating operand per expression: the trace's order is the same under every compiler.
  Tensor cycle = floor_of(step / total + 1.0);
  Tensor x = step / total - cycle + 1.0;
  Tensor rising = x <= rising_share;
  Tensor up_part = x / rising_share;
  Tensor down_part = (x - 1.0) / (rising_share - 1.0);
  Tensor height = (s.params.number_or("max_lr", 0.0) - base) * where(rising, up_part, down_part);
  const config::Node* mode = s.params.find("mode");
  std::string name = mode && mode->is_string() ? mode->as_string() : "triangular";
  if (name == "triangular2") {
    Tensor halvings = power_of(graph, 2.0, cycle - 1.0);
    return base + height / halvings;
  }
  if (name == "exp_range") {
    Tensor decay = power_of(graph, s.params.number_or("gamma", 1.0), step);
    return base + height * decay;
  }
  return base + height;
}

// The Model Zoo's OneCycleLR: from initial_learning_rate up to max_lr, then down to
// initial_learning_rate / final_div_factor (with three_phase, back to the initial rate first),
// each phase a cosine or linear anneal, the phases ending at the steps check_one_cycle checks.
Tensor one_cycle(const ClassSpec& s, const Tensor& step) {
  double initial = s.params.number_or("initial_learning_rate", 0.0);
  double peak = s.params.number_or("max_lr", 0.0);
  double lowest = initial / s.params.number_or("final_div_factor", 1e4);
  double total = s.params.number_or("total_steps", 1000.0);
  double first_end = s.params.number_or("pct_start", 0.3) * total - 1.0;
  struct Phase {
    double end, from, to;
  };
  std::vector<Phase> phases = {{first_end, initial, peak}, {total - 1.0, peak, lowest}};
  if (s.params.flag_or("three_phase", false)) {
    phases = {{first_end, initial, peak},
              {2.0 * first_end, peak, initial},
              {total - 1.0, initial, lowest}};
  }
  const config::Node* strategy = s.params.find("anneal_strategy");
  bool linear = strategy && strategy->is_string() && strategy->as_string() == "linear";
  auto anneal = [&](const Phase& phase, const Tensor& fraction) {
    return linear ? phase.from + (phase.to - phase.from) * fraction
                  : cosine(phase.from, phase.to, fraction);
  };
  Tensor lr = anneal(phases[0], step / phases[0].end);
  for (std::size_t i = 1; i < phases.size(); ++i) {
    double start = phases[i - 1].end;
    Tensor after = step > start;
    Tensor value = anneal(phases[i], (step - start) / (phases[i].end - start));
    lr = where(after, value, lr);
  }
  return lr;
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

// What the Model Zoo divides a further member of a chain by: its initial learning rate (its
// rate at step 0 where it names none).
Tensor reference_rate(graph::Graph& graph, const ClassSpec& member) {
  for (const char* key : {"initial_learning_rate", "learning_rate", "base_lr"}) {
    if (const config::Node* rate = member.params.find(key); rate && rate->is_number())
      return constant(graph, rate->as_number());
  }
  return schedule_value(graph, member, constant(graph, 0.0));
}

// The first schedule's rate times each further schedule's rate relative to its initial one,
// as the Model Zoo's ChainedScheduler (PyTorch's multiplicative chaining).
Tensor chained(graph::Graph& graph, const std::vector<ClassSpec>& members, const Tensor& step) {
  Tensor lr = schedule_value(graph, members.at(0), step);
  for (std::size_t i = 1; i < members.size(); ++i) {
    Tensor reference = reference_rate(graph, members[i]);
    Tensor value = schedule_value(graph, members[i], step);
    lr = lr * value / reference;
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
  if (type == "LambdaLR") {
    // Its two fixed functions, s/30 and 0.95^s, each times the initial rate.
    Tensor decay = power_of(graph, 0.95, step);
    return initial * initial * (step / 30.0) * decay;
  }
  if (type == "MultiplicativeLR")
    return initial * power_of(graph, s.params.number_or("coefficient", 1.0), step);
  if (type == "CyclicLR") return cyclic(graph, s, step);
  if (type == "OneCycleLR") return one_cycle(s, step);
  if (type == "SequentialLR") return sequential(graph, s, step);
  if (type == "ChainedScheduler") return chained(graph, s.children, step);
  throw std::invalid_argument("the learning-rate scheduler " + type +
                              " is not supported yet by csrun's simulator");
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
