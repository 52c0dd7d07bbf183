#include <catch2/catch.hpp>

#include <cmath>

#include "config/params_loader.hpp"
#include "support/params_fixture.hpp"

using namespace csrun::config;

namespace {

using Loaded = csrun::test::LoadedParams;

Loaded load_file(const std::string& path, const LoadOptions& options = {}) {
  return csrun::test::load_params_file(path, options);
}

Loaded load(const std::string& yaml, const LoadOptions& options = {}) {
  return csrun::test::load_params_text(yaml, options);
}

const std::string kLegacy = R"(train_input:
  data_processor: MNISTDataProcessor
  batch_size: 8
eval_input:
  data_processor: MNISTDataProcessor
  batch_size: 8
model:
  name: fc_mnist
  depth: 2
  hidden_size: 16
optimizer:
  optimizer_type: SGD
  learning_rate: 0.01
runconfig:
  max_steps: 10
)";

std::string trainer_with(const std::string& init_extra, const std::string& device = "device: CPU") {
  return "trainer:\n  init:\n    " + device +
         "\n    model:\n      name: fc_mnist\n      depth: 1\n"
         "      hidden_size: 4\n    loop:\n      max_steps: 5\n" +
         init_extra + "  fit:\n    train_dataloader:\n      batch_size: 4\n";
}

// "trainer:\n<body>" -> "- trainer:\n<body indented>", one item of a trainer list.
std::string list_item(const std::string& trainer) {
  std::string item = "- trainer:\n";
  std::size_t start = trainer.find('\n') + 1;
  while (start < trainer.size()) {
    std::size_t end = trainer.find('\n', start);
    item += "    " + trainer.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return item;
}

RunconfigOverride flag(const std::string& key, Node value) {
  value.set_mark(SourceMark{"command line (--" + key + ")"});
  return RunconfigOverride{key, value};
}

}  // namespace

TEST_CASE("a legacy params file and its trainer-format twin describe the same run") {
  std::string data = CSRUN_MODELZOO_CONFIGS "/";
  Loaded legacy = load_file(data + "fc_mnist__params.yaml");
  Loaded trainer = load_file(data + "fc_mnist__params_cszoov2.yaml");
  REQUIRE_FALSE(legacy.diagnostics.has_errors());
  REQUIRE_FALSE(trainer.diagnostics.has_errors());
  CHECK(legacy.run.format == ParamsFormat::legacy);
  CHECK(trainer.run.format == ParamsFormat::trainer);
  CHECK(legacy.trainer().tree.same_value(trainer.trainer().tree));
  const TrainerSpec& spec = legacy.trainer();
  CHECK(spec.model.name == "fc_mnist");
  CHECK(spec.optimizer->type == "SGD");
  CHECK(spec.schedulers.at(0).type == "ConstantLR");
  CHECK(spec.loop.max_steps == 1000);
  CHECK(spec.logging.log_steps == 50);
  CHECK(spec.checkpoint.steps == 10000000);
  CHECK(spec.seed == 1);
  CHECK(spec.backend.device == Device::csx);
  CHECK(spec.backend.device_defaulted);
  CHECK(spec.fit->val_dataloaders.size() == 1);
  CHECK(spec.validate.has_value());
  CHECK(spec.validate_all.has_value());
}

TEST_CASE("legacy optimizer and schedule keys map to the trainer format") {
  Loaded loaded = load(
      R"(train_input: {data_processor: GptHDF5DataProcessor, batch_size: 8, data_dir: d, micro_batch_size: 4}
model: {name: gpt2, vocab_size: 100, mixed_precision: true, use_bfloat16: true}
optimizer:
  optimizer_type: adamw
  beta1: 0.8
  beta2: 0.9
  weight_decay_rate: 0.1
  epsilon: 1.0e-8
  max_gradient_norm: 1.0
  log_summaries: true
  learning_rate:
    - {scheduler: Linear, initial_learning_rate: 0.0, end_learning_rate: 0.1, steps: 100}
    - {scheduler: CosineDecay, initial_learning_rate: 0.1, end_learning_rate: 0.0, decay_steps: 900, alpha: 0.1}
runconfig: {max_steps: 1000, max_checkpoints: 3, retrace_every_iteration: true, check_loss_values: false}
)");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  const TrainerSpec& spec = loaded.trainer();
  CHECK(spec.optimizer->type == "AdamW");
  const Node* betas = spec.optimizer->params.find("betas");
  REQUIRE(betas);
  CHECK(betas->items().at(0).as_number() == Approx(0.8));
  CHECK(betas->items().at(1).as_number() == Approx(0.9));
  CHECK(spec.optimizer->params.find("weight_decay")->as_number() == Approx(0.1));
  // 1.x's epsilon is 2.0's eps (it was ignored, and the run took the default 1e-6, until 2.0
  // renamed it).
  CHECK(
      loaded.warning("optimizer.epsilon: epsilon is the Model Zoo 1.x spelling of eps (2.0 "
                     "renamed it); csrun reads it as eps"));
  CHECK(spec.optimizer->params.find("eps")->as_number() == Approx(1e-8));
  CHECK(loaded.warning("'alpha' is not a parameter of CosineDecayLR and has no effect"));
  REQUIRE(spec.schedulers.size() == 1);
  const ClassSpec& sequential = spec.schedulers[0];
  CHECK(sequential.type == "SequentialLR");
  REQUIRE(sequential.children.size() == 2);
  CHECK(sequential.children[0].type == "LinearLR");
  CHECK(sequential.children[1].type == "CosineDecayLR");
  CHECK(sequential.children[1].params.find("total_iters")->as_int() == 900);
  CHECK(sequential.params.find("milestones")->render() == "[100]");
  CHECK(spec.precision.fp16_type == HalfType::bfloat16);
  CHECK(spec.precision.max_gradient_norm == 1.0);
  CHECK(spec.checkpoint.keep_last == 3);
  CHECK(spec.backend.retrace_every_iteration);
  CHECK(spec.fit->train_dataloader.find("micro_batch_size")->as_int() == 4);
  bool compute_norm = false;
  bool check_loss_disabled = false;
  for (const ClassSpec& callback : spec.callbacks) {
    compute_norm = compute_norm || callback.type == "ComputeNorm";
    check_loss_disabled =
        check_loss_disabled || (callback.type == "CheckLoss" && callback.disabled);
  }
  CHECK(compute_norm);
  CHECK(check_loss_disabled);
}

TEST_CASE("legacy learning-rate forms") {
  SECTION("a number is a constant schedule") {
    Loaded loaded = load(kLegacy);
    REQUIRE_FALSE(loaded.diagnostics.has_errors());
    CHECK(loaded.trainer().schedulers.at(0).type == "ConstantLR");
    CHECK(loaded.trainer().optimizer->params.find("learning_rate")->as_number() == Approx(0.01));
  }
  SECTION("main_scheduler: chained chains the schedules") {
    std::string text = kLegacy;
    text.replace(
        text.find("learning_rate: 0.01"), 19,
        "learning_rate: [{scheduler: Linear, initial_learning_rate: 0.1, end_learning_rate: 0.0, "
        "steps: 5, main_scheduler: chained}, {scheduler: Exponential, initial_learning_rate: 1.0, "
        "decay_rate: 0.5, decay_steps: 2, main_scheduler: chained}]");
    Loaded loaded = load(text);
    INFO(loaded.dump());
    REQUIRE_FALSE(loaded.diagnostics.has_errors());
    const ClassSpec& chained = loaded.trainer().schedulers.at(0);
    CHECK(chained.type == "ChainedScheduler");
    CHECK(chained.children.at(1).type == "ExponentialLR");
    CHECK(chained.children.at(1).params.find("decay_rate")->as_number() == Approx(0.5));
  }
  SECTION("disable_lr_steps_reset: the final schedule continues on the global step") {
    auto schedules = [](const std::string& list) {
      std::string text = kLegacy;
      text.replace(text.find("learning_rate: 0.01"), 19,
                   "disable_lr_steps_reset: true\n  learning_rate: " + list);
      return load(text);
    };
    auto second = [](const Loaded& loaded) -> const ClassSpec& {
      return loaded.trainer().schedulers.at(0).children.at(1);
    };
    auto initial_rate = [](const ClassSpec& schedule) {
      return schedule.params.find("initial_learning_rate")->as_number();
    };
    // 1.6's BERT: warm-up over 10 steps, then a decay over 100 computed on the global step.
    Loaded bert = schedules(
        "[{scheduler: Linear, initial_learning_rate: 0.0, end_learning_rate: 1.0, steps: 10}, "
        "{scheduler: Linear, initial_learning_rate: 1.0, end_learning_rate: 0.0, steps: 100}]");
    INFO(bert.dump());
    REQUIRE_FALSE(bert.diagnostics.has_errors());
    CHECK(bert.has(Severity::note,
                   "optimizer.learning_rate.1: disable_lr_steps_reset: true runs this LinearLR on "
                   "the global step: csrun writes it as the rest of that curve, from its step 10"));
    const ClassSpec& decay = second(bert);
    CHECK(decay.type == "LinearLR");
    CHECK(initial_rate(decay) == Approx(0.9));
    CHECK(decay.params.find("total_iters")->as_int() == 90);
    // A polynomial keeps its power; one past its span is its end value; an exponential's rate
    // is its rate at the start.
    Loaded later = schedules(
        "[{scheduler: Constant, learning_rate: 1.0, steps: 50}, {scheduler: Polynomial, "
        "initial_learning_rate: 1.0, end_learning_rate: 0.0, steps: 100, power: 2.0}]");
    CHECK(initial_rate(second(later)) == Approx(0.25));
    Loaded past = schedules(
        "[{scheduler: Constant, learning_rate: 1.0, steps: 50}, {scheduler: Linear, "
        "initial_learning_rate: 1.0, end_learning_rate: 0.5, steps: 40}]");
    const ClassSpec& constant = second(past);
    CHECK(constant.type == "ConstantLR");
    CHECK(constant.params.find("learning_rate")->as_number() == Approx(0.5));
    Loaded exponential = schedules(
        "[{scheduler: Constant, learning_rate: 1.0, steps: 20}, {scheduler: Exponential, "
        "initial_learning_rate: 1.0, decay_rate: 0.5, decay_steps: 10}]");
    CHECK(initial_rate(second(exponential)) == Approx(0.25));
    // A cosine has no schedule of its own steps for the rest of its curve: it says so.
    Loaded cosine = schedules(
        "[{scheduler: Constant, learning_rate: 1.0, steps: 20}, {scheduler: CosineDecay, "
        "initial_learning_rate: 1.0, end_learning_rate: 0.0, decay_steps: 100}]");
    CHECK(
        cosine.warning("disable_lr_steps_reset: true runs this CosineDecayLR on the global "
                       "step, from step 20 of its curve; csrun runs it from its own start"));
  }
  SECTION("unknown schedule") {
    std::string text = kLegacy;
    text.replace(text.find("learning_rate: 0.01"), 19,
                 "learning_rate: {scheduler: Linaer, steps: 3}");
    Loaded loaded = load(text);
    CHECK(loaded.error(
        "p.yaml:13:30: error: optimizer.learning_rate.scheduler: Invalid lr_scheduler type. "
        "Expected one of ['ConstantLR', 'LinearLR', "));
    CHECK(loaded.error("Got: Linaer; did you mean 'Linear'?"));
  }
  SECTION("a non-final schedule without steps") {
    std::string text = kLegacy;
    text.replace(text.find("learning_rate: 0.01"), 19,
                 "learning_rate: [{scheduler: Constant, learning_rate: 0.1}, {scheduler: Linear, "
                 "initial_learning_rate: 0.1, end_learning_rate: 0.0}, {scheduler: Constant, "
                 "learning_rate: 0.0}]");
    Loaded loaded = load(text);
    CHECK(
        loaded.error("Non final learning rate schedulers must have either the 'steps' or "
                     "'decay_steps' parameter given."));
  }
  SECTION("not a number, mapping or list") {
    std::string text = kLegacy;
    text.replace(text.find("learning_rate: 0.01"), 19, "learning_rate: fast");
    CHECK(
        load(text).error("optimizer.learning_rate: Learning rate must be a float, a dict, or a "
                         "list of dicts; found the string 'fast'"));
  }
  SECTION("a number PyYAML reads as a string: taken, with the warning every number gets") {
    std::string text = kLegacy;
    text.replace(text.find("learning_rate: 0.01"), 19, "learning_rate: 1e-3");
    Loaded loaded = load(text);
    CHECK(!loaded.diagnostics.has_errors());
    CHECK(loaded.warning("PyYAML (the Model Zoo's YAML loader) reads 1e-3 as a string"));
  }
}

TEST_CASE("trainer-format schedules: SequentialLR milestones must add up") {
  Loaded loaded = load(trainer_with(R"(    schedulers:
    - SequentialLR:
        milestones: [10]
        schedulers:
        - LinearLR: {initial_learning_rate: 0.0, end_learning_rate: 0.1, total_iters: 5}
        - ConstantLR: {learning_rate: 0.1}
)"));
  CHECK(loaded.error("Expected SequentialLR to have milestones [5], but got [10]"));
  Loaded missing = load(trainer_with(R"(    schedulers:
    - LinearLR: {initial_learning_rate: 0.0, total_iters: 5}
)"));
  CHECK(missing.error("Missing required parameters ['end_learning_rate'] for LinearLR"));
}

TEST_CASE("cyclic schedules: their checks, their notes, their legacy keys") {
  Loaded empty_phase = load(trainer_with(R"(    schedulers:
    - OneCycleLR: {initial_learning_rate: 0.01, max_lr: 0.1, total_steps: 4, pct_start: 0.25}
)"));
  CHECK(
      empty_phase.error("OneCycleLR: its first phase is empty: pct_start x total_steps must "
                        "exceed 1 (it is 1)"));
  Loaded three = load(trainer_with(R"(    schedulers:
    - OneCycleLR: {initial_learning_rate: 0.01, max_lr: 0.1, total_steps: 100, pct_start: 0.6,
                   three_phase: true}
)"));
  CHECK(three.error("OneCycleLR: its third phase is empty"));
  Loaded short_cycle = load(trainer_with(R"(    schedulers:
    - OneCycleLR: {initial_learning_rate: 0.01, max_lr: 0.1, total_steps: 3, pct_start: 0.5}
)"));
  CHECK_FALSE(short_cycle.diagnostics.has_errors());
  CHECK(
      short_cycle.warning("OneCycleLR's cycle of total_steps 3 ends before the run's 5 steps; "
                          "past it the Model Zoo's closed form, which csrun follows, rises "
                          "again toward max_lr"));
  Loaded cyclic = load(trainer_with(R"(    schedulers:
    - CyclicLR: {base_lr: 0.01, max_lr: 0.1, scale_mode: iterations, gamma: 0.9}
)"));
  CHECK_FALSE(cyclic.diagnostics.has_errors());
  CHECK(cyclic.warning("scale_mode has no effect: CyclicLR scales mode 'triangular' per cycle"));
  CHECK(cyclic.warning("gamma has no effect: only CyclicLR's mode 'exp_range' reads it"));
  CHECK(load(trainer_with("    schedulers: [{LambdaLR: {initial_learning_rate: 0.1}}]\n"))
            .has(Severity::note, "initial_learning_rate^2 x s/30 x 0.95^s"));
  // A 1.x schedule keeps the keys that are its own parameters: CyclicLR's gamma is no decay_rate.
  std::string text = kLegacy;
  text.replace(text.find("learning_rate: 0.01"), 19,
               "learning_rate: {scheduler: Cyclic, learning_rate: 0.01, max_lr: 0.1, mode: "
               "exp_range, gamma: 0.99}");
  Loaded legacy = load(text);
  INFO(legacy.dump());
  REQUIRE_FALSE(legacy.diagnostics.has_errors());
  const ClassSpec& schedule = legacy.trainer().schedulers.at(0);
  CHECK(schedule.type == "CyclicLR");
  CHECK(schedule.params.find("base_lr")->as_number() == Approx(0.01));
  CHECK(schedule.params.find("gamma")->as_number() == Approx(0.99));
}

TEST_CASE("device and backend rules use the Model Zoo's texts") {
  CHECK(load(trainer_with("", "device: TPU"))
            .error("Invalid device type: TPU. Expected one of {'CSX', 'CPU', 'GPU'}."));
  CHECK(load(trainer_with("", "device: CSX\n    backend: {backend_type: CSX}"))
            .error("backend and device are mutually exclusive arguments of Trainer. Please only "
                   "provide one or the other"));
  Loaded defaulted = load(trainer_with("", "seed: 1"));
  REQUIRE_FALSE(defaulted.diagnostics.has_errors());
  CHECK(defaulted.trainer().backend.device == Device::csx);
  CHECK(defaulted.trainer().backend.device_defaulted);
}

TEST_CASE("several trainers share one backend type, only cluster_config may differ") {
  std::string cpu = trainer_with("", "device: CPU");
  std::string csx = trainer_with("", "backend: {backend_type: CSX, cluster_config: {num_csx: 2}}");
  std::string csx_dir = trainer_with("", "backend: {backend_type: CSX, compile_dir: /tmp/x}");
  Loaded loaded = load("trainer:\n" + list_item(cpu) + list_item(csx));
  INFO(loaded.dump());
  CHECK(loaded.run.format == ParamsFormat::trainer_list);
  CHECK(
      loaded.error("Cannot instantiate multiple backends. A backend with type CPU has already been "
                   "instantiated."));
  Loaded mismatch = load("trainer:\n" + list_item(csx) + list_item(csx_dir));
  CHECK(mismatch.error(
      "Detected mismatching arguments for CSX backend:\n\tcompile_dir: None != /tmp/x\n"
      "Currently, only cluster_config may be modified across different trainers."));
  Loaded fine = load("trainer:\n" + list_item(csx) + list_item(csx));
  CHECK_FALSE(fine.diagnostics.has_errors());
  CHECK(fine.run.trainers.size() == 2);
  CHECK(load("trainer:\n- init: {}\n")
            .error("Trainer configuration not found in params. Please ensure that the params "
                   "contain a 'trainer' key."));
  CHECK(load("trainer: 5\n").error("Expected trainer to be a dict, or list of dicts. Got: 5"));
  CHECK(load("trainer:\n  fit: {}\n").error("Trainer configuration must have an 'init' key."));
  CHECK(load("trainer:\n  init: {device: CPU}\n")
            .error("Trainer init configuration must have a 'model' key."));
  CHECK(load("trainer:\n  init: {device: CPU, model: {depth: 1}}\n")
            .error("Model configuration must have a 'name' key."));
}

TEST_CASE("model_name is a deprecated alias of name") {
  std::string text = trainer_with("");
  text.replace(text.find("name: fc_mnist"), 14, "model_name: fc_mnist");
  Loaded loaded = load(text);
  CHECK(loaded.warning("The \"model_name\" key is now deprecated"));
  CHECK(loaded.trainer().model.name == "fc_mnist");
  text.replace(text.find("model_name: fc_mnist"), 20, "model_name: fc_mnist\n      name: gpt2");
  CHECK(load(text).error("Got conflicting model names: 'gpt2' and 'fc_mnist'"));
}

TEST_CASE("step counts follow the Model Zoo's loop rules") {
  auto loop = [](const std::string& keys) {
    return "trainer:\n  init:\n    device: CSX\n    model: {name: fc_mnist, depth: 1, hidden_size: "
           "2}\n"
           "    loop: {" +
           keys + "}\n  fit:\n    train_dataloader: {batch_size: 4}\n";
  };
  CHECK(load(loop("num_steps: 5, num_epochs: 2"))
            .error("Please specify only one of `num_epochs` or `num_steps`."));
  CHECK(load(loop("eval_steps: 5"))
            .error("`max_steps` must be specified if neither `num_epochs` nor `num_steps` are "
                   "specified."));
  CHECK(load(loop("num_steps: 0"))
            .error("`num_steps` must be greater than 0 in the loop config, got 0"));
  CHECK(load(loop("max_steps: 3000000000"))
            .error("`max_steps` must be at most 2147483647 (2^31 - 1) on CSX, got 3000000000"));
  CHECK(load(loop("max_steps: 9, eval_frequency: 1.5"))
            .error("`eval_frequency` must be a positive integer or a float in the range (0.0, "
                   "1.0]. Got: 1.5"));
  CHECK(load(loop("max_steps: 99999999999999999999"))
            .error("expected an integer; found the integer 99999999999999999999 (too large for 64 "
                   "bits)"));
  Loaded fraction = load(loop("max_steps: 9, eval_frequency: 0.5"));
  REQUIRE_FALSE(fraction.diagnostics.has_errors());
  CHECK(fraction.trainer().loop.eval_frequency->fraction == 0.5);
  Loaded defaulted = load(
      "trainer:\n  init:\n    device: CPU\n    model: {name: fc_mnist, depth: 1, hidden_size: 2}\n"
      "  fit:\n    train_dataloader: {batch_size: 4}\n");
  CHECK(defaulted.trainer().loop_defaulted);
  CHECK(defaulted.trainer().loop.num_epochs == 1);
}

TEST_CASE("precision rules depend on the device") {
  auto precision = [](const std::string& device, const std::string& keys) {
    return "trainer:\n  init:\n    device: " + device +
           "\n    model: {name: fc_mnist, depth: 1, hidden_size: 2}\n    loop: {max_steps: 3}\n"
           "    precision: {" +
           keys + "}\n  fit:\n    train_dataloader: {batch_size: 4}\n";
  };
  CHECK(load(precision("CSX", "fp16_type: half"))
            .error("Invalid value for \"fp16_type\". Expected one of ['float16', 'bfloat16', "
                   "'cbfloat16']. Got: half."));
  CHECK(load(precision("CSX", "fp16_type: cbfloat16"))
            .error("In order to use cbfloat16, dynamic loss scaling must be enabled."));
  Loaded cpu = load(precision("CPU", "fp16_type: cbfloat16"));
  CHECK(cpu.warning("cbfloat16 is only supported on CSX. Setting half dtype to bfloat16"));
  CHECK(cpu.trainer().precision.fp16_type == HalfType::bfloat16);
  Loaded disabled = load(precision("CSX", "enabled: false"));
  CHECK(disabled.warning("Mixed precision must be enabled for CSX. Setting enabled = True"));
  CHECK(disabled.trainer().precision.enabled);
  Loaded bf16 = load(precision("CSX", "fp16_type: bfloat16, loss_scaling_factor: dynamic"));
  CHECK(bf16.has(
      Severity::note,
      "No need to use loss scaling when half dtype is bfloat16. Disabling gradient scaling."));
  CHECK_FALSE(bf16.trainer().precision.loss_scaling.dynamic);
  Loaded cb16 = load(precision("CSX", "fp16_type: cbfloat16, loss_scaling_factor: dynamic"));
  CHECK_FALSE(cb16.diagnostics.has_errors());
  CHECK(cb16.trainer().precision.loss_scaling.dynamic);
  CHECK(cb16.trainer().precision.log_loss_scale);
  CHECK(load(precision("CPU", "loss_scaling_factor: big"))
            .error("'loss_scaling_factor' must be a float, None, or 'dynamic'.Got 'big' instead."));
  CHECK(load(precision("CPU", "max_gradient_norm: 0"))
            .error("max_gradient_norm has to be a positive float. Got 0"));
  CHECK(load(precision("CPU", "max_gradient_norm: 1.0, max_gradient_value: 2.0"))
            .error("Gradients can be clipped by norm(=1.0) or by value(=2.0), but not both. Do not "
                   "set both `max_gradient_norm` and `max_gradient_value`."));
  CHECK(load(precision("CPU", "precision_opt_level: 3"))
            .error("precision_opt_level must be 0, 1 or 2"));
  // A number PyYAML reads as a string is taken, with the warning every such number gets.
  Loaded clipped = load(precision("CPU", "max_gradient_norm: 1e-3"));
  CHECK(!clipped.diagnostics.has_errors());
  CHECK(clipped.warning("reads 1e-3 as a string, not a number"));
  CHECK(clipped.trainer().precision.max_gradient_norm == Approx(1e-3));
  CHECK(!load(precision("CSX", "fp16_type: float16, loss_scaling_factor: 1e3"))
             .diagnostics.has_errors());
  const std::string dynamic = "fp16_type: float16, loss_scaling_factor: dynamic, ";
  CHECK(load(precision("CSX", dynamic + "min_loss_scale: 100.0, max_loss_scale: 10.0"))
            .error("min_loss_scale (100.0) is larger than max_loss_scale (10.0)"));
  CHECK(load(precision("CSX", dynamic + "initial_loss_scale: 1.0e+6, max_loss_scale: 10.0"))
            .warning(") is above max_loss_scale (10.0): the scale starts at max_loss_scale"));
  CHECK(load(precision("CSX", dynamic + "initial_loss_scale: 1.0, min_loss_scale: 10.0"))
            .warning("initial_loss_scale (1.0) is below min_loss_scale (10.0): the first step "
                     "runs at it"));
}

TEST_CASE("a file of Model Zoo 2.4 or earlier that names no half type runs float16, as then") {
  // A 1.9 key (beta1) dates the legacy file; dynamic loss scaling then applies to float16.
  const std::string dated = "  beta1: 0.9\n";
  auto with = [&](const std::string& optimizer_keys, const std::string& model_keys) {
    std::string text = kLegacy;
    text.insert(text.find("runconfig:"), "  loss_scaling_factor: dynamic\n" + optimizer_keys);
    text.insert(text.find("optimizer:"), model_keys);
    return text;
  };
  Loaded old = load(with(dated, "  mixed_precision: true\n"));
  REQUIRE_FALSE(old.diagnostics.has_errors());
  CHECK(old.trainer().precision.fp16_type == HalfType::float16);
  CHECK(old.trainer().precision.loss_scaling.dynamic);
  CHECK(old.has(Severity::note,
                "no half type is named: Model Zoo 1.9 and earlier (which this "
                "file's keys point to) ran float16 then, 2.6 and later bfloat16"));
  CHECK(old.trainer().tree.find("init")->find("precision")->find("fp16_type")->as_string() ==
        "float16");
  // Named, the half type stays; a CPU run has only bfloat16.
  CHECK(load(with(dated, "  mixed_precision: true\n  use_bfloat16: true\n"))
            .trainer()
            .precision.fp16_type == HalfType::bfloat16);
  Loaded cpu = load(with(dated, "") + "  target_device: CPU\n");
  CHECK(cpu.trainer().precision.fp16_type == HalfType::bfloat16);
  CHECK_FALSE(cpu.has(Severity::note, "no half type is named"));
  // Keys that do not tell the release: bfloat16, with a warning where it drops the scaling.
  Loaded undated = load(with("", "  mixed_precision: true\n"));
  CHECK(undated.trainer().precision.fp16_type == HalfType::bfloat16);
  CHECK(
      undated.warning("no half type is named, and this file's keys point to Model Zoo 1.6 and "
                      "later: 2.4 and earlier ran float16 then, 2.6 and later bfloat16, which "
                      "csrun takes (and so drops the dynamic loss scaling)"));
  CHECK(load(kLegacy).has(Severity::note, "no half type is named, and this file's keys point to"));
  // 2.4's trainer files switch mixed precision in the model section; 2.6's do not.
  auto trainer = [](const std::string& model_keys) {
    return "trainer:\n  init:\n    model: {name: fc_mnist, depth: 1, hidden_size: 2" + model_keys +
           "}\n    loop: {max_steps: 3}\n  fit:\n    train_dataloader: {batch_size: 4}\n";
  };
  Loaded r2_4 = load(trainer(", mixed_precision: true"));
  CHECK(r2_4.trainer().precision.fp16_type == HalfType::float16);
  CHECK(r2_4.has(Severity::note, "Model Zoo 2.4 (which this file's keys point to) ran float16"));
  Loaded r2_6 = load(trainer(""));
  CHECK(r2_6.trainer().precision.fp16_type == HalfType::bfloat16);
  CHECK_FALSE(r2_6.has(Severity::note, "no half type is named"));
  CHECK_FALSE(r2_6.warning("no half type is named"));
}

TEST_CASE("a legacy file of Model Zoo 2.2 or earlier without mixed_precision trains float32") {
  // A 1.9 key (beta1) dates the file; model.mixed_precision defaulted to false then.
  auto with = [](const std::string& model_keys, const std::string& device) {
    std::string text = kLegacy;
    text.insert(text.find("runconfig:"), "  beta1: 0.9\n");
    text.insert(text.find("optimizer:"), model_keys);
    return load(text + device);
  };
  for (const char* device : {"CPU", "GPU"}) {
    INFO(device);
    Loaded unset = with("", std::string("  target_device: ") + device + "\n");
    CHECK_FALSE(unset.trainer().precision.enabled);
    CHECK(unset.has(Severity::note, std::string("not set: Model Zoo 1.9 and earlier (which this "
                                                "file's keys point to) trained in float32 on ") +
                                        device + " without it"));
  }
  CHECK(with("  mixed_precision: true\n", "  target_device: CPU\n").trainer().precision.enabled);
  // A CS system always runs mixed precision; undated keys may be 2.4's, whose default differs.
  CHECK(with("", "").trainer().precision.enabled);
  Loaded undated = load(kLegacy + "  target_device: CPU\n");
  CHECK(undated.trainer().precision.enabled);
  CHECK_FALSE(undated.has(Severity::note, "trained in float32"));
}

TEST_CASE("a GPT-2 file of Model Zoo 1.6 that weighs its loss divides it by the batch size") {
  auto gpt2 = [](const std::string& input_extra, const std::string& model_extra) {
    return load("train_input: {data_processor: GptHDF5DataProcessor, data_dir: d, batch_size: 8" +
                input_extra + "}\nmodel: {vocab_size: 100, loss_weight: 0.0009765625" +
                model_extra +
                "}\noptimizer: {optimizer_type: adamw, learning_rate: 0.001}\n"
                "runconfig: {max_steps: 10}\n");
  };
  // 1.6's processor required max_sequence_length; 1.9 asks to remove it.
  Loaded old = gpt2(", max_sequence_length: 1024", "");
  INFO(old.dump());
  REQUIRE_FALSE(old.diagnostics.has_errors());
  CHECK(old.trainer().model.params.find("loss_scaling")->as_string() == "batch_size");
  CHECK(old.has(Severity::note,
                "Model Zoo 1.6's GPT-2 (which this file's keys point to) "
                "divided the loss by the batch size"));
  CHECK(old.trainer().releases.last == Release::r1_6);
  CHECK_FALSE(gpt2("", "").trainer().model.params.contains("loss_scaling"));
  CHECK(gpt2(", max_sequence_length: 1024", ", loss_scaling: num_tokens")
            .trainer()
            .model.params.find("loss_scaling")
            ->as_string() == "num_tokens");
}

TEST_CASE("checkpoint settings") {
  CHECK(load(trainer_with("    checkpoint: {steps: -1}\n"))
            .error("Checkpoint steps must be None or a non-negative integer, but got -1"));
  CHECK(load(trainer_with("    checkpoint: {checkpoint_name: 'c_{epoch}.mdl'}\n"))
            .error("Found invalid keys in checkpoint_name format string. Expected keys: {'step'}. "
                   "Got: {'epoch'}"));
  CHECK(load(trainer_with("    checkpoint: {checkpoint_name: 'step_{step}/model.mdl'}\n"))
            .warning("{step} stands in a folder's name only: checkpoints are found by their file "
                     "names"));
  CHECK(!load(trainer_with("    checkpoint: {checkpoint_name: 'run/c_{step}.mdl'}\n"))
             .warning("{step} stands in a folder's name only"));
  CHECK(load(trainer_with("    callbacks:\n    - LoadCheckpointStates: {load_checkpoint_states: "
                          "'model,weights'}\n"))
            .error("Unexpected keys specified via `load_checkpoint_states`: ['weights']. Only the "
                   "keys in the following list are accepted:"));
  Loaded states =
      load(trainer_with("    callbacks:\n    - LoadCheckpointStates: {load_checkpoint_states: "
                        "'model, dataloader'}\n"));
  CHECK(states.trainer().checkpoint.load_checkpoint_states ==
        std::vector<std::string>{"model", "dataloader"});
  // 2.0-2.2's names.
  Loaded legacy =
      load(kLegacy + "  load_checkpoint_states: model,optimizer,lr_scheduler,global_step\n");
  CHECK_FALSE(legacy.diagnostics.has_errors());
  CHECK(legacy.trainer().checkpoint.load_checkpoint_states ==
        std::vector<std::string>{"model", "optimizer", "lr_scheduler", "global_step"});
}

TEST_CASE("callbacks: core ones are refused, flags reach the dataloaders") {
  CHECK(load(trainer_with("    callbacks:\n    - MixedPrecision: {}\n"))
            .error("Callback MixedPrecision is a core callback and cannot be overridden; set "
                   "trainer.init.precision instead"));
  CHECK(load(trainer_with("    callbacks:\n    - ComputeNrom: {}\n"))
            .error("unknown callback 'ComputeNrom'; did you mean 'ComputeNorm'?"));
  CHECK(load(trainer_with("    callbacks:\n    - ComputeNorm: {}\n      CheckLoss: {}\n"))
            .error("Expected callback to have a single key."));
  Loaded flags = load(trainer_with(
      "    callbacks:\n    - ScopedTrainFlags: {csx.performance.micro_batch_size: 2}\n"));
  REQUIRE_FALSE(flags.diagnostics.has_errors());
  CHECK(flags.trainer().fit->train_dataloader.find("micro_batch_size")->as_int() == 2);
  Loaded wandb = load(trainer_with("    loggers:\n    - WandbLogger: {project: p}\n"));
  CHECK(wandb.warning("WandbLogger (Weights & Biases logging) has no effect in csrun"));
}

TEST_CASE("optimizers") {
  CHECK(load(trainer_with("    optimizer: {SGD: {lr: 0.1}, Adam: {}}\n"))
            .error("Expected optimizer to have a single key. Got: ['SGD', 'Adam']"));
  CHECK(load(trainer_with("    optimizer: {Adamm: {}}\n"))
            .error("unknown optimizer 'Adamm'; did you mean 'Adam'?"));
  CHECK(load(trainer_with("    optimizer: {SGD: {lr: 0.1, learning_rate: 0.2}}\n"))
            .error("lr and learning_rate are the same parameter of SGD; give only one"));
  Loaded lr = load(trainer_with("    optimizer: {sgd: {lr: 0.1, momentum: 0.9}}\n"));
  REQUIRE_FALSE(lr.diagnostics.has_errors());
  CHECK(lr.trainer().optimizer->type == "SGD");
  CHECK(lr.trainer().optimizer->params.find("learning_rate")->as_number() == Approx(0.1));
  CHECK(load(trainer_with("    optimizer: {SGD: {momentum: -1}}\n"))
            .error("optimizer.SGD.momentum: expected a number ≥ 0; found the integer -1"));
}

TEST_CASE("ckpt_path: absent autoloads, null starts fresh, a path loads that file") {
  std::string base = trainer_with("");
  CHECK(load(base).trainer().fit->checkpoint.kind == CheckpointChoice::Kind::autoload);
  CHECK(load(base + "    ckpt_path: null\n").trainer().fit->checkpoint.kind ==
        CheckpointChoice::Kind::none);
  Loaded path = load(base + "    ckpt_path: model_dir/checkpoint_10.mdl\n");
  CHECK(path.trainer().fit->checkpoint.kind == CheckpointChoice::Kind::path);
  CHECK(path.trainer().fit->checkpoint.path == "model_dir/checkpoint_10.mdl");
}

TEST_CASE("CLI runconfig flags override only what they set, in either format") {
  LoadOptions options;
  options.runconfig_overrides = {flag("max_steps", Node::make_int(7)),
                                 flag("num_csx", Node::make_int(2)),
                                 flag("checkpoint_path", Node::make_string("c.mdl"))};
  Loaded legacy = load(kLegacy, options);
  REQUIRE_FALSE(legacy.diagnostics.has_errors());
  CHECK(legacy.trainer().loop.max_steps == 7);
  CHECK(legacy.trainer().backend.cluster.num_csx == 2);
  CHECK(legacy.trainer().fit->checkpoint.path == "c.mdl");
  CHECK(legacy.trainer().validate->checkpoint.path == "c.mdl");
  CHECK(legacy.trainer().optimizer->params.find("learning_rate")->as_number() == Approx(0.01));
  Loaded trainer = load(trainer_with(""), options);
  REQUIRE_FALSE(trainer.diagnostics.has_errors());
  CHECK(trainer.trainer().loop.max_steps == 7);
  CHECK(trainer.trainer().backend.cluster.num_csx == 2);
  CHECK(trainer.trainer().fit->checkpoint.path == "c.mdl");
  CHECK_FALSE(trainer.trainer().validate.has_value());
}

TEST_CASE("the execution mode: a backend key, two legacy runconfig keys and a flag") {
  CHECK(load(trainer_with("")).trainer().backend.execution_mode == ExecutionMode::automatic);
  Loaded trainer =
      load(trainer_with("", "backend: {backend_type: CSX, execution_mode: pipelined}"));
  REQUIRE_FALSE(trainer.diagnostics.has_errors());
  CHECK(trainer.trainer().backend.execution_mode == ExecutionMode::pipelined);
  Loaded strategy = load(kLegacy + "  execution_strategy: pipeline\n");
  INFO(strategy.dump());
  // Only the note that a 1.9 file (execution_strategy) runs float16.
  REQUIRE(strategy.diagnostics.all().size() == 1);
  CHECK(strategy.has(Severity::note, "ran float16 then"));
  CHECK(strategy.trainer().backend.execution_mode == ExecutionMode::pipelined);
  Loaded mode = load(kLegacy + "  execution_mode: weight_streaming\n");
  CHECK(mode.trainer().backend.execution_mode == ExecutionMode::weight_streaming);
  Loaded wrong = load(kLegacy + "  execution_strategy: layerwise\n");
  CHECK(wrong.error("runconfig.execution_strategy"));
  LoadOptions options;
  options.runconfig_overrides = {flag("execution_mode", Node::make_string("weight_streaming"))};
  CHECK(load(kLegacy, options).trainer().backend.execution_mode == ExecutionMode::weight_streaming);
  CHECK(load(trainer_with(""), options).trainer().backend.execution_mode ==
        ExecutionMode::weight_streaming);
}

TEST_CASE("the target_device flag lands where the trainer names its device") {
  LoadOptions options;
  options.runconfig_overrides = {flag("target_device", Node::make_string("CPU"))};
  Loaded with_device = load(trainer_with("", "device: CSX"), options);
  REQUIRE_FALSE(with_device.diagnostics.has_errors());
  CHECK(with_device.trainer().backend.device == Device::cpu);
  Loaded with_backend = load(trainer_with("", "backend: {backend_type: CSX}"), options);
  REQUIRE_FALSE(with_backend.diagnostics.has_errors());
  CHECK(with_backend.trainer().backend.device == Device::cpu);
}

TEST_CASE("set overrides edit any key, creating mappings along the way") {
  LoadOptions options;
  options.set_overrides = {
      parse_set_override("runconfig.max_steps=3"), parse_set_override("optimizer.betas=[0.5, 0.6]"),
      parse_set_override("optimizer.optimizer_type=Adam"), parse_set_override("runconfig.seed=11")};
  Loaded loaded = load(kLegacy, options);
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  CHECK(loaded.trainer().loop.max_steps == 3);
  CHECK(loaded.trainer().seed == 11);
  CHECK(loaded.trainer().optimizer->params.find("betas")->render() == "[0.5, 0.6]");

  LoadOptions dotted;
  dotted.set_overrides = {parse_set_override(
      "trainer.init.callbacks.0.ScopedTrainFlags.csx.performance.micro_batch_size=1")};
  Loaded flags =
      load(trainer_with(
               "    callbacks:\n    - ScopedTrainFlags: {csx.performance.micro_batch_size: 2}\n"),
           dotted);
  REQUIRE_FALSE(flags.diagnostics.has_errors());
  CHECK(flags.trainer().fit->train_dataloader.find("micro_batch_size")->as_int() == 1);

  LoadOptions bad;
  bad.set_overrides = {parse_set_override("runconfig.max_steps.value=3"),
                       parse_set_override("trainer.2.x=1")};
  Loaded scalar = load(kLegacy, bad);
  CHECK(scalar.error(
      "command line (--set runconfig.max_steps.value=3): error: runconfig.max_steps.value: cannot "
      "set a key inside runconfig.max_steps, which is the integer 10"));
  // A section replaced by a scalar has one error, not a second one for the keys it lost.
  LoadOptions section;
  section.set_overrides = {parse_set_override("runconfig=3")};
  Loaded replaced = load(kLegacy, section);
  CHECK(
      replaced.error("command line (--set runconfig=3): error: runconfig: expected a mapping; "
                     "found the integer 3"));
  CHECK(replaced.diagnostics.error_count() == 1);
  LoadOptions init;
  init.set_overrides = {parse_set_override("trainer.init=3")};
  CHECK(load(trainer_with("    optimizer: {SGD: {lr: 0.1}}\n"), init)
            .error("trainer.init: expected a mapping (the trainer's device, model, optimizer and "
                   "callbacks); found the integer 3"));
  CHECK_THROWS_WITH(parse_set_override("novalue"), Catch::Contains("--set expects KEY=VALUE"));
  CHECK_THROWS_WITH(parse_set_override("=3"), Catch::Contains("needs a dotted key path"));
}

TEST_CASE("file-level shape errors") {
  CHECK(load("").error("p.yaml:1:1: error: the params file is empty"));
  CHECK(load("- a\n- b\n").error("expected a mapping at the top level of the params file"));
  CHECK(load(kLegacy + "runconfg: {}\n")
            .error("p.yaml:16:1: error: runconfg: unknown section of a legacy params file; did you "
                   "mean 'runconfig'?"));
  CHECK(load("trainer:\n  init: {device: CPU, model: {name: fc_mnist}}\nruntime: {}\n")
            .error("unexpected top-level key next to `trainer`"));
  // A legacy section there (often a --set written for the other layout) is told its place.
  CHECK(load("trainer:\n  init: {device: CPU, model: {name: fc_mnist}}\ntrain_input: {}\n")
            .error("(legacy sections cannot be mixed in); in this layout train_input's keys are "
                   "under trainer.fit.train_dataloader"));
}

TEST_CASE("a null entry turns a callback off but means empty parameters elsewhere") {
  Loaded callbacks = load(trainer_with("    callbacks:\n    - CheckLoss: null\n"));
  REQUIRE_FALSE(callbacks.diagnostics.has_errors());
  CHECK(callbacks.trainer().callbacks.at(0).disabled);
  Loaded optimizer = load(trainer_with("    optimizer: {SGD: null}\n"));
  REQUIRE_FALSE(optimizer.diagnostics.has_errors());
  CHECK_FALSE(optimizer.trainer().optimizer->disabled);
  CHECK(load(trainer_with("    schedulers: [{SequentialLR: null}]\n"))
            .error("Missing required parameters ['schedulers'] for SequentialLR"));
}

TEST_CASE("use_cs_grad_accum migrates to the dataloaders' micro_batch_size, as 2.2 does") {
  std::string with_accum = kLegacy + "  use_cs_grad_accum: true\n";
  Loaded accumulate = load(with_accum);
  REQUIRE_FALSE(accumulate.diagnostics.has_errors());
  CHECK(accumulate.warning(
      "use_cs_grad_accum is a Model Zoo 2.0 runconfig key that 2.2 and later refuse; csrun "
      "applies their migration: micro_batch_size: auto in train_input and eval_input"));
  const TrainerSpec& trainer = accumulate.trainer();
  CHECK(trainer.fit->train_dataloader.find("micro_batch_size")->as_string() == "auto");
  CHECK(trainer.validate->val_dataloader.find("micro_batch_size")->as_string() == "auto");

  Loaded off = load(kLegacy + "  use_cs_grad_accum: false\n");
  REQUIRE_FALSE(off.diagnostics.has_errors());
  CHECK(off.trainer().fit->train_dataloader.find("micro_batch_size")->is_null());

  std::string own_size = with_accum;
  own_size.replace(own_size.find("  batch_size: 8\n"), 16,
                   "  batch_size: 8\n  micro_batch_size: 4\n");
  Loaded kept = load(own_size);
  REQUIRE_FALSE(kept.diagnostics.has_errors());
  CHECK(kept.trainer().fit->train_dataloader.find("micro_batch_size")->as_int() == 4);
  CHECK(kept.trainer().validate->val_dataloader.find("micro_batch_size")->as_string() == "auto");

  CHECK(load(kLegacy + "  use_cs_grad_accum: 'yes'\n").error("expected a boolean"));
}

TEST_CASE("2.4's precision keys in the model section move to trainer.init.precision") {
  Loaded moved = load(
      trainer_with("", "device: CSX")
          .replace(
              trainer_with("", "device: CSX").find("      hidden_size: 4\n"), 21,
              "      hidden_size: 4\n      mixed_precision: true\n      fp16_type: float16\n"));
  INFO(moved.dump());
  REQUIRE_FALSE(moved.diagnostics.has_errors());
  CHECK(
      moved.warning("mixed_precision in the model section is a Model Zoo 2.4 spelling: later "
                    "releases read it from trainer.init.precision, where csrun moves it"));
  CHECK(moved.trainer().precision.fp16_type == HalfType::float16);
  CHECK_FALSE(moved.trainer().model.params.contains("fp16_type"));
}

TEST_CASE("1.9's use_rms_norm becomes norm_type") {
  Loaded loaded =
      load(R"(train_input: {data_processor: GptHDF5MapDataProcessor, batch_size: 4, data_dir: d}
model: {name: gpt2, vocab_size: 100, hidden_size: 64, num_heads: 4, num_hidden_layers: 2, use_rms_norm: true}
optimizer: {optimizer_type: SGD, learning_rate: 0.1}
runconfig: {max_steps: 2}
)");
  CHECK(
      loaded.warning("use_rms_norm is a Model Zoo 1.9 key; later releases write norm_type: "
                     "rmsnorm"));
  CHECK(loaded.trainer().model.params.find("norm_type")->as_string() == "rmsnorm");
  CHECK_FALSE(loaded.trainer().model.params.contains("use_rms_norm"));
}

TEST_CASE("TensorFlow-era Cosine schedules become CosineDecay with alpha as the final fraction") {
  Loaded loaded = load(R"(train_input: {data_processor: MNISTDataProcessor, batch_size: 8}
model: {name: fc_mnist, depth: 2, hidden_size: 16}
optimizer:
  optimizer_type: SGD
  learning_rate:
    - {scheduler: Linear, initial_learning_rate: 0.0, end_learning_rate: 0.5, steps: 10}
    - {scheduler: Cosine, initial_learning_rate: 0.5, alpha: 0.1, decay_steps: 100, steps: 100}
runconfig: {max_steps: 10}
)");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  CHECK(loaded.warning("scheduler 'Cosine' is the TensorFlow-era spelling of CosineDecay"));
  const ClassSpec& cosine = loaded.trainer().schedulers.front().children.at(1);
  CHECK(cosine.type == "CosineDecayLR");
  CHECK(cosine.params.find("end_learning_rate")->as_number() == Approx(0.05));
  CHECK(cosine.params.find("total_iters")->as_int() == 100);
}

TEST_CASE("TensorFlow-layout runconfig keys are read as their modern spellings") {
  Loaded loaded = load(R"(train_input: {data_processor: MNISTDataProcessor, batch_size: 8}
model: {name: fc_mnist, depth: 2, hidden_size: 16}
optimizer: {optimizer_type: SGD, learning_rate: 0.01}
runconfig:
  max_steps: 10
  save_summary_steps: 5
  log_step_count_steps: 2
  save_checkpoints_steps: 4
  keep_checkpoint_max: 3
  tf_random_seed: 7
  seed: 9
)");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  const TrainerSpec& spec = loaded.trainer();
  CHECK(spec.logging.log_steps == 5);
  CHECK(
      loaded.warning("log_step_count_steps is the TensorFlow-era spelling of "
                     "runconfig.log_steps; an earlier key of this runconfig sets it already"));
  CHECK(spec.checkpoint.steps == 4);
  CHECK(spec.checkpoint.keep_last == 3);
  CHECK(spec.seed == 9);
  CHECK(
      loaded.warning("tf_random_seed is the TensorFlow-era spelling of runconfig.seed; "
                     "runconfig.seed is set too and wins"));

  Loaded keep_all = load(R"(train_input: {data_processor: MNISTDataProcessor, batch_size: 8}
model: {name: fc_mnist, depth: 2, hidden_size: 16}
optimizer: {optimizer_type: SGD, learning_rate: 0.01}
runconfig: {max_steps: 10, keep_checkpoint_max: 0}
)");
  REQUIRE_FALSE(keep_all.diagnostics.has_errors());
  CHECK_FALSE(keep_all.trainer().checkpoint.keep_last);
  CHECK(keep_all.warning("0 keeps every checkpoint"));
}

// A TensorFlow-layout fc_mnist file (its runconfig has a TF Estimator key).
Loaded load_tensorflow_fc_mnist(const std::string& model_extra, const std::string& optimizer) {
  return load(
      "train_input: {data_processor: MNISTDataProcessor, batch_size: 8}\n"
      "model: {name: fc_mnist, depth: 2, hidden_size: 16" +
      model_extra + "}\noptimizer: " + optimizer +
      "\nrunconfig: {max_steps: 10, save_checkpoints_steps: 5}\n");
}

TEST_CASE("a TensorFlow-layout optimizer keeps TensorFlow's meaning and defaults") {
  Loaded implied = load_tensorflow_fc_mnist(
      "", "{learning_rate: 0.001, beta1: 0.8, beta2: 0.99, epsilon: 1.0e-7}");
  INFO(implied.dump());
  REQUIRE_FALSE(implied.diagnostics.has_errors());
  const ClassSpec& adam = *implied.trainer().optimizer;
  CHECK(adam.type == "Adam");
  CHECK(adam.params.find("eps")->as_number() == Approx(1e-7));
  CHECK(adam.params.find("betas")->items().at(0).as_number() == Approx(0.8));
  CHECK(implied.warning("the TensorFlow layout's fc_mnist trains with Adam"));
  // TensorFlow's fc_mnist evaluates its accuracy without being asked.
  CHECK(implied.trainer().model.params.find("compute_eval_metrics")->as_bool());

  Loaded adamw = load_tensorflow_fc_mnist(", mixed_precision: true",
                                          "{optimizer_type: adamw, learning_rate: 0.001}");
  INFO(adamw.dump());
  REQUIRE_FALSE(adamw.diagnostics.has_errors());
  CHECK(adamw.trainer().optimizer->params.find("eps")->as_number() == Approx(1e-5));
  CHECK_FALSE(adamw.trainer().optimizer->params.find("correct_bias")->as_bool());
}

TEST_CASE("a TensorFlow-layout file scales its loss by TensorFlow's CSDynamicLossScale") {
  const std::string dynamic = "{optimizer_type: sgd, learning_rate: 0.1, loss_scaling_factor: ";
  Loaded defaulted = load_tensorflow_fc_mnist(", mixed_precision: true", dynamic + "dynamic}");
  INFO(defaulted.dump());
  REQUIRE_FALSE(defaulted.diagnostics.has_errors());
  const LossScaling& scaling = defaulted.trainer().precision.loss_scaling;
  CHECK(defaulted.trainer().precision.fp16_type == HalfType::float16);  // 1.6 had no bfloat16
  CHECK(scaling.dynamic);
  CHECK(scaling.overflow_tolerance == 0.05);
  Loaded tolerant = load_tensorflow_fc_mnist(", mixed_precision: true",
                                             dynamic + "tf_dynamic, overflow_tolerance: 0.25}");
  REQUIRE_FALSE(tolerant.diagnostics.has_errors());
  CHECK(tolerant.trainer().precision.loss_scaling.overflow_tolerance == 0.25);
  CHECK(tolerant.has(Severity::note,
                     "'tf_dynamic' is TensorFlow's own DynamicLossScale, which "
                     "a Cerebras system replaces with CSDynamicLossScale"));
  CHECK_FALSE(tolerant.warning("overflow_tolerance"));
  CHECK(load_tensorflow_fc_mnist(", mixed_precision: true",
                                 dynamic + "dynamic, overflow_tolerance: -1}")
            .error("overflow_tolerance, the share of overflowing steps above which the loss scale "
                   "halves, must be a number >= 0"));
  // A static scale, or a PyTorch-layout file: no tolerance.
  CHECK_FALSE(load_tensorflow_fc_mnist(", mixed_precision: true", dynamic + "1.0}")
                  .trainer()
                  .precision.loss_scaling.overflow_tolerance);
  std::string pytorch = kLegacy;
  pytorch.insert(pytorch.find("runconfig:"), "  loss_scaling_factor: dynamic\n");
  CHECK_FALSE(load(pytorch).trainer().precision.loss_scaling.overflow_tolerance);
}

TEST_CASE("a TensorFlow-layout model: its vocabulary, its gelu and its initializer lists") {
  Loaded loaded = load(R"(train_input:
  data_processor: GptTfRecordsProcessor
  vocab_size: 50400
  max_sequence_length: 128
  batch_size: 8
model:
  name: gptj
  hidden_size: 64
  num_heads: 4
  num_hidden_layers: 4
  filter_size: 256
  max_position_embeddings: 128
  nonlinearity: gelu
  embedding_initializer: [{name: scaled_init_normal, key: vocab_size}]
  initializer: [{name: variance_scaling, scale: 1.0}]
  output_layer_initializer: [{name: variance_scaling, scale_type: wang_init}]
  use_vsl: false
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10, save_checkpoints_steps: 5}
)");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  const Node& model = loaded.trainer().model.params;
  CHECK(model.find("vocab_size")->as_int() == 50400);
  CHECK(model.find("nonlinearity")->as_string() == "gelu_new");
  const Node& embedding = *model.find("embedding_initializer");
  CHECK(embedding.find("name")->as_string() == "truncated_normal");
  CHECK(embedding.find("std")->as_number() == Approx(1.0 / std::sqrt(50400.0)));
  CHECK(model.find("initializer")->find("scale")->as_number() == Approx(1.0));
  CHECK(model.find("initializer")->find("mode")->as_string() == "fan_in");
  CHECK(model.find("output_layer_initializer")->find("scale")->as_number() == Approx(4.0 / 16.0));
}

TEST_CASE(
    "a TensorFlow-layout GPT model with rotary_dim is the TensorFlow GPT-J, its defaults "
    "with it") {
  auto gptj = [](const std::string& model_extra) {
    return load(
        R"(train_input: {data_processor: GptTfRecordsProcessor, vocab_size: 512, batch_size: 8}
model:
  hidden_size: 64
  num_heads: 4
  num_hidden_layers: 2
  filter_size: 256
  max_position_embeddings: 128
  rotary_dim: 8
  initializer: [{name: variance_scaling, scale: 1.0}]
  output_layer_initializer: [{name: variance_scaling, scale_type: wang_init, distribution: uniform}]
)" + model_extra +
        R"(optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10, save_checkpoints_steps: 5}
)");
  };
  Loaded loaded = gptj("");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  CHECK(loaded.trainer().model.name == "gptj");
  const Node& model = loaded.trainer().model.params;
  for (const char* key :
       {"embedding_dropout_rate", "attention_dropout_rate", "residual_dropout_rate"})
    CHECK(model.find(key)->as_number() == 0.0);
  CHECK(model.find("share_embedding_weights")->as_bool());
  CHECK(model.find("use_bias_in_output")->as_bool());
  CHECK(model.find("layer_norm_epsilon")->as_number() == 1e-8);
  // Keras's truncated normal, cut at two deviations of each weight's own: the normal of the
  // same variance; its uniform stays.
  const Node& kernel = *model.find("initializer");
  CHECK(kernel.find("distribution")->as_string() == "normal");
  CHECK(loaded.has(Severity::note, "Keras's variance_scaling cuts its truncated normal"));
  CHECK(model.find("output_layer_initializer")->find("distribution")->as_string() == "uniform");
  // Its first feed-forward layer is initialized as the projections are.
  CHECK(model.find("ffn_initializer")->same_value(kernel));
  // What the file writes stays.
  Loaded written = gptj("  residual_dropout_rate: 0.1\n  share_embedding_weights: false\n");
  CHECK(written.trainer().model.params.find("residual_dropout_rate")->as_number() == 0.1);
  CHECK_FALSE(written.trainer().model.params.find("share_embedding_weights")->as_bool());
}

TEST_CASE("a TensorFlow-layout T5: its input keys, its attention switch and its defaults") {
  Loaded loaded = load(R"(train_input:
  data_processor: T5DynamicDataProcessor
  vocab_file: ./vocab.txt
  data_dir: ./c4/train
  extra_ids: 50
  src_max_sequence_length: 64
  tgt_max_sequence_length: 16
  shuffle_buffer_size: 100
  seed: 3
  batch_size: 8
model:
  positional_embedding_type: fixed
  d_kv: 16
  num_heads: 4
  attention_type: dot_product
  use_relative_attention_bias: false
  d_ff: 128
  d_model: 64
  encoder_nonlinearity: gelu
  boundary_casting: false
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10, save_checkpoints_steps: 5}
)");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  CHECK(loaded.trainer().tensorflow_layout);
  const Node& model = loaded.trainer().model.params;
  CHECK(model.find("position_embedding_type")->is_null());
  CHECK_FALSE(model.contains("positional_embedding_type"));
  CHECK_FALSE(model.contains("attention_type"));
  CHECK_FALSE(model.contains("boundary_casting"));
  CHECK(model.find("encoder_nonlinearity")->as_string() == "gelu_new");
  CHECK(model.find("extra_ids")->as_int() == 50);
  CHECK(model.find("norm_type")->as_string() == "layernorm");
  CHECK(model.find("use_ffn_bias")->as_bool());
  CHECK(model.find("layer_norm_epsilon")->as_number() == Approx(1e-5));
  CHECK(model.find("lm_loss_weight")->as_number() == Approx(0.015));
  CHECK_FALSE(model.contains("mlm_nonlinearity"));  // BERT's default only
  const Node& input = loaded.trainer().fit->train_dataloader;
  CHECK(input.find("src_vocab_file")->as_string() == "./vocab.txt");
  CHECK(input.find("src_data_dir")->as_string() == "./c4/train");
  CHECK_FALSE(input.contains("shuffle_buffer_size"));
  CHECK_FALSE(input.contains("seed"));
  CHECK(
      loaded.warning("use_relative_attention_bias is the TensorFlow T5's switch; csrun reads "
                     "it as position_embedding_type: null"));
  CHECK(loaded.warning("the TensorFlow T5 processor does not read seed; it has no effect"));

  Loaded scaled = load(
      R"(train_input: {data_processor: T5DynamicDataProcessor, vocab_file: v, data_dir: d, batch_size: 8}
model: {d_model: 64, attention_type: scaled_dot_product}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10, tf_random_seed: 1}
)");
  CHECK(
      scaled.error("the TensorFlow T5 maps onto the PyTorch one only with attention_type: "
                   "dot_product; found 'scaled_dot_product'"));
}

TEST_CASE("a TensorFlow-layout Transformer: d_model, d_ff and d_kv from its own keys") {
  Loaded loaded = load(R"(train_input:
  data_processor: TransformerDynamicDataProcessor
  src_data_dir: ./en
  tgt_data_dir: ./de
  src_vocab_file: ./vocab.en
  tgt_vocab_file: ./vocab.de
  batch_size: 16
  num_buckets: 1
  repeat: true
model:
  hidden_size: 128
  num_heads: 8
  filter_size: 512
  attention_type: scaled_dot_product
  attention_dropout_rate: 0.1
  dropout_seed: 0
optimizer: {optimizer_type: adam, learning_rate: 0.001}
runconfig: {max_steps: 10, keep_checkpoint_max: 2, tf_random_seed: 1}
)");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  const Node& model = loaded.trainer().model.params;
  CHECK(model.find("d_model")->as_int() == 128);
  CHECK(model.find("d_ff")->as_int() == 512);
  CHECK(model.find("d_kv")->as_int() == 16);
  CHECK(model.find("layer_norm_epsilon")->as_number() == Approx(1e-8));
  CHECK(model.find("position_embedding_type")->as_string() == "learned");
  CHECK_FALSE(model.contains("hidden_size"));
  CHECK_FALSE(model.contains("attention_dropout_rate"));
  CHECK_FALSE(loaded.trainer().fit->train_dataloader.contains("num_buckets"));
  CHECK(
      loaded.warning("hidden_size is the TensorFlow Transformer's d_model; csrun reads it as "
                     "d_model"));
}

TEST_CASE("a TensorFlow-layout UNet: its dataset, its batch sizes and its eval input") {
  Loaded loaded = load(R"(train_input:
  dataset: SeverstalDataset
  dataset_path: ./severstal
  train_batch_size: 16
  eval_batch_size: 4
  shuffle_buffer_size: 100
  augment_data: true
  image_shape: [64, 64, 1]
  num_classes: 2
model:
  encoder_filters: [8, 16]
  decoder_filters: [8]
  data_format: channels_first
  tf_summary: false
optimizer: {optimizer_type: adam, learning_rate: 0.001}
runconfig: {max_steps: 10, save_summary_steps: 5, save_checkpoints_steps: 5}
)");
  INFO(loaded.dump());
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  const Node& train = loaded.trainer().fit->train_dataloader;
  CHECK(train.find("data_processor")->as_string() == "SeverstalBinaryClassDataProcessor");
  CHECK(train.find("data_dir")->as_string() == "./severstal");
  CHECK(train.find("batch_size")->as_int() == 16);
  CHECK(train.find("shuffle_buffer")->as_int() == 100);
  CHECK_FALSE(train.contains("eval_batch_size"));
  REQUIRE(loaded.trainer().validate);
  const Node& eval = loaded.trainer().validate->val_dataloader;
  CHECK(eval.find("batch_size")->as_int() == 4);
  CHECK_FALSE(eval.find("augment_data")->as_bool());
  CHECK(eval.find("data_dir")->as_string() == "./severstal");
  CHECK_FALSE(loaded.trainer().model.params.contains("data_format"));
  // TensorFlow's default eval metrics, per-class accuracy included.
  const Node* metrics = loaded.trainer().model.params.find("eval_metrics");
  REQUIRE(metrics);
  CHECK(metrics->render() == "['mIOU', 'DSC', 'MPCA', 'Acc']");
}

TEST_CASE("1.x model switches become norm_type, unless norm_type is written too") {
  Loaded loaded = load(
      R"(train_input: {data_processor: T5DynamicDataProcessor, src_vocab_file: v, src_data_dir: d, batch_size: 8}
model: {name: t5, src_vocab_size: 100, use_t5_layer_norm: true}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10}
)");
  REQUIRE_FALSE(loaded.diagnostics.has_errors());
  CHECK(loaded.trainer().model.params.find("norm_type")->as_string() == "rmsnorm");
  CHECK(
      loaded.warning("use_t5_layer_norm is a Model Zoo 1.x key; later releases write "
                     "norm_type: rmsnorm, which csrun reads it as"));
  Loaded both = load(
      R"(train_input: {data_processor: T5DynamicDataProcessor, src_vocab_file: v, src_data_dir: d, batch_size: 8}
model: {name: t5, src_vocab_size: 100, use_t5_layer_norm: false, norm_type: rmsnorm}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10}
)");
  CHECK(both.trainer().model.params.find("norm_type")->as_string() == "rmsnorm");
  CHECK(both.warning("which this model sets too and wins"));
}

TEST_CASE(
    "a loop key's path in the file's own layout: eval_frequency set to null there turns "
    "evaluation inside fit off") {
  const std::string loaders =
      "train_dataloader: {data_processor: MNISTDataProcessor, data_dir: ./d, batch_size: 8}, "
      "val_dataloader: {data_processor: MNISTDataProcessor, data_dir: ./d, batch_size: 8}";
  const std::string init =
      "model: {name: fc_mnist}, optimizer: {SGD: {lr: 0.1}}, "
      "loop: {max_steps: 4, eval_frequency: 2}";
  const std::string trainer = "{fit: {" + loaders + "}, init: {" + init + "}}";
  const std::string layouts[] = {
      "train_input: {data_processor: MNISTDataProcessor, data_dir: ./d, batch_size: 8}\n"
      "eval_input: {data_processor: MNISTDataProcessor, data_dir: ./d, batch_size: 8}\n"
      "model: {name: fc_mnist}\n"
      "optimizer: {optimizer_type: SGD, learning_rate: 0.1}\n"
      "runconfig: {max_steps: 4, eval_frequency: 2}\n",
      "trainer: " + trainer + "\n",
      "trainer: [{trainer: " + trainer + "}, {trainer: " + trainer + "}]\n"};
  for (const std::string& text : layouts) {
    INFO(text);
    Loaded loaded = load(text);
    REQUIRE(!loaded.diagnostics.has_errors());
    const TrainerSpec& last = loaded.run.trainers.back();
    REQUIRE(last.loop.eval_frequency.has_value());
    std::string key = loop_key_path(last, "eval_frequency");
    LoadOptions off;
    off.set_overrides.push_back(parse_set_override(key + "=null"));
    Loaded without = load(text, off);
    INFO(key << ": " << without.dump());
    CHECK(!without.diagnostics.has_errors());
    CHECK(!without.run.trainers.back().loop.eval_frequency.has_value());
    CHECK(without.run.trainers.front().loop.eval_frequency.has_value() ==
          (without.run.trainers.size() > 1));
  }
}

TEST_CASE("a trainer's body without `trainer:` above it says to put it there, once") {
  Loaded loaded = load(
      "init:\n  device: CPU\n  model: {name: fc_mnist}\nfit:\n  train_dataloader: "
      "{data_processor: MNISTDataProcessor, batch_size: 4}\n");
  CHECK(
      loaded.error("init (and fit, validate, validate_all) are a trainer's sections, here "
                   "without the `trainer:` key above them"));
  CHECK(loaded.diagnostics.error_count() == 1);
}
