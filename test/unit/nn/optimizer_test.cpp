// Optimizers and the training-step pieces against their formulas, evaluated step by step with
// the reference evaluator.

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "graph/reference_evaluator.hpp"
#include "nn/optimizer.hpp"
#include "nn/training_step.hpp"
#include "support/params_fixture.hpp"

using namespace csrun;
using graph::HostTensor;

namespace {

// loss = sum(w * x) over a parameter w [2], with x fed each step: the gradient is x. `others`
// name more parameters [2] (ones) that the loss reads the same way; those under `norms`, modules
// of a normalization class.
struct TinyStep {
  graph::Graph graph;
  graph::Feeds state;

  explicit TinyStep(const std::string& init_yaml, const std::string& device = "CPU",
                    const std::vector<std::string>& others = {},
                    const std::vector<std::string>& norms = {},
                    std::optional<double> overflow_tolerance = std::nullopt) {
    auto loaded = test::load_params_text(
        "trainer:\n  init:\n    device: " + device +
        "\n    model: {name: fc_mnist, depth: 1, hidden_size: 2}\n" + init_yaml);
    INFO(loaded.dump());
    REQUIRE_FALSE(loaded.diagnostics.has_errors());
    nn::StepContext context(graph, true, 1);
    graph::Tensor x(graph, graph.add_input("x", {{2}, graph::DType::f32}));
    graph::Tensor w = nn::Scope(context, "model").parameter("w", {2}, {});
    graph::Tensor loss = sum(w * x);
    for (const std::string& name : others)
      loss = loss + sum(nn::Scope(context, "model").parameter(name, {2}, {}) * x);
    for (const std::string& module : norms)
      context.add_normalization_module(module);
    const config::TrainerSpec& trainer = loaded.trainer();
    config::PrecisionSpec precision = trainer.precision;
    precision.loss_scaling.overflow_tolerance = overflow_tolerance;
    nn::append_training_update(context, loss, {*trainer.optimizer, trainer.schedulers, precision});
    for (const graph::Variable& variable : graph.variables()) {
      state[variable.name] =
          HostTensor::filled(graph.node(variable.node).type.shape,
                             variable.init.name == "constant" ? variable.init.value : 0.0,
                             graph.node(variable.node).type.dtype);
    }
    state["model.w"] = HostTensor{{2}, graph::DType::f32, {1.0, -2.0}};
    for (const std::string& name : others)
      state["model." + name] = HostTensor{{2}, graph::DType::f32, {1.0, 1.0}};
  }

  // Runs a step with gradient x; returns the graph's outputs by name.
  std::map<std::string, double> run(std::vector<double> x) {
    graph::Feeds feeds = state;
    feeds["x"] = HostTensor{{2}, graph::DType::f32, std::move(x)};
    std::vector<graph::NodeId> fetch;
    for (const auto& update : graph.updates())
      fetch.push_back(update.node);
    for (const auto& output : graph.outputs())
      fetch.push_back(output.node);
    auto values = graph::evaluate_reference(graph, feeds, fetch);
    for (std::size_t i = 0; i < graph.updates().size(); ++i)
      state[graph.updates()[i].name] = values[i];
    std::map<std::string, double> outputs;
    for (std::size_t i = 0; i < graph.outputs().size(); ++i) {
      outputs[graph.outputs()[i].name] = values[graph.updates().size() + i].values[0];
    }
    return outputs;
  }

  double w(std::size_t i) { return state["model.w"].values[i]; }
};

}  // namespace

TEST_CASE("SGD with momentum, nesterov and weight decay (PyTorch semantics)") {
  TinyStep sgd("    optimizer: {SGD: {lr: 0.1, momentum: 0.9, weight_decay: 0.01}}\n");
  sgd.run({0.5, 1.0});
  // g = x + wd w; first step: buffer = g.
  double g0 = 0.5 + 0.01 * 1.0;
  CHECK(sgd.w(0) == Approx(1.0 - 0.1 * g0));
  double w1 = sgd.w(0);
  sgd.run({0.5, 1.0});
  double g1 = 0.5 + 0.01 * w1;
  CHECK(sgd.w(0) == Approx(w1 - 0.1 * (0.9 * g0 + g1)));
  CHECK(sgd.state["global_step"].values[0] == 2);

  TinyStep nesterov("    optimizer: {SGD: {lr: 0.1, momentum: 0.5, nesterov: true}}\n");
  nesterov.run({1.0, 1.0});
  CHECK(nesterov.w(0) == Approx(1.0 - 0.1 * (1.0 + 0.5 * 1.0)));
}

TEST_CASE("Adam, AdamW and Lamb follow their formulas") {
  double b1 = 0.9, b2 = 0.999, eps = 1e-6, lr = 0.01;
  // The Model Zoo's AdamBase: the corrections scale the step, eps adds to sqrt(v) as it is (with
  // gradients this small, PyTorch's Adam, sqrt(v) / sqrt(1 - b2^t) + eps, steps 1.6x further).
  double small = 1e-6;
  TinyStep adam("    optimizer: {Adam: {lr: 0.01}}\n");
  adam.run({small, 1.0});
  adam.run({small / 2, 1.0});
  double m1 = (1 - b1) * small, v1 = (1 - b2) * small * small;
  double first = 1.0 - lr * std::sqrt(1 - b2) / (1 - b1) * m1 / (std::sqrt(v1) + eps);
  double m = b1 * m1 + (1 - b1) * small / 2;
  double v = b2 * v1 + (1 - b2) * small * small / 4;
  CHECK(adam.w(0) ==
        Approx(first - lr * std::sqrt(1 - b2 * b2) / (1 - b1 * b1) * m / (std::sqrt(v) + eps)));

  // Decoupled weight decay of the weight the step started from.
  TinyStep adamw("    optimizer: {AdamW: {lr: 0.01, weight_decay: 0.1, correct_bias: true}}\n");
  adamw.run({0.5, 1.0});
  m1 = (1 - b1) * 0.5;
  v1 = (1 - b2) * 0.25;
  double step_size = lr * std::sqrt(1 - b2) / (1 - b1);
  CHECK(adamw.w(0) == Approx(1.0 - step_size * m1 / (std::sqrt(v1) + eps) - lr * 0.1 * 1.0));

  TinyStep lamb("    optimizer: {Lamb: {lr: 0.01, weight_decay: 0.0}}\n");
  lamb.run({0.5, 1.0});
  double a0 = m1 / (std::sqrt(v1) + eps);
  double a1 = ((1 - b1) * 1.0) / (std::sqrt((1 - b2) * 1.0) + eps);
  double trust = std::sqrt(1.0 + 4.0) / std::sqrt(a0 * a0 + a1 * a1);
  CHECK(lamb.w(0) == Approx(1.0 - lr * trust * a0));
}

TEST_CASE("weight decay leaves out biases and the weights of normalization modules") {
  // The Model Zoo's configure_param_groups: "bias" anywhere in the name, or the name of a
  // LayerNorm, BatchNorm or GroupNorm module in it; its own RMSNorm is not one of them.
  std::vector<std::string> others = {"dense.weight", "dense.bias", "relative_attention_bias.weight",
                                     "ln.weight", "rms.weight"};
  for (const char* optimizer :
       {"AdamW: {lr: 0.01, weight_decay: 0.1}", "Adam: {lr: 0.01, weight_decay: 0.1}",
        "SGD: {lr: 0.01, weight_decay: 0.1}"}) {
    INFO(optimizer);
    TinyStep step("    optimizer: {" + std::string(optimizer) + "}\n", "CPU", others, {"model.ln"});
    step.run({0.0, 0.0});
    auto moved = [&](const std::string& name) {
      return step.state["model." + name].values[0] != 1.0;
    };
    CHECK(moved("dense.weight"));
    CHECK(moved("rms.weight"));
    CHECK_FALSE(moved("dense.bias"));
    CHECK_FALSE(moved("relative_attention_bias.weight"));
    CHECK_FALSE(moved("ln.weight"));
  }
}

TEST_CASE("gradient clipping by norm and by value") {
  TinyStep norm(
      "    optimizer: {SGD: {lr: 1.0}}\n    precision: {enabled: false, max_gradient_norm: 1.0}\n");
  auto outputs = norm.run({3.0, 4.0});
  CHECK(outputs["grad_norm"] == Approx(5.0));
  CHECK(norm.w(0) == Approx(1.0 - 3.0 / (5.0 + 1e-6)));
  TinyStep value(
      "    optimizer: {SGD: {lr: 1.0}}\n    precision: {enabled: false, max_gradient_value: "
      "0.5}\n");
  value.run({3.0, -0.25});
  CHECK(value.w(0) == Approx(0.5));
  CHECK(value.w(1) == Approx(-2.0 + 0.25));
}

TEST_CASE("dynamic loss scaling skips non-finite steps, halves, and grows") {
  TinyStep scaled(
      "    optimizer: {SGD: {lr: 0.1}}\n    precision: {enabled: true, fp16_type: float16, "
      "loss_scaling_factor: dynamic, initial_loss_scale: 1024.0, steps_per_increase: 2}\n",
      "CSX");
  REQUIRE(scaled.state.count("grad_scaler.scale"));
  auto first = scaled.run({INFINITY, 1.0});
  CHECK(first["loss_scale"] == 1024.0);
  CHECK(scaled.w(0) == 1.0);  // skipped
  CHECK(scaled.w(1) == -2.0);
  CHECK(scaled.state["grad_scaler.scale"].values[0] == 512.0);
  scaled.run({1.0, 1.0});
  CHECK(scaled.w(0) == Approx(0.9));
  CHECK(scaled.state["grad_scaler.scale"].values[0] == 512.0);
  scaled.run({1.0, 1.0});
  CHECK(scaled.state["grad_scaler.scale"].values[0] == 512.0);
  // cerebras.pytorch's GradScaler doubles in the step after steps_per_increase since the change.
  scaled.run({1.0, 1.0});
  CHECK(scaled.state["grad_scaler.scale"].values[0] == 1024.0);
  CHECK(scaled.state["grad_scaler.growth_tracker"].values[0] == 0.0);
  CHECK(scaled.state["global_step"].values[0] == 4.0);

  // Its bounds where the params give none: 2^15 for float16 (where the scale starts) and 2^31
  // for cbfloat16, at least 2^-14.
  TinyStep float16(
      "    optimizer: {SGD: {lr: 0.1}}\n    precision: {enabled: true, fp16_type: "
      "float16, loss_scaling_factor: dynamic, steps_per_increase: 1}\n",
      "CSX");
  CHECK(float16.state["grad_scaler.scale"].values[0] == 32768.0);
  float16.run({1.0, 1.0});
  float16.run({1.0, 1.0});
  CHECK(float16.state["grad_scaler.scale"].values[0] == 32768.0);
  TinyStep cbfloat16(
      "    optimizer: {SGD: {lr: 0.1}}\n    precision: {enabled: true, fp16_type: "
      "cbfloat16, loss_scaling_factor: dynamic, initial_loss_scale: 1e-4}\n",
      "CSX");
  CHECK(cbfloat16.state["grad_scaler.scale"].values[0] == Approx(1e-4));
  cbfloat16.run({INFINITY, 1.0});
  CHECK(cbfloat16.state["grad_scaler.scale"].values[0] == std::ldexp(1.0, -14));
  TinyStep started(
      "    optimizer: {SGD: {lr: 0.1}}\n    precision: {enabled: true, fp16_type: "
      "cbfloat16, loss_scaling_factor: dynamic}\n",
      "CSX");
  CHECK(started.state["grad_scaler.scale"].values[0] == std::ldexp(1.0, 31));
}

TEST_CASE("TensorFlow's loss scaling tolerates a share of overflowing steps") {
  TinyStep tensorflow(
      "    optimizer: {SGD: {lr: 0.1}}\n    precision: {enabled: true, fp16_type: float16, "
      "loss_scaling_factor: dynamic, initial_loss_scale: 1024.0, steps_per_increase: 4}\n",
      "CSX", {}, {}, 0.4);
  std::vector<double> scales;
  // Overflow at once (1 of 1 > 0.4: halved, counts restart), two finite steps, an overflow that
  // is 1 of 3 (tolerated, skipped all the same), then the 4th step since the change doubles.
  const double overflow = INFINITY;
  for (double x : {overflow, 1.0, 1.0, overflow, 1.0}) {
    tensorflow.run({x, 1.0});
    scales.push_back(tensorflow.state["grad_scaler.scale"].values[0]);
  }
  CHECK(scales == std::vector<double>{512.0, 512.0, 512.0, 512.0, 1024.0});
  CHECK(tensorflow.w(0) == Approx(1.0 - 3 * 0.1));  // the two overflowing steps are skipped
  CHECK(tensorflow.state["grad_scaler.growth_tracker"].values[0] == 0.0);
  CHECK(tensorflow.state["grad_scaler.overflows"].values[0] == 0.0);
}

TEST_CASE("clipping after dynamic loss scaling sees the unscaled gradients, or none") {
  TinyStep clipped(
      "    optimizer: {SGD: {lr: 1.0}}\n    precision: {enabled: true, fp16_type: float16, "
      "loss_scaling_factor: dynamic, initial_loss_scale: 4.0, max_gradient_norm: 1.0}\n",
      "CSX");
  auto overflow = clipped.run({INFINITY, 1.0});
  CHECK(overflow["grad_norm"] == 0.0);  // the step is skipped: no norm, nothing NaN
  CHECK(clipped.w(0) == 1.0);
  CHECK(clipped.w(1) == -2.0);
  auto finite = clipped.run({3.0, 4.0});
  CHECK(finite["loss_scale"] == 2.0);
  CHECK(finite["grad_norm"] == Approx(5.0));  // of the gradients unscaled
  CHECK(clipped.w(0) == Approx(1.0 - 3.0 / (5.0 + 1e-6)));
  CHECK(clipped.w(1) == Approx(-2.0 - 4.0 / (5.0 + 1e-6)));
}

TEST_CASE("the learning rate is a closed form of the schedulers' step, which skipped steps keep") {
  const std::string schedule =
      "    optimizer: {SGD: {}}\n    schedulers: [{LinearLR: {initial_learning_rate: 0.0, "
      "end_learning_rate: 1.0, total_iters: 4}}]\n";
  TinyStep warmup(schedule);
  std::vector<double> rates;
  for (int i = 0; i < 6; ++i)
    rates.push_back(warmup.run({0.0, 0.0})["lr/0"]);
  CHECK(rates == std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0, 1.0});
  CHECK(warmup.state["lr_scheduler.last_epoch"].values[0] == 6.0);

  // cerebras.pytorch's schedulers count the updates taken: a step that dynamic loss scaling
  // skips advances the global step alone.
  TinyStep skipping(schedule +
                        "    precision: {enabled: true, fp16_type: float16, "
                        "loss_scaling_factor: dynamic}\n",
                    "CSX");
  rates.clear();
  for (double g : {0.0, double(INFINITY), 0.0, 0.0})
    rates.push_back(skipping.run({g, 0.0})["lr/0"]);
  CHECK(rates == std::vector<double>{0.0, 0.25, 0.25, 0.5});
  CHECK(skipping.state["global_step"].values[0] == 4.0);
  CHECK(skipping.state["lr_scheduler.last_epoch"].values[0] == 3.0);
}

// test/data/golden/optimizers.json (scripts/golden/optimizers.py): torch.optim's weights after
// each of eight steps, and cerebras.pytorch's Lion.
TEST_CASE("RMSprop, Adagrad, Adamax, Adadelta, NAdam, RAdam and Lion match PyTorch step by step") {
  std::ifstream file(std::string(CSRUN_TEST_DATA) + "/golden/optimizers.json");
  REQUIRE(file);
  nlohmann::json golden = nlohmann::json::parse(file);
  for (const nlohmann::json& c : golden["cases"]) {
    std::string name = c["name"];
    INFO(name);
    TinyStep step("    optimizer: " + c["spec"].dump() + "\n");
    for (std::size_t s = 0; s < golden["gradients"].size(); ++s) {
      step.run(golden["gradients"][s].get<std::vector<double>>());
      INFO("step " << s + 1);
      CHECK(step.w(0) == Approx(c["weights"][s][0].get<double>()).epsilon(1e-5));
      CHECK(step.w(1) == Approx(c["weights"][s][1].get<double>()).epsilon(1e-5));
    }
  }
}

TEST_CASE("unsupported optimizers are refused clearly") {
  auto loaded = test::load_params_text(
      "trainer:\n  init:\n    device: CPU\n    model: {name: fc_mnist, depth: 1, hidden_size: 2}\n"
      "    optimizer: {ASGD: {}}\n");
  graph::Graph graph;
  nn::StepContext context(graph, true, 1);
  graph::Tensor w = nn::Scope(context, "model").parameter("w", {2}, {});
  CHECK_THROWS_WITH(
      nn::append_training_update(context, sum(w), {*loaded.trainer().optimizer, {}, {}}),
      Catch::Contains("the optimizer ASGD is not supported yet"));
}

TEST_CASE("Adafactor refuses the options cerebras.pytorch refuses, naming them") {
  for (const char* options :
       {"{relative_step: true}", "{warmup_init: true}", "{beta1: 0.9}", "{clip_threshold: 2.0}"}) {
    INFO(options);
    auto loaded = test::load_params_text(
        "trainer:\n  init:\n    device: CPU\n    model: {name: fc_mnist, depth: 1, hidden_size: "
        "2}\n    optimizer: {Adafactor: " +
        std::string(options) + "}\n");
    CHECK_THROWS_WITH(nn::make_optimizer(*loaded.trainer().optimizer),
                      Catch::Contains("Adafactor: ") && Catch::Contains("Model Zoo"));
  }
}
