#include "report.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace csrun::modes {

namespace {

using config::TrainerSpec;
using nlohmann::json;

std::string schedule_text(const config::ClassSpec& scheduler) {
  std::string text = scheduler.type;
  const config::Node* constant = scheduler.params.find("learning_rate");
  const config::Node* initial = scheduler.params.find("initial_learning_rate");
  const config::Node* end = scheduler.params.find("end_learning_rate");
  if (constant) text += " " + constant->text();
  if (initial) text += " " + initial->text() + (end ? "->" + end->text() : std::string());
  if (const config::Node* iters = scheduler.params.find("total_iters")) {
    text += " over " + grouped(iters->as_int()) + " steps";
  }
  if (scheduler.children.empty()) return text;
  text += " [";
  for (std::size_t i = 0; i < scheduler.children.size(); ++i) {
    text += (i ? ", " : "") + schedule_text(scheduler.children[i]);
  }
  return text + "]";
}

std::string optimizer_text(const TrainerSpec& trainer) {
  if (!trainer.optimizer) return "none (evaluation only)";
  std::string text = trainer.optimizer->type;
  if (!trainer.schedulers.empty()) {
    text += ", lr ";
    for (std::size_t i = 0; i < trainer.schedulers.size(); ++i) {
      text += (i ? " + " : "") + schedule_text(trainer.schedulers[i]);
    }
  } else if (const config::Node* lr = trainer.optimizer->params.find("learning_rate")) {
    text += ", lr " + lr->text();
  }
  return text;
}

std::string precision_text(const config::PrecisionSpec& precision) {
  if (!precision.enabled) return "float32 (mixed precision off)";
  std::string text =
      std::string(config::half_type_name(precision.fp16_type)) + " mixed precision, ";
  if (precision.loss_scaling.dynamic) {
    text += "dynamic loss scaling";
    if (const std::optional<double>& tolerance = precision.loss_scaling.overflow_tolerance) {
      std::ostringstream share;
      share << *tolerance * 100;
      text += " (TensorFlow's: halved when over " + share.str() + " % of the steps overflow)";
    }
  } else if (precision.loss_scaling.factor != 1.0) {
    std::ostringstream factor;
    factor << precision.loss_scaling.factor;
    text += "static loss scale " + factor.str();
  } else {
    text += "no loss scaling";
  }
  text += ", POL " + std::to_string(precision.precision_opt_level);
  if (precision.max_gradient_norm) {
    std::ostringstream norm;
    norm << *precision.max_gradient_norm;
    text += ", clip norm " + norm.str();
  }
  return text;
}

std::string steps_text(const TrainerSpec& trainer) {
  const config::LoopSpec& loop = trainer.loop;
  std::string text;
  if (loop.num_steps) {
    text = "num_steps " + grouped(*loop.num_steps);
  } else if (loop.num_epochs) {
    text = grouped(*loop.num_epochs) + (*loop.num_epochs == 1 ? " epoch" : " epochs");
    if (loop.steps_per_epoch) text += " of " + grouped(*loop.steps_per_epoch) + " steps";
    if (trainer.loop_defaulted) text += " (no loop section)";
  }
  if (loop.max_steps)
    text += (text.empty() ? "" : ", ") + std::string("max_steps ") + grouped(*loop.max_steps);
  bool evaluates = trainer.fit && !trainer.fit->val_dataloaders.empty() && loop.eval_frequency;
  if (evaluates) {
    const config::EvalFrequency& frequency = *loop.eval_frequency;
    text +=
        "; eval every " + (frequency.steps ? grouped(*frequency.steps) + " steps"
                                           : std::to_string(*frequency.fraction) + " of the run");
  }
  if (loop.eval_steps) text += "; " + grouped(*loop.eval_steps) + " eval steps";
  if (trainer.checkpoint.steps) text += "; checkpoint every " + grouped(*trainer.checkpoint.steps);
  text += "; log every " + grouped(trainer.logging.log_steps);
  return text;
}

std::string loader_text(const data::DataloaderSpec& loader, std::int64_t num_csx) {
  std::int64_t written = loader.batch_size / loader.accumulated_batches;
  std::string text = loader.processor + ", batch " + grouped(written);
  if (num_csx > 1) text += " (" + grouped(loader.batch_size / num_csx) + " per system)";
  if (loader.accumulated_batches > 1) {
    text += ", " + grouped(loader.accumulated_batches) + " accumulated per optimizer step (" +
            grouped(loader.batch_size) + " samples)";
  }
  bool accumulated_micro_batch =
      loader.accumulated_batches > 1 && loader.micro_batch_size == written;
  if (loader.micro_batch_size && !accumulated_micro_batch)
    text += ", micro-batch " + grouped(*loader.micro_batch_size);
  if (!loader.micro_batch_mode.empty()) text += ", micro-batch " + loader.micro_batch_mode;
  text += loader.fake                ? ", fake data"
          : loader.data_dirs.empty() ? ""
                                     : ", " + loader.data_dirs.front();
  if (loader.data_dirs.size() > 1)
    text += " (+" + std::to_string(loader.data_dirs.size() - 1) + " more)";
  if (loader.samples) text += " (" + grouped(*loader.samples) + " samples)";
  return text;
}

// 6.9e12 -> "6.9 TFLOP"
std::string flops_text(double flops) {
  const char* units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
  int unit = 0;
  while (flops >= 1000.0 && unit < 6) {
    flops /= 1000.0;
    ++unit;
  }
  std::ostringstream text;
  text.precision(flops < 10 ? 2 : 3);
  text << flops << " " << units[unit];
  return text.str();
}

std::string trace_text(const TraceSummary& trace, std::int64_t num_csx) {
  std::string text = std::string(trace.training ? "training" : "eval") + " step of " +
                     grouped(trace.batch_size) +
                     " samples per system: " + grouped(static_cast<std::int64_t>(trace.ops)) +
                     " ops, " + flops_text(trace.flops) + " per step";
  if (num_csx > 1)
    text += " per system (" + flops_text(trace.flops * static_cast<double>(num_csx)) + " in all)";
  return text + ", graph " + trace.fingerprint;
}

std::string compiled_text(const CompiledTrainer& compiled) {
  if (compiled.cached) return "plan in the compile cache: " + compiled.directory.string();
  const compiler::CompiledStep& step = *compiled.compiled;
  std::size_t at_load = 0;
  for (const compiler::Kernel& kernel : step.kernels)
    at_load += kernel.at_load ? 1 : 0;
  return grouped(static_cast<std::int64_t>(step.kernels.size() - at_load)) +
         " kernels per step matched (" +
         grouped(static_cast<std::int64_t>(step.program.fusions.size())) + " fusions, " +
         grouped(static_cast<std::int64_t>(step.program.graph.size())) + " nodes after the passes)";
}

void print_trainer(const TrainerSpec& trainer, const CheckedTrainer& checked, std::size_t count,
                   std::ostream& out) {
  out << "Trainer " << trainer.index + 1 << " of " << count << "\n";
  auto line = [&](const char* label, const std::string& value) {
    out << "  " << label << std::string(12 - std::string(label).size(), ' ') << value << "\n";
  };
  if (checked.model) {
    line("model", checked.model->definition->name +
                      (checked.model->name_inferred ? " (inferred)" : "") + ", " +
                      grouped(checked.model->parameter_count) + " parameters");
  }
  const config::BackendSpec& backend = trainer.backend;
  line("device",
       std::string(config::device_name(backend.device)) +
           (backend.device_defaulted ? " (default)" : "") + ", " +
           grouped(backend.cluster.num_csx) +
           (backend.cluster.num_csx == 1 ? " system" : " systems") + ", " +
           grouped(backend.cluster.num_workers_per_csx) +
           (backend.cluster.num_workers_per_csx == 1 ? " input worker" : " input workers") +
           " per system");
  line("precision", precision_text(trainer.precision));
  line("optimizer", optimizer_text(trainer));
  if (trainer.fit) line("fit", steps_text(trainer));
  if (checked.train_loader)
    line("train data", loader_text(*checked.train_loader, backend.cluster.num_csx));
  for (const data::DataloaderSpec& loader : checked.eval_loaders) {
    line("eval data", loader_text(loader, backend.cluster.num_csx));
  }
  if (checked.trace) line("traced", trace_text(*checked.trace, backend.cluster.num_csx));
  if (checked.compiled) line("compiled", compiled_text(*checked.compiled));
  line("model_dir", trainer.model_dir);
}

json diagnostic_json(const config::Diagnostic& diagnostic) {
  json item = {{"severity", config::severity_name(diagnostic.severity)},
               {"origin", diagnostic.mark.origin},
               {"key", diagnostic.key_path},
               {"message", diagnostic.message}};
  if (diagnostic.mark.has_position()) {
    item["line"] = diagnostic.mark.line;
    item["column"] = diagnostic.mark.column;
  }
  return item;
}

json optional_json(const std::optional<std::int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

json loader_json(const data::DataloaderSpec& loader) {
  return {{"data_processor", loader.processor},
          {"batch_size", loader.batch_size / loader.accumulated_batches},
          {"accumulated_batches", loader.accumulated_batches},
          {"micro_batch_size", loader.micro_batch_size           ? json(*loader.micro_batch_size)
                               : loader.micro_batch_mode.empty() ? json(nullptr)
                                                                 : json(loader.micro_batch_mode)},
          {"shuffle", loader.shuffle},
          {"fake_data", loader.fake},
          {"samples", loader.samples ? json(*loader.samples) : json(nullptr)},
          {"data_dirs", loader.data_dirs}};
}

json trainer_json(const TrainerSpec& trainer, const CheckedTrainer& checked) {
  json result;
  if (checked.model) {
    result["model"] = {{"name", checked.model->definition->name},
                       {"name_inferred", checked.model->name_inferred},
                       {"parameters", checked.model->parameter_count}};
  }
  result["device"] = config::device_name(trainer.backend.device);
  result["device_defaulted"] = trainer.backend.device_defaulted;
  result["num_csx"] = trainer.backend.cluster.num_csx;
  result["num_workers_per_csx"] = trainer.backend.cluster.num_workers_per_csx;
  result["model_dir"] = trainer.model_dir;
  result["seed"] = optional_json(trainer.seed);
  const config::PrecisionSpec& precision = trainer.precision;
  result["precision"] = {
      {"enabled", precision.enabled},
      {"fp16_type", config::half_type_name(precision.fp16_type)},
      {"precision_opt_level", precision.precision_opt_level},
      {"loss_scaling",
       precision.loss_scaling.dynamic ? json("dynamic") : json(precision.loss_scaling.factor)}};
  result["optimizer"] = trainer.optimizer ? json(trainer.optimizer->type) : json(nullptr);
  json schedulers = json::array();
  for (const config::ClassSpec& scheduler : trainer.schedulers)
    schedulers.push_back(schedule_text(scheduler));
  result["schedulers"] = schedulers;
  const config::LoopSpec& loop = trainer.loop;
  result["loop"] = {{"num_steps", optional_json(loop.num_steps)},
                    {"max_steps", optional_json(loop.max_steps)},
                    {"num_epochs", optional_json(loop.num_epochs)},
                    {"eval_steps", optional_json(loop.eval_steps)},
                    {"checkpoint_steps", optional_json(trainer.checkpoint.steps)},
                    {"log_steps", trainer.logging.log_steps}};
  result["sections"] = {{"fit", trainer.fit.has_value()},
                        {"validate", trainer.validate.has_value()},
                        {"validate_all", trainer.validate_all.has_value()}};
  result["train_data"] = checked.train_loader ? loader_json(*checked.train_loader) : json(nullptr);
  if (checked.trace) {
    const TraceSummary& trace = *checked.trace;
    result["trace"] = {{"step", trace.training ? "train" : "eval"},
                       {"batch_size_per_system", trace.batch_size},
                       {"ops", trace.ops},
                       {"parameters", trace.parameters},
                       {"flops_per_step_per_system", trace.flops},
                       {"fingerprint", trace.fingerprint}};
  } else {
    result["trace"] = nullptr;
  }
  if (checked.compiled) {
    const CompiledTrainer& compiled = *checked.compiled;
    result["compiled"] = {{"plan_key", compiled.key},
                          {"plan_directory", compiled.directory.string()},
                          {"cached", compiled.cached.has_value()}};
    if (compiled.compiled) {
      result["compiled"]["kernels"] = compiled.compiled->kernels.size();
      result["compiled"]["fusions"] = compiled.compiled->program.fusions.size();
      result["compiled"]["nodes"] = compiled.compiled->program.graph.size();
    }
  } else {
    result["compiled"] = nullptr;
  }
  json eval = json::array();
  for (const data::DataloaderSpec& loader : checked.eval_loaders)
    eval.push_back(loader_json(loader));
  result["eval_data"] = eval;
  return result;
}

}  // namespace

std::string grouped(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string text;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return value < 0 ? "-" + text : text;
}

void print_diagnostics(const config::Diagnostics& diagnostics, config::Severity shown,
                       std::ostream& out) {
  for (const config::Diagnostic& diagnostic : diagnostics.all()) {
    if (diagnostic.severity >= shown) out << diagnostic.to_string() << "\n";
  }
}

void print_summary(const CheckedRun& checked, std::ostream& out) {
  const config::RunSpec& run = checked.run;
  out << run.params_path << ": " << config::format_name(run.format) << " params";
  if (run.format == config::ParamsFormat::legacy) out << " (converted to the trainer format)";
  out << "\n";
  for (std::size_t i = 0; i < run.trainers.size() && i < checked.trainers.size(); ++i) {
    print_trainer(run.trainers[i], checked.trainers[i], run.trainers.size(), out);
  }
}

std::string report_json(const std::string& command, const CheckedRun& checked) {
  json diagnostics = json::array();
  for (const config::Diagnostic& diagnostic : checked.diagnostics.all()) {
    diagnostics.push_back(diagnostic_json(diagnostic));
  }
  json trainers = json::array();
  for (std::size_t i = 0; i < checked.run.trainers.size() && i < checked.trainers.size(); ++i) {
    trainers.push_back(trainer_json(checked.run.trainers[i], checked.trainers[i]));
  }
  json report = {{"command", command},
                 {"params", checked.run.params_path},
                 {"format", config::format_name(checked.run.format)},
                 {"ok", !checked.diagnostics.has_errors()},
                 {"errors", checked.diagnostics.error_count()},
                 {"trainers", trainers},
                 {"diagnostics", diagnostics}};
  return report.dump(2);
}

}  // namespace csrun::modes
