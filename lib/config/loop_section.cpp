#include <limits>
#include <set>

#include "param_types.hpp"
#include "trainer_sections.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

constexpr std::int64_t kMaxCsxSteps = std::numeric_limits<std::int32_t>::max();

const Schema& loop_schema() {
  static const Schema schema("loop",
                             {
                                 optional_field("num_steps", T::any()),
                                 optional_field("max_steps", T::any()),
                                 optional_field("num_epochs", T::any()),
                                 optional_field("steps_per_epoch", T::any()),
                                 optional_field("eval_steps", T::any()),
                                 optional_field("eval_frequency", T::any()),
                                 default_field("grad_accum_steps", positive_integer(), value(1)),
                             });
  return schema;
}

const Schema& checkpoint_schema() {
  static const Schema schema(
      "checkpoint",
      {
          optional_field("steps", T::any()),
          default_field("autoload_last_checkpoint", T::boolean(), value(true)),
          default_field("disable_strict_checkpoint_loading", T::boolean(), value(false)),
          default_field("save_initial_checkpoint", T::boolean(), value(false)),
          optional_field("checkpoint_root", T::string().or_null()),
          default_field("checkpoint_name", T::string(), value("checkpoint_{step}.mdl")),
          default_field("strict_version", T::boolean(), value(true)),
      });
  return schema;
}

const Schema& logging_schema() {
  static const Schema schema(
      "logging",
      {
          default_field("log_steps", positive_integer(), value(1)),
          default_field("log_level",
                        T::choice({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}, true),
                        value("INFO")),
          optional_field("wsc_log_level", T::any_of({T::string(), T::mapping()}).or_null()),
          optional_field("enable_act_frequency", T::boolean()),
      });
  return schema;
}

// A loop count: null, or an integer > 0 (at most 2^31 - 1 on CSX), with the Model Zoo's text.
std::optional<std::int64_t> read_count(const Node& loop, const char* key, Device device,
                                       Diagnostics& diagnostics) {
  const Node* value = loop.find(key);
  if (!value || value->is_null()) return std::nullopt;
  std::optional<Node> integer = T::integer().check(*value, diagnostics);
  if (!integer) return std::nullopt;
  std::int64_t count = integer->as_int();
  if (count <= 0) {
    diagnostics.error(value->mark(), value->path(),
                      std::string("`") + key + "` must be greater than 0 in the loop config, got " +
                          value->render());
    return std::nullopt;
  }
  if (device == Device::csx && count > kMaxCsxSteps) {
    diagnostics.error(value->mark(), value->path(),
                      std::string("`") + key +
                          "` must be at most 2147483647 (2^31 - 1) on CSX, got " + value->render());
    return std::nullopt;
  }
  return count;
}

std::optional<EvalFrequency> read_eval_frequency(const Node* value, Diagnostics& diagnostics) {
  if (!value || value->is_null()) return std::nullopt;
  if (value->is_int() && !value->out_of_range() && value->as_int() > 0) {
    return EvalFrequency{value->as_int(), std::nullopt};
  }
  if (value->kind() == Node::Kind::number && value->as_number() > 0 && value->as_number() <= 1) {
    return EvalFrequency{std::nullopt, value->as_number()};
  }
  diagnostics.error(value->mark(), value->path(),
                    "`eval_frequency` must be a positive integer or a float in the range (0.0, "
                    "1.0]. Got: " +
                        value->render());
  return std::nullopt;
}

void check_step_choice(const Node& loop, const LoopSpec& spec, Diagnostics& diagnostics) {
  if (loop.contains("num_epochs") && loop.contains("num_steps") && spec.num_epochs &&
      spec.num_steps) {
    const Node* num_steps = loop.find("num_steps");
    diagnostics.error(num_steps->mark(), num_steps->path(),
                      "Please specify only one of `num_epochs` or `num_steps`.");
  }
  bool any_given = false;
  for (const char* key : {"num_epochs", "num_steps", "max_steps"}) {
    const Node* value = loop.find(key);
    any_given = any_given || (value && !value->is_null());
  }
  if (!any_given) {
    diagnostics.error(loop.mark(), loop.path(),
                      "`max_steps` must be specified if neither `num_epochs` nor `num_steps` are "
                      "specified.");
  }
}

void check_checkpoint_name(const Node& name, Diagnostics& diagnostics) {
  std::set<std::string> invalid;
  const std::string& text = name.as_string();
  for (std::size_t open = text.find('{'); open != std::string::npos;
       open = text.find('{', open + 1)) {
    std::size_t close = text.find('}', open);
    std::string field =
        text.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
    if (field != "step") invalid.insert(field);
  }
  if (invalid.empty()) {
    auto slash = text.rfind('/');
    if (slash != std::string::npos && text.find("{step}", slash) == std::string::npos) {
      diagnostics.warning(name.mark(), name.path(),
                          "{step} stands in a folder's name only: checkpoints are found by their "
                          "file names, so no run resumes from these and eval does not find them "
                          "(put {step} in the file name, e.g. 'run/checkpoint_{step}.mdl')");
    }
    return;
  }
  std::string got;
  for (const std::string& field : invalid)
    got += (got.empty() ? "'" : ", '") + field + "'";
  diagnostics.error(name.mark(), name.path(),
                    "Found invalid keys in checkpoint_name format string. Expected keys: "
                    "{'step'}. Got: {" +
                        got + "}");
}

}  // namespace

LoopSpec read_loop(const Node* loop, Device device, Diagnostics& diagnostics) {
  LoopSpec spec;
  std::optional<Node> section = checked_section(loop, loop_schema(), diagnostics);
  if (!section) return spec;
  spec.num_steps = read_count(*section, "num_steps", device, diagnostics);
  spec.max_steps = read_count(*section, "max_steps", device, diagnostics);
  spec.num_epochs = read_count(*section, "num_epochs", device, diagnostics);
  spec.steps_per_epoch = read_count(*section, "steps_per_epoch", device, diagnostics);
  spec.eval_steps = read_count(*section, "eval_steps", device, diagnostics);
  spec.eval_frequency = read_eval_frequency(section->find("eval_frequency"), diagnostics);
  spec.grad_accum_steps = section->find("grad_accum_steps")->as_int();
  check_step_choice(*section, spec, diagnostics);
  if (device == Device::csx && spec.grad_accum_steps > 1) {
    const Node* accum = section->find("grad_accum_steps");
    diagnostics.note(accum->mark(), accum->path(),
                     "grad_accum_steps is ignored on CSX; gradient accumulation there is set by "
                     "micro_batch_size in the dataloader");
    spec.grad_accum_steps = 1;
  }
  return spec;
}

CheckpointSpec read_checkpoint(const Node* checkpoint, Diagnostics& diagnostics) {
  CheckpointSpec spec;
  std::optional<Node> section = checked_section(checkpoint, checkpoint_schema(), diagnostics);
  if (!section) return spec;
  if (const Node* steps = section->find("steps"); steps && !steps->is_null()) {
    if (steps->is_int() && !steps->out_of_range() && steps->as_int() >= 0) {
      if (steps->as_int() > 0) spec.steps = steps->as_int();
    } else {
      diagnostics.error(
          steps->mark(), steps->path(),
          "Checkpoint steps must be None or a non-negative integer, but got " + steps->render());
    }
  }
  spec.autoload_last_checkpoint = section->find("autoload_last_checkpoint")->as_bool();
  spec.disable_strict_checkpoint_loading =
      section->find("disable_strict_checkpoint_loading")->as_bool();
  spec.save_initial_checkpoint = section->find("save_initial_checkpoint")->as_bool();
  if (const Node* root = section->find("checkpoint_root"); root && root->is_string()) {
    spec.checkpoint_root = root->as_string();
  }
  const Node* name = section->find("checkpoint_name");
  check_checkpoint_name(*name, diagnostics);
  spec.checkpoint_name = name->as_string();
  spec.strict_version = section->find("strict_version")->as_bool();
  return spec;
}

LoggingSpec read_logging(const Node* logging, Diagnostics& diagnostics) {
  LoggingSpec spec;
  std::optional<Node> section = checked_section(logging, logging_schema(), diagnostics);
  if (!section) return spec;
  spec.log_steps = section->find("log_steps")->as_int();
  spec.log_level = section->find("log_level")->as_string();
  return spec;
}

}  // namespace csrun::config
