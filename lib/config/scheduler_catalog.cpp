#include "class_catalog.hpp"
#include "param_types.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

ClassEntry scheduler(const std::string& name, std::vector<std::string> required,
                     std::vector<Field> fields) {
  return ClassEntry{name,
                    make_schema(name, std::move(fields), UnknownKeys::error_plain),
                    std::move(required),
                    {}};
}

Field lr(const std::string& name) {
  return optional_field(name, non_negative_number());
}
Field steps(const std::string& name) {
  return optional_field(name, positive_integer());
}

}  // namespace

// Names and parameters of cerebras.pytorch.optim.lr_scheduler. Every schedule is a closed
// form of the global step; SequentialLR's milestones are the cumulative total_iters of its
// members.
const ClassCatalog& scheduler_catalog() {
  static const ClassCatalog catalog(
      "learning-rate scheduler",
      {
          scheduler("ConstantLR", {"learning_rate"}, {lr("learning_rate"), steps("total_iters")}),
          scheduler("LinearLR", {"initial_learning_rate", "end_learning_rate", "total_iters"},
                    {lr("initial_learning_rate"), lr("end_learning_rate"), steps("total_iters")}),
          scheduler("ExponentialLR", {"initial_learning_rate", "total_iters", "decay_rate"},
                    {lr("initial_learning_rate"), steps("total_iters"),
                     optional_field("decay_rate", positive_number()),
                     default_field("staircase", T::boolean(), value(false))}),
          scheduler(
              "InverseExponentialTimeDecayLR",
              {"initial_learning_rate", "step_exponent", "total_iters", "decay_rate"},
              {lr("initial_learning_rate"), optional_field("step_exponent", non_negative_number()),
               steps("total_iters"), optional_field("decay_rate", non_negative_number()),
               default_field("staircase", T::boolean(), value(false))}),
          scheduler("InverseSquareRootDecayLR", {},
                    {default_field("initial_learning_rate", non_negative_number(), value(1.0)),
                     default_field("scale", non_negative_number(), value(1.0)),
                     default_field("warmup_steps", positive_integer(), value(1))}),
          scheduler("PolynomialLR", {"initial_learning_rate", "end_learning_rate", "total_iters"},
                    {lr("initial_learning_rate"), lr("end_learning_rate"), steps("total_iters"),
                     default_field("power", positive_number(), value(1.0)),
                     default_field("cycle", T::boolean(), value(false))}),
          scheduler("CosineDecayLR", {"initial_learning_rate", "end_learning_rate", "total_iters"},
                    {lr("initial_learning_rate"), lr("end_learning_rate"), steps("total_iters")}),
          scheduler("CosineAnnealingLR", {"initial_learning_rate", "T_max"},
                    {lr("initial_learning_rate"), steps("T_max"),
                     default_field("eta_min", non_negative_number(), value(0.0))}),
          scheduler("CosineAnnealingWarmRestarts", {"initial_learning_rate", "T_0"},
                    {lr("initial_learning_rate"), steps("T_0"),
                     default_field("T_mult", positive_integer(), value(1)),
                     default_field("eta_min", non_negative_number(), value(0.0))}),
          scheduler("StepLR", {"initial_learning_rate", "step_size", "gamma"},
                    {lr("initial_learning_rate"), steps("step_size"),
                     optional_field("gamma", non_negative_number())}),
          scheduler("MultiStepLR", {"initial_learning_rate", "gamma", "milestones"},
                    {lr("initial_learning_rate"), optional_field("gamma", non_negative_number()),
                     optional_field("milestones", T::list_of(positive_integer(), 1))}),
          scheduler("PiecewiseConstantLR", {"learning_rates", "milestones"},
                    {optional_field("learning_rates", T::list_of(non_negative_number(), 1)),
                     optional_field("milestones", T::list_of(positive_integer(), 1))}),
          scheduler("LambdaLR", {"initial_learning_rate"},
                    {lr("initial_learning_rate"), steps("total_iters")}),
          scheduler("MultiplicativeLR", {"initial_learning_rate", "coefficient"},
                    {lr("initial_learning_rate"),
                     optional_field("coefficient", non_negative_number()), steps("total_iters")}),
          // mode decides how the cycle scales (read_scheduler warns of a scale_mode or gamma
          // that has no effect).
          scheduler("CyclicLR", {"base_lr", "max_lr"},
                    {lr("base_lr"), lr("max_lr"),
                     default_field("step_size_up", positive_integer(), value(2000)),
                     optional_field("step_size_down", positive_integer().or_null()),
                     default_field("mode", T::choice({"triangular", "triangular2", "exp_range"}),
                                   value("triangular")),
                     optional_field("gamma", positive_number()),
                     optional_field("scale_mode", T::choice({"cycle", "iterations"}))}),
          scheduler("OneCycleLR", {"initial_learning_rate", "max_lr"},
                    {lr("initial_learning_rate"), lr("max_lr"),
                     default_field("total_steps", positive_integer(), value(1000)),
                     default_field("pct_start", unit_interval(), value(0.3)),
                     default_field("final_div_factor", positive_number(), value(1e4)),
                     default_field("three_phase", T::boolean(), value(false)),
                     default_field("anneal_strategy", T::choice({"cos", "linear"}), value("cos"))}),
          scheduler("SequentialLR", {"schedulers"},
                    {optional_field("schedulers", T::list_of(T::mapping(), 1)),
                     optional_field("milestones", T::list_of(positive_integer()))}),
          scheduler("ChainedScheduler", {"schedulers"},
                    {optional_field("schedulers", T::list_of(T::mapping(), 1))}),
      },
      "LR");
  return catalog;
}

}  // namespace csrun::config
