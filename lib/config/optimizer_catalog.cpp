#include "class_catalog.hpp"
#include "param_types.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

// Every optimizer takes its learning rate as `lr` or `learning_rate` (the Model Zoo accepts
// both) and the muP adjustment of the legacy format.
std::shared_ptr<const Schema> optimizer_schema(const std::string& name, std::vector<Field> own) {
  std::vector<Field> fields = {
      optional_field("learning_rate", non_negative_number()),
      optional_field("lr", non_negative_number()),
      optional_field("adjust_learning_rate", T::mapping()),
  };
  fields.insert(fields.end(), own.begin(), own.end());
  return make_schema(name, std::move(fields), UnknownKeys::warn_unused);
}

Node pair(double a, double b) {
  Node list = Node::make_list();
  list.push_back(value(a));
  list.push_back(value(b));
  return list;
}

ClassEntry optimizer(const std::string& name, std::vector<Field> fields) {
  return ClassEntry{name, optimizer_schema(name, std::move(fields)), {}, {}};
}

}  // namespace

const ClassCatalog& optimizer_catalog() {
  static const ClassCatalog catalog(
      "optimizer",
      {
          optimizer("SGD", {default_field("momentum", non_negative_number(), value(0.0)),
                            default_field("dampening", non_negative_number(), value(0.0)),
                            default_field("weight_decay", non_negative_number(), value(0.0)),
                            default_field("nesterov", T::boolean(), value(false)),
                            default_field("maximize", T::boolean(), value(false))}),
          optimizer("Adam", {default_field("betas", beta_pair(), pair(0.9, 0.999)),
                             default_field("eps", non_negative_number(), value(1e-6)),
                             default_field("weight_decay", non_negative_number(), value(0.0)),
                             default_field("amsgrad", T::boolean(), value(false))}),
          optimizer("AdamW", {default_field("betas", beta_pair(), pair(0.9, 0.999)),
                              default_field("eps", non_negative_number(), value(1e-6)),
                              default_field("weight_decay", non_negative_number(), value(0.0)),
                              default_field("correct_bias", T::boolean(), value(true)),
                              default_field("amsgrad", T::boolean(), value(false))}),
          optimizer("Lamb", {default_field("betas", beta_pair(), pair(0.9, 0.999)),
                             default_field("eps", non_negative_number(), value(1e-6)),
                             default_field("weight_decay", non_negative_number(), value(0.0)),
                             default_field("adam", T::boolean(), value(false))}),
          optimizer("Adamax", {default_field("betas", beta_pair(), pair(0.9, 0.999)),
                               default_field("eps", non_negative_number(), value(1e-8)),
                               default_field("weight_decay", non_negative_number(), value(0.0)),
                               optional_field("maximize", T::boolean())}),
          optimizer("Adadelta", {default_field("rho", unit_interval(), value(0.9)),
                                 default_field("eps", non_negative_number(), value(1e-6)),
                                 default_field("weight_decay", non_negative_number(), value(0.0)),
                                 optional_field("maximize", T::boolean())}),
          optimizer("Adafactor", {optional_field("eps", T::list_of(non_negative_number(), 2, 2)),
                                  optional_field("eps1", non_negative_number()),
                                  optional_field("eps2", non_negative_number()),
                                  default_field("clip_threshold", positive_number(), value(1.0)),
                                  default_field("decay_rate", T::number(), value(-0.8)),
                                  optional_field("beta1", unit_interval().or_null()),
                                  default_field("weight_decay", non_negative_number(), value(0.0)),
                                  default_field("scale_parameter", T::boolean(), value(true)),
                                  default_field("relative_step", T::boolean(), value(false)),
                                  default_field("warmup_init", T::boolean(), value(false))}),
          optimizer("Adagrad",
                    {default_field("lr_decay", non_negative_number(), value(0.0)),
                     default_field("weight_decay", non_negative_number(), value(0.0)),
                     default_field("initial_accumulator_value", non_negative_number(), value(0.0)),
                     default_field("eps", non_negative_number(), value(1e-10)),
                     optional_field("maximize", T::boolean())}),
          optimizer("ASGD", {default_field("lambd", non_negative_number(), value(1e-4)),
                             default_field("alpha", non_negative_number(), value(0.75)),
                             default_field("t0", non_negative_number(), value(1e6)),
                             default_field("weight_decay", non_negative_number(), value(0.0)),
                             optional_field("maximize", T::boolean())}),
          optimizer("Lion", {default_field("betas", beta_pair(), pair(0.9, 0.99)),
                             default_field("weight_decay", non_negative_number(), value(0.0))}),
          optimizer("NAdam", {default_field("betas", beta_pair(), pair(0.9, 0.999)),
                              default_field("eps", non_negative_number(), value(1e-8)),
                              default_field("weight_decay", non_negative_number(), value(0.0)),
                              default_field("momentum_decay", non_negative_number(), value(4e-3))}),
          optimizer("RAdam", {default_field("betas", beta_pair(), pair(0.9, 0.999)),
                              default_field("eps", non_negative_number(), value(1e-8)),
                              default_field("weight_decay", non_negative_number(), value(0.0))}),
          optimizer("RMSprop", {default_field("alpha", unit_interval(), value(0.99)),
                                default_field("eps", non_negative_number(), value(1e-8)),
                                default_field("weight_decay", non_negative_number(), value(0.0)),
                                default_field("momentum", non_negative_number(), value(0.0)),
                                default_field("centered", T::boolean(), value(false))}),
          optimizer("Rprop", {optional_field("etas", T::list_of(positive_number(), 2, 2)),
                              optional_field("step_sizes", T::list_of(positive_number(), 2, 2)),
                              optional_field("eta1", positive_number()),
                              optional_field("eta2", positive_number()),
                              optional_field("step_size_min", positive_number()),
                              optional_field("step_size_max", positive_number())}),
      });
  return catalog;
}

}  // namespace csrun::config
