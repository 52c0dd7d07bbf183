#include "param_types.hpp"
#include "trainer_sections.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

const Schema& precision_schema() {
  static const Schema schema(
      "precision", {
                       default_field("enabled", T::boolean(), value(true)),
                       optional_field("fp16_type", T::any()),
                       optional_field("precision_opt_level", T::any()),
                       optional_field("loss_scaling_factor", T::any()),
                       optional_field("initial_loss_scale", positive_number().or_null()),
                       default_field("steps_per_increase", positive_integer(), value(2000)),
                       optional_field("min_loss_scale", positive_number().or_null()),
                       optional_field("max_loss_scale", positive_number().or_null()),
                       optional_field("max_gradient_norm", T::any()),
                       optional_field("max_gradient_value", T::any()),
                       optional_field("log_loss_scale", T::boolean().or_null()),
                   });
  return schema;
}

std::optional<HalfType> parse_half_type(const Node& value, Diagnostics& diagnostics) {
  if (value.is_string()) {
    if (value.as_string() == "float16") return HalfType::float16;
    if (value.as_string() == "bfloat16") return HalfType::bfloat16;
    if (value.as_string() == "cbfloat16") return HalfType::cbfloat16;
  }
  diagnostics.error(value.mark(), value.path(),
                    "Invalid value for \"fp16_type\". Expected one of ['float16', 'bfloat16', "
                    "'cbfloat16']. Got: " +
                        (value.is_string() ? value.as_string() : value.render()) + ".");
  return std::nullopt;
}

void read_loss_scaling(const Node& value, LossScaling& scaling, Diagnostics& diagnostics) {
  if (value.is_null()) return;
  if (value.is_string() && value.as_string() == "dynamic") {
    scaling.dynamic = true;
    return;
  }
  if (value.is_number() && !value.out_of_range() && value.as_number() > 0) {
    scaling.factor = value.as_number();
    return;
  }
  if (auto number = numeric_string(value, diagnostics); number && *number > 0) {
    scaling.factor = *number;
    return;
  }
  diagnostics.error(value.mark(), value.path(),
                    "'loss_scaling_factor' must be a float, None, or 'dynamic'.Got " +
                        value.render() + " instead.");
}

std::optional<double> read_clip(const Node* value, const char* name, Diagnostics& diagnostics) {
  if (!value || value->is_null()) return std::nullopt;
  if (value->is_number() && value->as_number() > 0) return value->as_number();
  if (auto number = numeric_string(*value, diagnostics); number && *number > 0) return number;
  diagnostics.error(value->mark(), value->path(),
                    std::string(name) + " has to be a positive float. Got " + value->render());
  return std::nullopt;
}

std::optional<double> optional_number(const Node& section, const char* key) {
  const Node* value = section.find(key);
  if (!value || value->is_null()) return std::nullopt;
  return value->as_number();
}

// Dynamic loss scaling keeps its scale within [min_loss_scale, max_loss_scale]: bounds the other
// way round are an error, an initial scale outside them a warning (the first update clamps it).
void check_loss_scale_bounds(const Node& section, const LossScaling& scaling,
                             Diagnostics& diagnostics) {
  const std::optional<double>& low = scaling.min_loss_scale;
  const std::optional<double>& high = scaling.max_loss_scale;
  const std::optional<double>& initial = scaling.initial_loss_scale;
  if (low && high && *low > *high) {
    const Node* at = section.find("min_loss_scale");
    diagnostics.error(at->mark(), at->path(),
                      "min_loss_scale (" + at->render() + ") is larger than max_loss_scale (" +
                          section.find("max_loss_scale")->render() + ")");
    return;
  }
  if (!initial) return;
  const Node* at = section.find("initial_loss_scale");
  if (high && *initial > *high) {
    diagnostics.warning(at->mark(), at->path(),
                        "initial_loss_scale (" + at->render() + ") is above max_loss_scale (" +
                            section.find("max_loss_scale")->render() +
                            "): the scale starts at max_loss_scale, as cerebras.pytorch's "
                            "GradScaler starts it");
  } else if (low && *initial < *low) {
    diagnostics.warning(at->mark(), at->path(),
                        "initial_loss_scale (" + at->render() + ") is below min_loss_scale (" +
                            section.find("min_loss_scale")->render() +
                            "): the first step runs at it, and its update brings the scale "
                            "within the bounds");
  }
}

// What a device does with the requested precision, with the Model Zoo's messages.
void apply_device_rules(const Node& section, PrecisionSpec& spec, Device device,
                        Diagnostics& diagnostics) {
  const Node* type_node = section.find("fp16_type");
  SourceMark mark = type_node ? type_node->mark() : section.mark();
  std::string path = type_node ? type_node->path() : section.path();
  if (device == Device::csx && !spec.enabled) {
    const Node* enabled = section.find("enabled");
    diagnostics.warning(enabled->mark(), enabled->path(),
                        "Mixed precision must be enabled for CSX. Setting enabled = True");
    spec.enabled = true;
  }
  if (spec.fp16_type == HalfType::cbfloat16 && device != Device::csx) {
    diagnostics.warning(mark, path,
                        "cbfloat16 is only supported on CSX. Setting half dtype to bfloat16");
    spec.fp16_type = HalfType::bfloat16;
  }
  if (spec.fp16_type == HalfType::float16 && device == Device::cpu && spec.enabled) {
    diagnostics.warning(mark, path,
                        "float16 is not supported on CPU: only bfloat16 is. Setting half dtype to "
                        "bfloat16");
    spec.fp16_type = HalfType::bfloat16;
  }
  if (spec.fp16_type == HalfType::cbfloat16 && spec.enabled && !spec.loss_scaling.dynamic) {
    diagnostics.error(mark, path,
                      "In order to use cbfloat16, dynamic loss scaling must be enabled. Otherwise, "
                      "gradients might underflow/overflow in the middle of training. Please set "
                      "`loss_scaling_factor` to `dynamic` to use cbfloat16.");
  }
  if (spec.fp16_type == HalfType::bfloat16 && spec.loss_scaling.dynamic) {
    diagnostics.note(mark, path,
                     "No need to use loss scaling when half dtype is bfloat16. Disabling gradient "
                     "scaling.");
    spec.loss_scaling.dynamic = false;
    spec.loss_scaling.factor = 1.0;
  }
}

}  // namespace

PrecisionSpec read_precision(const Node* precision, Device device, Diagnostics& diagnostics) {
  PrecisionSpec spec;
  bool given = precision && !precision->is_null();
  // Without a precision section the defaults apply, and so do the device's rules.
  std::optional<Node> section = given ? checked_section(precision, precision_schema(), diagnostics)
                                      : precision_schema().check(Node::make_map(), diagnostics);
  if (!section) return spec;
  spec.enabled = section->find("enabled")->as_bool();
  if (const Node* type = section->find("fp16_type"); type && !type->is_null()) {
    if (auto parsed = parse_half_type(*type, diagnostics)) spec.fp16_type = *parsed;
  }
  if (const Node* level = section->find("precision_opt_level"); level && !level->is_null()) {
    if (level->is_int() && level->as_int() >= 0 && level->as_int() <= 2) {
      spec.precision_opt_level = level->as_int();
    } else {
      diagnostics.error(level->mark(), level->path(),
                        "precision_opt_level must be 0, 1 or 2 (null keeps the default, 1); "
                        "found " +
                            level->describe());
    }
  }
  if (const Node* factor = section->find("loss_scaling_factor")) {
    read_loss_scaling(*factor, spec.loss_scaling, diagnostics);
  }
  spec.loss_scaling.initial_loss_scale = optional_number(*section, "initial_loss_scale");
  spec.loss_scaling.steps_per_increase = section->find("steps_per_increase")->as_int();
  spec.loss_scaling.min_loss_scale = optional_number(*section, "min_loss_scale");
  spec.loss_scaling.max_loss_scale = optional_number(*section, "max_loss_scale");
  check_loss_scale_bounds(*section, spec.loss_scaling, diagnostics);
  spec.max_gradient_norm =
      read_clip(section->find("max_gradient_norm"), "max_gradient_norm", diagnostics);
  spec.max_gradient_value =
      read_clip(section->find("max_gradient_value"), "max_gradient_value", diagnostics);
  if (spec.max_gradient_norm && spec.max_gradient_value) {
    const Node* value_node = section->find("max_gradient_value");
    diagnostics.error(
        value_node->mark(), value_node->path(),
        "Gradients can be clipped by norm(=" + section->find("max_gradient_norm")->render() +
            ") or by value(=" + value_node->render() +
            "), but not both. Do not set both `max_gradient_norm` and "
            "`max_gradient_value`.");
  }
  apply_device_rules(*section, spec, device, diagnostics);
  const Node* log_scale = section->find("log_loss_scale");
  spec.log_loss_scale =
      log_scale && log_scale->is_bool() ? log_scale->as_bool() : spec.loss_scaling.dynamic;
  return spec;
}

}  // namespace csrun::config
