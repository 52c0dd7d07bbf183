#include "optimizer.hpp"

#include <stdexcept>

namespace csrun::nn {

namespace {

using graph::Graph;

double number(const config::ClassSpec& spec, const char* key, double fallback) {
  const config::Node* value = spec.params.find(key);
  return value && value->is_number() ? value->as_number() : fallback;
}

bool flag(const config::ClassSpec& spec, const char* key, bool fallback) {
  const config::Node* value = spec.params.find(key);
  return value && value->is_bool() ? value->as_bool() : fallback;
}

std::pair<double, double> betas(const config::ClassSpec& spec) {
  const config::Node* value = spec.params.find("betas");
  if (!value || value->items().size() != 2) return {0.9, 0.999};
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

void create_state(Graph& graph, std::size_t index, const char* key, const graph::Shape& shape) {
  graph.add_variable(state_name(index, key), {shape, graph::DType::f32},
                     graph::VariableRole::optimizer_state, {});
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
      : momentum_(number(spec, "momentum", 0.0)),
        dampening_(number(spec, "dampening", 0.0)),
        weight_decay_(number(spec, "weight_decay", 0.0)),
        nesterov_(flag(spec, "nesterov", false)),
        maximize_(flag(spec, "maximize", false)) {}

  std::string name() const override { return "SGD"; }

  void preinitialize(Graph& graph, const std::vector<Tensor>& parameters) override {
    if (momentum_ == 0.0) return;
    for (std::size_t i = 0; i < parameters.size(); ++i)
      create_state(graph, i, "momentum_buffer", parameters[i].shape());
  }

  // PyTorch's SGD: the first step stores the gradient itself as momentum buffer.
  void update(Graph& graph, const std::vector<Tensor>& parameters,
              const std::vector<Tensor>& gradients, const std::vector<Tensor>& learning_rates,
              const Tensor& global_step, const std::optional<Tensor>& apply) override {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& p = parameters[i];
      const Tensor& lr = learning_rates[i];
      Tensor g = maximize_ ? -gradients[i] : gradients[i];
      if (weight_decay_ != 0.0) g = g + weight_decay_ * p;
      if (momentum_ != 0.0) {
        Tensor buffer = state(graph, i, "momentum_buffer");
        Tensor next = momentum_ * buffer + (1.0 - dampening_) * g;
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

// Adam (PyTorch), AdamW (Hugging Face's, which the Model Zoo uses: correct_bias, decoupled
// weight decay applied after the step) and Lamb (You et al., as in cybertronai's pytorch-lamb,
// whose `adam` flag the Model Zoo keeps).
class AdamFamily : public Optimizer {
 public:
  enum class Kind { adam, adamw, lamb };

  AdamFamily(Kind kind, const config::ClassSpec& spec)
      : kind_(kind),
        betas_(betas(spec)),
        eps_(number(spec, "eps", 1e-6)),
        weight_decay_(number(spec, "weight_decay", 0.0)),
        correct_bias_(flag(spec, "correct_bias", true)),
        amsgrad_(flag(spec, "amsgrad", false)),
        adam_(flag(spec, "adam", false)) {}

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
              const std::vector<Tensor>& gradients, const std::vector<Tensor>& learning_rates,
              const Tensor&, const std::optional<Tensor>& apply) override {
    auto [beta1, beta2] = betas_;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& p = parameters[i];
      const Tensor& lr = learning_rates[i];
      Tensor g = gradients[i];
      if (kind_ == Kind::adam && weight_decay_ != 0.0) g = g + weight_decay_ * p;
      Tensor step = state(graph, i, "step");
      Tensor m = state(graph, i, "exp_avg");
      Tensor v = state(graph, i, "exp_avg_sq");
      Tensor next_step = step + 1.0;
      Tensor next_m = beta1 * m + (1.0 - beta1) * g;
      Tensor next_v = beta2 * v + (1.0 - beta2) * g * g;
      commit(graph, state_name(i, "step"), step, next_step, apply);
      commit(graph, state_name(i, "exp_avg"), m, next_m, apply);
      commit(graph, state_name(i, "exp_avg_sq"), v, next_v, apply);
      Tensor second = next_v;
      if (amsgrad_ && kind_ != Kind::lamb) {
        Tensor running_max = state(graph, i, "max_exp_avg_sq");
        second = maximum(running_max, next_v);
        commit(graph, state_name(i, "max_exp_avg_sq"), running_max, second, apply);
      }
      commit(graph, variable_name(p), p, updated(p, next_m, second, next_step, lr), apply);
    }
  }

 private:
  Tensor updated(const Tensor& p, const Tensor& m, const Tensor& v, const Tensor& step,
                 const Tensor& lr) const {
    auto [beta1, beta2] = betas_;
    Tensor correction1 = 1.0 - pow(constant(p.graph(), beta1), step);
    Tensor correction2 = 1.0 - pow(constant(p.graph(), beta2), step);
    switch (kind_) {
      case Kind::adam:
        return p - (lr / correction1) * m / (sqrt(v) / sqrt(correction2) + eps_);
      case Kind::adamw: {
        Tensor step_size = correct_bias_ ? lr * sqrt(correction2) / correction1 : lr;
        Tensor stepped = p - step_size * m / (sqrt(v) + eps_);
        return weight_decay_ > 0.0 ? stepped - lr * weight_decay_ * stepped : stepped;
      }
      case Kind::lamb: {
        Tensor adam_step = m / (sqrt(v) + eps_);
        if (weight_decay_ != 0.0) adam_step = adam_step + weight_decay_ * p;
        if (adam_) return p - lr * adam_step;
        Tensor weight_norm = minimum(norm(p), 10.0);
        Tensor adam_norm = norm(adam_step);
        Tensor trust =
            where(logical_and(weight_norm > 0.0, adam_norm > 0.0), weight_norm / adam_norm, 1.0);
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

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const config::ClassSpec& spec) {
  if (spec.type == "SGD") return std::make_unique<Sgd>(spec);
  if (spec.type == "Adam") return std::make_unique<AdamFamily>(AdamFamily::Kind::adam, spec);
  if (spec.type == "AdamW") return std::make_unique<AdamFamily>(AdamFamily::Kind::adamw, spec);
  if (spec.type == "Lamb") return std::make_unique<AdamFamily>(AdamFamily::Kind::lamb, spec);
  throw std::invalid_argument(
      "the optimizer " + spec.type +
      " is not supported yet by csrun's simulator (supported: SGD, Adam, AdamW, Lamb)");
}

bool simulates_optimizer(std::string_view type) {
  return type == "SGD" || type == "Adam" || type == "AdamW" || type == "Lamb";
}

std::optional<double> optimizer_learning_rate(const config::ClassSpec& spec) {
  const config::Node* lr = spec.params.find("learning_rate");
  if (lr && lr->is_number()) return lr->as_number();
  return std::nullopt;
}

}  // namespace csrun::nn
