#include "optimizer.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace csrun::nn {

namespace {

using graph::Graph;

std::pair<double, double> betas(const config::ClassSpec& spec,
                                std::pair<double, double> fallback = {0.9, 0.999}) {
  const config::Node* value = spec.params.find("betas");
  if (!value || value->items().size() != 2) return fallback;
  return {value->items()[0].as_number(), value->items()[1].as_number()};
}

std::string state_name(std::size_t index, const char* key) {
  return "optimizer.state." + std::to_string(index) + "." + key;
}

// The variable behind a parameter tensor (its name, for updates).
const std::string& variable_name(const Tensor& parameter) {
  for (const graph::Variable& variable : parameter.graph().variables()) {
    if (variable.node == parameter.id()) return variable.name;
  }
  throw std::logic_error("an optimized tensor is not a variable");
}

Tensor state(Graph& graph, std::size_t index, const char* key) {
  const graph::Variable* variable = graph.find_variable(state_name(index, key));
  if (!variable) throw std::logic_error(state_name(index, key) + " was not preinitialized");
  return Tensor(graph, variable->node);
}

void create_state(Graph& graph, std::size_t index, const char* key, const graph::Shape& shape,
                  double initial = 0.0) {
  graph::Initializer init;
  if (initial != 0.0) {
    init.name = "constant";
    init.value = initial;
  }
  graph.add_variable(state_name(index, key), {shape, graph::DType::f32},
                     graph::VariableRole::optimizer_state, init);
}

// Records `value` as the variable's next value, kept unchanged where the step is skipped.
void commit(Graph& graph, const std::string& variable, const Tensor& old_value, const Tensor& value,
            const std::optional<Tensor>& apply) {
  graph.set_update(variable, (apply ? where(*apply, value, old_value) : value).id());
}

Tensor norm(const Tensor& x) {
  return sqrt(sum(x * x));
}

class Sgd : public Optimizer {
 public:
  explicit Sgd(const config::ClassSpec& spec)
      : momentum_(spec.params.number_or("momentum", 0.0)),
        dampening_(spec.params.number_or("dampening", 0.0)),
        weight_decay_(spec.params.number_or("weight_decay", 0.0)),
        nesterov_(spec.params.flag_or("nesterov", false)),
        maximize_(spec.params.flag_or("maximize", false)) {}

  std::string name() const override { return "SGD"; }

  void preinitialize(Graph& graph, const std::vector<Tensor>& parameters) override {
    if (momentum_ == 0.0) return;
    for (std::size_t i = 0; i < parameters.size(); ++i)
      create_state(graph, i, "momentum_buffer", parameters[i].shape());
  }

  // PyTorch's SGD: the first step stores the gradient itself as momentum buffer.
  void update(Graph& graph, const std::vector<Tensor>& parameters,
              const std::vector<Tensor>& gradients, const std::vector<UpdateGroup>& groups,
              const Tensor& global_step, const std::optional<Tensor>& apply) override {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& p = parameters[i];
      const Tensor& lr = groups[i].lr;
      Tensor g = maximize_ ? -gradients[i] : gradients[i];
      if (weight_decay_ != 0.0 && groups[i].weight_decay) g = g + weight_decay_ * p;
      if (momentum_ != 0.0) {
        Tensor buffer = state(graph, i, "momentum_buffer");
        Tensor damped = (1.0 - dampening_) * g;
        Tensor next = momentum_ * buffer + damped;
        if (dampening_ != 0.0) next = where(equal(global_step, 0.0), g, next);
        commit(graph, state_name(i, "momentum_buffer"), buffer, next, apply);
        g = nesterov_ ? g + momentum_ * next : next;
      }
      commit(graph, variable_name(p), p, p - lr * g, apply);
    }
  }

 private:
  double momentum_;
  double dampening_;
  double weight_decay_;
  bool nesterov_;
  bool maximize_;
};

// Adam and AdamW as the Model Zoo's AdamBase computes them (and TensorFlow's Adam): the bias
// corrections scale the step, lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps), where
// PyTorch's Adam divides sqrt(v) by its correction before adding eps; Adam adds its weight decay
// to the gradient (L2), AdamW subtracts lr * weight_decay * p with the step, from the weight the
// step started from; AdamW's correct_bias: false drops the corrections (Adam always corrects).
// Lamb as in cybertronai's pytorch-lamb, whose `adam` flag the Model Zoo keeps.
class AdamFamily : public Optimizer {
 public:
  enum class Kind { adam, adamw, lamb };

  AdamFamily(Kind kind, const config::ClassSpec& spec)
      : kind_(kind),
        betas_(betas(spec)),
        eps_(spec.params.number_or("eps", 1e-6)),
        weight_decay_(spec.params.number_or("weight_decay", 0.0)),
        correct_bias_(spec.params.flag_or("correct_bias", true)),
        amsgrad_(spec.params.flag_or("amsgrad", false)),
        adam_(spec.params.flag_or("adam", false)) {}

  std::string name() const override {
    return kind_ == Kind::adam ? "Adam" : kind_ == Kind::adamw ? "AdamW" : "Lamb";
  }

  void preinitialize(Graph& graph, const std::vector<Tensor>& parameters) override {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      create_state(graph, i, "step", {});
      create_state(graph, i, "exp_avg", parameters[i].shape());
      create_state(graph, i, "exp_avg_sq", parameters[i].shape());
      if (amsgrad_ && kind_ != Kind::lamb)
        create_state(graph, i, "max_exp_avg_sq", parameters[i].shape());
    }
  }

  void update(Graph& graph, const std::vector<Tensor>& parameters,
              const std::vector<Tensor>& gradients, const std::vector<UpdateGroup>& groups,
              const Tensor&, const std::optional<Tensor>& apply) override {
    auto [beta1, beta2] = betas_;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& p = parameters[i];
      const Tensor& lr = groups[i].lr;
      double decay = groups[i].weight_decay ? weight_decay_ : 0.0;
      Tensor g = gradients[i];
      if (kind_ == Kind::adam && decay != 0.0) g = g + decay * p;
      Tensor step = state(graph, i, "step");
      Tensor m = state(graph, i, "exp_avg");
      Tensor v = state(graph, i, "exp_avg_sq");
      Tensor next_step = step + 1.0;
      std::optional<Tensor> step_size = corrected_step(next_step, lr);
      Tensor new_m = (1.0 - beta1) * g;
      Tensor next_m = beta1 * m + new_m;
      Tensor new_v = (1.0 - beta2) * g * g;
      Tensor next_v = beta2 * v + new_v;
      commit(graph, state_name(i, "step"), step, next_step, apply);
      commit(graph, state_name(i, "exp_avg"), m, next_m, apply);
      commit(graph, state_name(i, "exp_avg_sq"), v, next_v, apply);
      Tensor second = next_v;
      if (amsgrad_ && kind_ != Kind::lamb) {
        Tensor running_max = state(graph, i, "max_exp_avg_sq");
        second = maximum(running_max, next_v);
        commit(graph, state_name(i, "max_exp_avg_sq"), running_max, second, apply);
      }
      commit(graph, variable_name(p), p, updated(p, next_m, second, step_size, lr, decay), apply);
    }
  }

 private:
  // The step's scalar factor of Adam's and AdamW's moments: lr with the bias corrections (none
  // for Lamb). Traced before the elementwise update, it precedes it in the graph, so that one
  // fused kernel can compute a parameter's whole update (fusion_groups.hpp: a fusion's operands
  // come before its first node).
  std::optional<Tensor> corrected_step(const Tensor& step, const Tensor& lr) const {
    if (kind_ == Kind::lamb) return std::nullopt;
    if (kind_ == Kind::adamw && !correct_bias_) return lr;
    auto [beta1, beta2] = betas_;
    Tensor correction1 = 1.0 - pow(constant(step.graph(), beta1), step);
    Tensor root_correction2 = sqrt(1.0 - pow(constant(step.graph(), beta2), step));
    return lr * root_correction2 / correction1;
  }

  Tensor updated(const Tensor& p, const Tensor& m, const Tensor& v,
                 const std::optional<Tensor>& step_size, const Tensor& lr, double decay) const {
    // One node-making operand per operator: the order nodes are made in is then the code's,
    // whichever compiler builds it.
    Tensor denominator = sqrt(v) + eps_;
    switch (kind_) {
      case Kind::adam:
        return p - *step_size * m / denominator;
      case Kind::adamw: {
        Tensor stepped = p - *step_size * m / denominator;
        return decay != 0.0 ? stepped - lr * decay * p : stepped;
      }
      case Kind::lamb: {
        Tensor adam_step = m / denominator;
        if (decay != 0.0) adam_step = adam_step + decay * p;
        if (adam_) return p - lr * adam_step;
        Tensor weight_norm = minimum(norm(p), 10.0);
        Tensor adam_norm = norm(adam_step);
        Tensor ratio = weight_norm / adam_norm;
        Tensor adam_positive = adam_norm > 0.0;
        Tensor trust = where(logical_and(weight_norm > 0.0, adam_positive), ratio, 1.0);
        return p - lr * trust * adam_step;
      }
    }
    return p;
  }

  Kind kind_;
  std::pair<double, double> betas_;
  double eps_;
  double weight_decay_;
  bool correct_bias_;
  bool amsgrad_;
  bool adam_;
};

// Adafactor as cerebras.pytorch runs it (Shazeer and Stern, 2018): second moments of a matrix
// (and of the last two axes of any parameter of rank >= 2) kept as row and column means, the
// scheduled rate scaled by the parameter's RMS, updates clipped by their own RMS. The relative
// step, warm-up and first-moment options are refused, as cerebras.pytorch refuses them.
class Adafactor : public Optimizer {
 public:
  explicit Adafactor(const config::ClassSpec& spec)
      : eps1_(spec.params.number_or("eps1", 1e-30)),
        eps2_(spec.params.number_or("eps2", 1e-3)),
        clip_threshold_(spec.params.number_or("clip_threshold", 1.0)),
        decay_rate_(spec.params.number_or("decay_rate", -0.8)),
        weight_decay_(spec.params.number_or("weight_decay", 0.0)),
        scale_parameter_(spec.params.flag_or("scale_parameter", true)) {
    if (const config::Node* eps = spec.params.find("eps"); eps && eps->items().size() == 2) {
      eps1_ = eps->items()[0].as_number();
      eps2_ = eps->items()[1].as_number();
    }
    if (spec.params.flag_or("relative_step", false) || spec.params.flag_or("warmup_init", false))
      throw std::invalid_argument(
          "Adafactor: relative_step and warmup_init are not supported (as in the Model Zoo): the "
          "learning rate comes from the schedule");
    if (const config::Node* beta1 = spec.params.find("beta1"); beta1 && !beta1->is_null())
      throw std::invalid_argument("Adafactor: beta1 is not supported (as in the Model Zoo): null");
    if (clip_threshold_ != 1.0)
      throw std::invalid_argument(
          "Adafactor: clip_threshold must be 1.0 (the Model Zoo refuses other values)");
  }

  std::string name() const override { return "Adafactor"; }

  void preinitialize(Graph& graph, const std::vector<Tensor>& parameters) override {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const graph::Shape& shape = parameters[i].shape();
      if (factored(shape)) {
        create_state(graph, i, "exp_avg_sq_row", without_axis(shape, shape.size() - 1));
        create_state(graph, i, "exp_avg_sq_col", without_axis(shape, shape.size() - 2));
      } else {
        create_state(graph, i, "exp_avg_sq", shape);
      }
      create_state(graph, i, "step", {});
    }
  }

  void update(Graph& graph, const std::vector<Tensor>& parameters,
              const std::vector<Tensor>& gradients, const std::vector<UpdateGroup>& groups,
              const Tensor&, const std::optional<Tensor>& apply) override {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& p = parameters[i];
      const Tensor& g = gradients[i];
      Tensor step = state(graph, i, "step");
      Tensor next_step = step + 1.0;
      commit(graph, state_name(i, "step"), step, next_step, apply);
      Tensor lr = groups[i].lr;
      if (scale_parameter_) lr = lr * maximum(rms(p), eps2_);
      Tensor beta2 = 1.0 - pow(next_step, constant(graph, decay_rate_));
      Tensor squared = g * g + eps1_;
      Tensor direction = factored(p.shape()) ? factored_direction(graph, i, squared, beta2, apply)
                                             : plain_direction(graph, i, squared, beta2, apply);
      Tensor change = direction * g;
      change = change / maximum(rms(change) / clip_threshold_, 1.0) * lr;
      double decay = groups[i].weight_decay ? weight_decay_ : 0.0;
      Tensor decayed = p - p * (decay * lr);
      commit(graph, variable_name(p), p, decayed - change, apply);
    }
  }

 private:
  static bool factored(const graph::Shape& shape) { return shape.size() >= 2; }

  static graph::Shape without_axis(graph::Shape shape, std::size_t axis) {
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
    return shape;
  }

  static Tensor rms(const Tensor& x) { return sqrt(mean(x * x)); }

  // rsqrt of the second moment estimated from the row and column means: [..., R, 1] x [..., 1, C].
  Tensor factored_direction(Graph& graph, std::size_t i, const Tensor& squared, const Tensor& beta2,
                            const std::optional<Tensor>& apply) const {
    graph::Shape shape = squared.shape();
    Tensor row = state(graph, i, "exp_avg_sq_row");
    Tensor col = state(graph, i, "exp_avg_sq_col");
    Tensor share = 1.0 - beta2;  // of the new squares' means
    Tensor new_row = mean(squared, {-1}) * share;
    Tensor next_row = row * beta2 + new_row;
    Tensor new_col = mean(squared, {-2}) * share;
    Tensor next_col = col * beta2 + new_col;
    commit(graph, state_name(i, "exp_avg_sq_row"), row, next_row, apply);
    commit(graph, state_name(i, "exp_avg_sq_col"), col, next_col, apply);
    graph::Shape row_shape = shape;
    row_shape.back() = 1;
    graph::Shape col_shape = shape;
    col_shape[shape.size() - 2] = 1;
    Tensor row_factor = rsqrt(next_row / mean(next_row, {-1}, true));
    Tensor col_factor = reshape(rsqrt(next_col), col_shape);
    return reshape(row_factor, row_shape) * col_factor;
  }

  Tensor plain_direction(Graph& graph, std::size_t i, const Tensor& squared, const Tensor& beta2,
                         const std::optional<Tensor>& apply) const {
    Tensor v = state(graph, i, "exp_avg_sq");
    Tensor new_v = squared * (1.0 - beta2);
    Tensor next_v = v * beta2 + new_v;
    commit(graph, state_name(i, "exp_avg_sq"), v, next_v, apply);
    return rsqrt(next_v);
  }

  double eps1_;
  double eps2_;
  double clip_threshold_;
  double decay_rate_;
  double weight_decay_;
  bool scale_parameter_;
};

// The optimizers the Model Zoo ports from PyTorch (torch.optim's single-tensor updates; weight
// decay added to the gradient, L2, where the parameter takes it), one parameter at a time:
// each names its state, and traces one parameter's update from its gradient and learning rate.
// Every expression makes at most one node, so that the trace's order is the code's under every
// compiler.
class PerParameterOptimizer : public Optimizer {
 public:
  explicit PerParameterOptimizer(const config::ClassSpec& spec)
      : name_(spec.type),
        weight_decay_(spec.params.number_or("weight_decay", 0.0)),
        maximize_(spec.params.flag_or("maximize", false)) {}

  std::string name() const override { return name_; }

  void preinitialize(Graph& graph, const std::vector<Tensor>& parameters) override {
    for (std::size_t i = 0; i < parameters.size(); ++i)
      create_states(graph, i, parameters[i].shape());
  }

  void update(Graph& graph, const std::vector<Tensor>& parameters,
              const std::vector<Tensor>& gradients, const std::vector<UpdateGroup>& groups,
              const Tensor&, const std::optional<Tensor>& apply) override {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& p = parameters[i];
      Tensor g = maximize_ ? -gradients[i] : gradients[i];
      double decay = groups[i].weight_decay ? weight_decay_ : 0.0;
      if (decay != 0.0 && decays_gradient()) g = g + decay * p;
      Step step{graph, i, apply, groups[i].lr, decay};
      commit(graph, variable_name(p), p, updated(step, p, g), apply);
    }
  }

 protected:
  struct Step {
    Graph& graph;
    std::size_t index;
    const std::optional<Tensor>& apply;
    const Tensor& lr;
    double decay;

    Tensor state(const char* key) const { return nn::state(graph, index, key); }
    void keep(const char* key, const Tensor& old_value, const Tensor& value) const {
      commit(graph, state_name(index, key), old_value, value, apply);
    }
    // The state `key` moved toward `value`: decay * state + (1 - decay) * value, kept.
    Tensor running_average(const char* key, double decay, const Tensor& value) const {
      Tensor old_value = state(key);
      Tensor fresh = (1.0 - decay) * value;
      Tensor next = decay * old_value + fresh;
      keep(key, old_value, next);
      return next;
    }
    // The step count, advanced: t of the update being traced.
    Tensor count() const {
      Tensor step = state("step");
      Tensor next = step + 1.0;
      keep("step", step, next);
      return next;
    }
  };

  virtual void create_states(Graph& graph, std::size_t index, const graph::Shape& shape) = 0;
  virtual Tensor updated(const Step& step, const Tensor& p, const Tensor& g) = 0;
  virtual bool decays_gradient() const { return true; }

  static Tensor power(double base, const Tensor& exponent) {
    return pow(constant(exponent.graph(), base), exponent);
  }

 private:
  std::string name_;
  double weight_decay_;
  bool maximize_;
};

class RmsProp : public PerParameterOptimizer {
 public:
  explicit RmsProp(const config::ClassSpec& spec)
      : PerParameterOptimizer(spec),
        alpha_(spec.params.number_or("alpha", 0.99)),
        eps_(spec.params.number_or("eps", 1e-8)),
        momentum_(spec.params.number_or("momentum", 0.0)),
        centered_(spec.params.flag_or("centered", false)) {}

 private:
  void create_states(Graph& graph, std::size_t i, const graph::Shape& shape) override {
    create_state(graph, i, "step", {});
    create_state(graph, i, "square_avg", shape);
    if (momentum_ > 0.0) create_state(graph, i, "momentum_buffer", shape);
    if (centered_) create_state(graph, i, "grad_avg", shape);
  }

  Tensor updated(const Step& step, const Tensor& p, const Tensor& g) override {
    step.count();
    Tensor square = g * g;
    Tensor next_square = step.running_average("square_avg", alpha_, square);
    Tensor variance = next_square;
    if (centered_) {
      Tensor next_grad = step.running_average("grad_avg", alpha_, g);
      Tensor mean_square = next_grad * next_grad;
      variance = next_square - mean_square;
    }
    Tensor average = sqrt(variance) + eps_;
    Tensor direction = g / average;
    if (momentum_ > 0.0) {
      Tensor buffer = step.state("momentum_buffer");
      Tensor next_buffer = momentum_ * buffer + direction;
      step.keep("momentum_buffer", buffer, next_buffer);
      direction = next_buffer;
    }
    return p - step.lr * direction;
  }

  double alpha_;
  double eps_;
  double momentum_;
  bool centered_;
};

class Adagrad : public PerParameterOptimizer {
 public:
  explicit Adagrad(const config::ClassSpec& spec)
      : PerParameterOptimizer(spec),
        lr_decay_(spec.params.number_or("lr_decay", 0.0)),
        initial_(spec.params.number_or("initial_accumulator_value", 0.0)),
        eps_(spec.params.number_or("eps", 1e-10)) {}

 private:
  void create_states(Graph& graph, std::size_t i, const graph::Shape& shape) override {
    create_state(graph, i, "step", {});
    create_state(graph, i, "sum", shape, initial_);
  }

  Tensor updated(const Step& step, const Tensor& p, const Tensor& g) override {
    Tensor t = step.count();
    Tensor decayed = 1.0 + (t - 1.0) * lr_decay_;
    Tensor rate = step.lr / decayed;
    Tensor sum = step.state("sum");
    Tensor square = g * g;
    Tensor next_sum = sum + square;
    step.keep("sum", sum, next_sum);
    Tensor deviation = sqrt(next_sum) + eps_;
    Tensor direction = g / deviation;
    return p - rate * direction;
  }

  double lr_decay_;
  double initial_;
  double eps_;
};

// Adamax, NAdam and RAdam: first and second moments of the gradient, with PyTorch's defaults
// betas (0.9, 0.999) and eps 1e-8.
class MomentOptimizer : public PerParameterOptimizer {
 public:
  explicit MomentOptimizer(const config::ClassSpec& spec)
      : PerParameterOptimizer(spec),
        betas_(betas(spec)),
        eps_(spec.params.number_or("eps", 1e-8)) {}

 protected:
  std::pair<double, double> betas_;
  double eps_;
};

class Adamax : public MomentOptimizer {
 public:
  explicit Adamax(const config::ClassSpec& spec) : MomentOptimizer(spec) {}

 private:
  void create_states(Graph& graph, std::size_t i, const graph::Shape& shape) override {
    create_state(graph, i, "step", {});
    create_state(graph, i, "exp_avg", shape);
    create_state(graph, i, "exp_inf", shape);
  }

  Tensor updated(const Step& step, const Tensor& p, const Tensor& g) override {
    auto [beta1, beta2] = betas_;
    Tensor t = step.count();
    Tensor correction = 1.0 - power(beta1, t);
    Tensor rate = step.lr / correction;
    Tensor next_m = step.running_average("exp_avg", beta1, g);
    Tensor u = step.state("exp_inf");
    Tensor magnitude = abs(g) + eps_;
    Tensor next_u = maximum(beta2 * u, magnitude);
    step.keep("exp_inf", u, next_u);
    Tensor direction = next_m / next_u;
    return p - rate * direction;
  }
};

class Adadelta : public PerParameterOptimizer {
 public:
  explicit Adadelta(const config::ClassSpec& spec)
      : PerParameterOptimizer(spec),
        rho_(spec.params.number_or("rho", 0.9)),
        eps_(spec.params.number_or("eps", 1e-6)) {}

 private:
  void create_states(Graph& graph, std::size_t i, const graph::Shape& shape) override {
    create_state(graph, i, "step", {});
    create_state(graph, i, "square_avg", shape);
    create_state(graph, i, "acc_delta", shape);
  }

  Tensor updated(const Step& step, const Tensor& p, const Tensor& g) override {
    step.count();
    Tensor square = g * g;
    Tensor next_square = step.running_average("square_avg", rho_, square);
    Tensor deviation = sqrt(next_square + eps_);
    Tensor scale = sqrt(step.state("acc_delta") + eps_);
    Tensor delta = scale / deviation * g;
    Tensor delta_square = delta * delta;
    step.running_average("acc_delta", rho_, delta_square);
    return p - step.lr * delta;
  }

  double rho_;
  double eps_;
};

class NAdam : public MomentOptimizer {
 public:
  explicit NAdam(const config::ClassSpec& spec)
      : MomentOptimizer(spec), momentum_decay_(spec.params.number_or("momentum_decay", 4e-3)) {}

 private:
  void create_states(Graph& graph, std::size_t i, const graph::Shape& shape) override {
    create_state(graph, i, "step", {});
    create_state(graph, i, "mu_product", {}, 1.0);
    create_state(graph, i, "exp_avg", shape);
    create_state(graph, i, "exp_avg_sq", shape);
  }

  // Momentum beta1 (1 - 0.96^(t momentum_decay) / 2) at step t.
  Tensor momentum_at(const Tensor& t) const {
    Tensor decayed = power(0.96, t * momentum_decay_);
    return betas_.first * (1.0 - 0.5 * decayed);
  }

  Tensor updated(const Step& step, const Tensor& p, const Tensor& g) override {
    auto [beta1, beta2] = betas_;
    Tensor t = step.count();
    Tensor correction2 = 1.0 - power(beta2, t);
    Tensor mu = momentum_at(t);
    Tensor mu_next = momentum_at(t + 1.0);
    Tensor mu_product = step.state("mu_product");
    Tensor next_product = mu_product * mu;
    step.keep("mu_product", mu_product, next_product);
    // As the Model Zoo's NAdam (and torch 1.13's) computes it: mu counts twice in the product
    // that divides the momentum's share.
    Tensor product_next = next_product * mu * mu_next;
    Tensor next_m = step.running_average("exp_avg", beta1, g);
    Tensor square = g * g;
    Tensor next_v = step.running_average("exp_avg_sq", beta2, square);
    Tensor corrected = next_v / correction2;
    Tensor denominator = sqrt(corrected) + eps_;
    Tensor kept = 1.0 - mu;
    Tensor gradient_share = kept / (1.0 - next_product);
    Tensor momentum_share = mu_next / (1.0 - product_next);
    Tensor gradient_rate = step.lr * gradient_share;
    Tensor momentum_rate = step.lr * momentum_share;
    Tensor gradient_step = gradient_rate * g / denominator;
    Tensor momentum_step = momentum_rate * next_m / denominator;
    Tensor after_gradient = p - gradient_step;
    return after_gradient - momentum_step;
  }

  double momentum_decay_;
};

// RAdam: the Adam step rectified by the variance of its adaptive rate, SGD with momentum while
// the rate's variance is intractable (rho_t <= 5).
class RAdam : public MomentOptimizer {
 public:
  explicit RAdam(const config::ClassSpec& spec) : MomentOptimizer(spec) {}

 private:
  void create_states(Graph& graph, std::size_t i, const graph::Shape& shape) override {
    create_state(graph, i, "step", {});
    create_state(graph, i, "exp_avg", shape);
    create_state(graph, i, "exp_avg_sq", shape);
  }

  Tensor updated(const Step& step, const Tensor& p, const Tensor& g) override {
    auto [beta1, beta2] = betas_;
    Tensor t = step.count();
    Tensor correction1 = 1.0 - power(beta1, t);
    Tensor beta2_power = power(beta2, t);
    Tensor correction2 = 1.0 - beta2_power;
    Tensor next_m = step.running_average("exp_avg", beta1, g);
    Tensor square = g * g;
    Tensor next_v = step.running_average("exp_avg_sq", beta2, square);
    double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
    Tensor rho_drop = 2.0 * t * beta2_power / correction2;
    Tensor rho = rho_inf - rho_drop;
    Tensor above_four = rho - 4.0;
    Tensor numerator = above_four * (rho - 2.0) * rho_inf;
    Tensor rectified_square = numerator / (rho * ((rho_inf - 4.0) * (rho_inf - 2.0)));
    Tensor rectification = sqrt(maximum(rectified_square, 0.0));
    Tensor root_correction2 = sqrt(correction2);
    Tensor denominator = sqrt(next_v) + eps_;
    Tensor adaptive = root_correction2 / denominator;
    Tensor momentum = next_m / correction1;
    Tensor rectified = momentum * rectification * adaptive;
    Tensor tractable = rho > 5.0;
    Tensor direction = where(tractable, rectified, momentum);
    return p - step.lr * direction;
  }
};

// Lion as cerebras.pytorch runs it: the sign of an interpolation of momentum and gradient, with
// weight decay decoupled (the weight shrinks by lr * weight_decay).
class Lion : public PerParameterOptimizer {
 public:
  explicit Lion(const config::ClassSpec& spec)
      : PerParameterOptimizer(spec), betas_(betas(spec, {0.9, 0.99})) {}

 private:
  void create_states(Graph& graph, std::size_t i, const graph::Shape& shape) override {
    create_state(graph, i, "exp_avg", shape);
  }

  bool decays_gradient() const override { return false; }

  Tensor updated(const Step& step, const Tensor& p, const Tensor& g) override {
    auto [beta1, beta2] = betas_;
    Tensor m = step.state("exp_avg");
    Tensor new_part = (1.0 - beta1) * g;
    Tensor blend = beta1 * m + new_part;
    Tensor positive = blend > 0.0;
    Tensor negative = blend < 0.0;
    Tensor down = where(negative, -1.0, 0.0);
    Tensor sign = where(positive, 1.0, down);
    step.running_average("exp_avg", beta2, g);
    Tensor decayed = p;
    if (step.decay != 0.0) {
      Tensor shrink = 1.0 - step.lr * step.decay;
      decayed = p * shrink;
    }
    return decayed - step.lr * sign;
  }

  std::pair<double, double> betas_;
};

// The optimizers the simulator implements, in the order error messages list them.
struct OptimizerMaker {
  std::string_view name;
  std::unique_ptr<Optimizer> (*make)(const config::ClassSpec& spec);
};

template <class Kind>
std::unique_ptr<Optimizer> make(const config::ClassSpec& spec) {
  return std::make_unique<Kind>(spec);
}

template <AdamFamily::Kind kind>
std::unique_ptr<Optimizer> make_adam(const config::ClassSpec& spec) {
  return std::make_unique<AdamFamily>(kind, spec);
}

constexpr OptimizerMaker kOptimizers[] = {
    {"SGD", make<Sgd>},
    {"Adam", make_adam<AdamFamily::Kind::adam>},
    {"AdamW", make_adam<AdamFamily::Kind::adamw>},
    {"Lamb", make_adam<AdamFamily::Kind::lamb>},
    {"Adafactor", make<Adafactor>},
    {"RMSprop", make<RmsProp>},
    {"Adagrad", make<Adagrad>},
    {"Adamax", make<Adamax>},
    {"Adadelta", make<Adadelta>},
    {"NAdam", make<NAdam>},
    {"RAdam", make<RAdam>},
    {"Lion", make<Lion>},
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const config::ClassSpec& spec) {
  std::string names;
  for (const OptimizerMaker& maker : kOptimizers) {
    if (maker.name == spec.type) return maker.make(spec);
    names += (names.empty() ? "" : ", ") + std::string(maker.name);
  }
  throw std::invalid_argument("the optimizer " + spec.type +
                              " is not supported yet by csrun's simulator (supported: " + names +
                              ")");
}

bool simulates_optimizer(std::string_view type) {
  return std::any_of(std::begin(kOptimizers), std::end(kOptimizers),
                     [&](const OptimizerMaker& maker) { return maker.name == type; });
}

std::optional<double> optimizer_learning_rate(const config::ClassSpec& spec) {
  const config::Node* lr = spec.params.find("learning_rate");
  if (lr && lr->is_number()) return lr->as_number();
  return std::nullopt;
}

}  // namespace csrun::nn
