#include "validation_stage.hpp"

#include <algorithm>
#include <iostream>
#include <set>
#include <string>

#include "data/vocabulary_files.hpp"
#include "graph/fingerprint.hpp"
#include "graph/tensor.hpp"
#include "nn/lr_schedule.hpp"
#include "nn/optimizer.hpp"
#include "report.hpp"
#include "runner/model_dir.hpp"

namespace csrun::modes {

namespace {

using config::Node;
using config::Severity;

const Node* init_value(const config::TrainerSpec& trainer, const char* key) {
  const Node* init = trainer.tree.find("init");
  return init ? init->find(key) : nullptr;
}

class TrainerCheck {
 public:
  TrainerCheck(const config::TrainerSpec& trainer, const RunOptions& options,
               config::Diagnostics& diagnostics)
      : trainer_(trainer), options_(options), diagnostics_(diagnostics) {}

  CheckedTrainer run() {
    CheckedTrainer checked;
    checked.index = trainer_.index;
    checked.model = models::check_model(trainer_, diagnostics_);
    if (checked.model) processors_ = checked.model->definition->data_processors;
    if (trainer_.fit) {
      checked.train_loader = check_loader(trainer_.fit->train_dataloader, data::LoaderRole::train);
      if (checked.train_loader) accumulate_batches(*checked.train_loader);
      add_eval_loaders(trainer_.fit->val_dataloaders, checked);
      check_checkpoint_choice(trainer_.fit->checkpoint, "fit.ckpt_path");
    }
    if (trainer_.validate) {
      add_eval_loaders({trainer_.validate->val_dataloader}, checked);
      check_checkpoint_choice(trainer_.validate->checkpoint, "validate.ckpt_path");
    }
    if (trainer_.validate_all) {
      add_eval_loaders(trainer_.validate_all->val_dataloaders, checked);
      check_checkpoint_patterns(trainer_.validate_all->checkpoint_paths);
    }
    check_model_dir();
    if (checked.model) check_ids(*checked.model, checked);
    if (checked.model && !diagnostics_.has_errors()) checked.trace = trace(*checked.model, checked);
    return checked;
  }

 private:
  // A checkpoint named in several places (--checkpoint_path or a legacy checkpoint_path sets
  // fit's, validate's and validate_all's) is checked, and reported, once.
  void check_checkpoint_choice(const config::CheckpointChoice& choice,
                               const std::string& key_path) {
    if (choice.kind != config::CheckpointChoice::Kind::path) return;
    if (!checkpoints_checked_.insert(choice.path).second) return;
    runner::check_checkpoint_file(choice.path, choice.mark, key_path, diagnostics_);
  }

  void check_checkpoint_patterns(const std::vector<Node>& patterns) {
    std::vector<Node> unchecked;
    for (const Node& pattern : patterns) {
      if (checkpoints_checked_.insert(pattern.as_string()).second) unchecked.push_back(pattern);
    }
    runner::expand_checkpoint_patterns(unchecked, diagnostics_);
  }

  std::optional<data::DataloaderSpec> check_loader(const Node& loader, data::LoaderRole role) {
    data::DataloaderContext context{role, trainer_.backend.cluster.num_csx, options_.fake_data,
                                    processors_};
    return data::check_dataloader(loader, context, diagnostics_);
  }

  // The legacy eval_input (or one anchored val_dataloader) serves fit, validate and
  // validate_all: the same section, checked and listed once.
  void add_eval_loaders(const std::vector<Node>& loaders, CheckedTrainer& checked) {
    for (const Node& loader : loaders) {
      bool seen = std::any_of(seen_.begin(), seen_.end(),
                              [&](const Node& other) { return other.same_value(loader); });
      if (seen) continue;
      seen_.push_back(loader);
      if (auto spec = check_loader(loader, data::LoaderRole::eval)) {
        checked.eval_loaders.push_back(std::move(*spec));
      }
    }
  }

  // What validate read of each dataset's labels and token ids against the model's range: the
  // reader checks every one before training, this catches the common mismatch early.
  void check_ids(const models::CheckedModel& model, const CheckedTrainer& checked) {
    std::vector<const data::DataloaderSpec*> loaders;
    if (checked.train_loader) loaders.push_back(&*checked.train_loader);
    for (const data::DataloaderSpec& loader : checked.eval_loaders)
      loaders.push_back(&loader);
    std::int64_t limit = model.id_limit();
    std::string range = "outside the model's range 0 to " + std::to_string(limit - 1) +
                        (model.params.has("vocab_size") ? " (vocab_size)" : " (num_classes)");
    for (const data::DataloaderSpec* loader : loaders) {
      const Node* at = loader->params.find("data_dir");
      auto report = [&](const data::IdSeen& seen) {
        diagnostics_.error(at ? at->mark() : loader->mark, at ? at->path() : loader->path,
                           seen.where + " holds the id " + std::to_string(seen.id) +
                               " (a label or token), " + range);
      };
      if (loader->largest_id && loader->largest_id->id >= limit) report(*loader->largest_id);
      if (loader->smallest_id && loader->smallest_id->id < 0) report(*loader->smallest_id);
    }
  }

  void check_model_dir() {
    const Node* value = init_value(trainer_, "model_dir");
    config::SourceMark mark = value ? value->mark() : trainer_.mark;
    std::string path = value ? value->path() : "model_dir";
    runner::check_model_dir(trainer_.model_dir, mark, path, diagnostics_);
  }

  // The batch one system processes per step: the micro-batch when one is set.
  static std::int64_t system_batch(const data::DataloaderSpec& loader, std::int64_t num_csx) {
    return loader.micro_batch_size.value_or(loader.batch_size / num_csx);
  }

  // The optimizer and schedules are checked on their own first, so a refusal points at them.
  bool training_supported() {
    if (!trainer_.optimizer) {
      diagnostics_.error(trainer_.mark, trainer_.tree.path(),
                         "training needs an optimizer (trainer.init.optimizer)");
      return false;
    }
    try {
      nn::make_optimizer(*trainer_.optimizer);
    } catch (const std::invalid_argument& error) {
      diagnostics_.error(trainer_.optimizer->mark, trainer_.optimizer->path, error.what());
      return false;
    }
    try {
      graph::Graph scratch;
      nn::learning_rate(scratch, trainer_.schedulers, graph::constant(scratch, 0.0),
                        nn::optimizer_learning_rate(*trainer_.optimizer));
    } catch (const std::invalid_argument& error) {
      const config::ClassSpec* first =
          trainer_.schedulers.empty() ? &*trainer_.optimizer : &trainer_.schedulers.front();
      diagnostics_.error(first->mark, first->path, error.what());
      return false;
    }
    return true;
  }

  // On CPU and GPU the Model Zoo steps the optimizer once every grad_accum_steps batches (each
  // batch's loss divided by their number): an optimizer step takes that many written batches,
  // each run as a micro-batch. (On CSX the loop section has set it to 1.)
  void accumulate_batches(data::DataloaderSpec& loader) {
    std::int64_t steps = trainer_.loop.grad_accum_steps;
    if (steps <= 1) return;
    if (trainer_.backend.cluster.num_csx > 1) {
      report_grad_accum(Severity::error,
                        "grad_accum_steps accumulates batches on CPU and GPU, which run one "
                        "system: set num_csx to 1, or leave grad_accum_steps at 1");
      return;
    }
    std::int64_t written = loader.batch_size;
    loader.micro_batch_size = loader.micro_batch_size.value_or(written);
    loader.accumulated_batches = steps;
    loader.batch_size = written * steps;
    if (loader.samples) check_epoch_fills_steps(*loader.samples / written, steps, written);
  }

  // An epoch's batches that do not fill an optimizer step are not read.
  void check_epoch_fills_steps(std::int64_t batches, std::int64_t steps, std::int64_t written) {
    if (batches < steps) {
      std::string held = std::to_string(batches) + " of batch_size " + std::to_string(written);
      report_grad_accum(Severity::error, "grad_accum_steps " + std::to_string(steps) +
                                             " needs that many batches per optimizer step, and "
                                             "an epoch holds " +
                                             held);
    } else if (std::int64_t left = batches % steps; left > 0) {
      report_grad_accum(Severity::warning,
                        "the last " + std::to_string(left) + " of each epoch's " +
                            std::to_string(batches) + " batches do not fill an optimizer step of " +
                            std::to_string(steps) +
                            " and are not read (the Model Zoo warns of leftover gradients)");
    }
  }

  void report_grad_accum(Severity severity, const std::string& text) {
    const Node* loop = init_value(trainer_, "loop");
    const Node* key = loop ? loop->find("grad_accum_steps") : nullptr;
    config::SourceMark mark = key ? key->mark() : trainer_.mark;
    diagnostics_.add(severity, mark, key ? key->path() : trainer_.tree.path(), text);
  }

  std::optional<TraceSummary> trace(models::CheckedModel model, CheckedTrainer& checked) {
    if (!models::can_trace(model)) {
      checked.untraced_reason = "csrun cannot build the " + model.definition->name + " network yet";
      diagnostics_.warning(trainer_.model.mark, trainer_.model.path,
                           checked.untraced_reason +
                               ": its params are checked and it is sized, but it is not traced "
                               "(so it cannot be compiled or trained)");
      return std::nullopt;
    }
    bool training = checked.train_loader.has_value();
    const data::DataloaderSpec* loader = training ? &*checked.train_loader
                                         : checked.eval_loaders.empty()
                                             ? nullptr
                                             : &checked.eval_loaders.front();
    if (!loader || (training && !training_supported())) return std::nullopt;
    model = model_reading(std::move(model), *loader);
    TraceSummary summary;
    summary.training = training;
    summary.batch_size = system_batch(*loader, trainer_.backend.cluster.num_csx);
    summary.system_batch = loader->batch_size / trainer_.backend.cluster.num_csx;
    summary.micro_batch_fixed = loader->micro_batch_size.has_value();
    models::TraceOptions options =
        trace_options(trainer_, training ? models::StepKind::train : models::StepKind::eval);
    try {
      models::TracedStep step = models::trace_step(model, summary.batch_size, options);
      if (training && trainer_.backend.retrace_every_iteration) checked.traced_step = step.graph;
      summary.ops = step.graph.size();
      summary.parameters = step.parameter_count;
      summary.flops = step.flops;
      summary.tokens_per_sample = step.tokens_per_sample;
      summary.attention_blocks = step.attention_blocks;
      summary.fingerprint = graph::fingerprint(step.graph);
      checked.compiled =
          compile_trainer(trainer_, summary, std::move(step.graph), options_, diagnostics_);
      return summary;
    } catch (const models::UnsupportedModel& error) {
      const config::Node* value = model.params.find(error.key());
      checked.untraced_reason = error.what();
      diagnostics_.warning(value ? value->mark() : trainer_.model.mark,
                           value ? value->path() : trainer_.model.path,
                           checked.untraced_reason +
                               ": the step is not traced (so it cannot be compiled or trained)");
    } catch (const std::exception& error) {
      diagnostics_.error(trainer_.model.mark, trainer_.model.path,
                         std::string("the model does not trace: ") + error.what());
    }
    return std::nullopt;
  }

  const config::TrainerSpec& trainer_;
  const RunOptions& options_;
  config::Diagnostics& diagnostics_;
  std::set<std::string> checkpoints_checked_;
  std::vector<std::string> processors_;
  std::vector<Node> seen_;
};

}  // namespace

models::CheckedModel model_reading(models::CheckedModel model, const data::DataloaderSpec& loader) {
  if (auto length =
          loader.max_sequence_length ? loader.max_sequence_length : loader.sequence_length)
    model.hints.max_sequence_length = length;
  model.hints.matched_partitions = data::has_matched_partitions(loader);
  return model;
}

models::TraceOptions trace_options(const config::TrainerSpec& trainer, models::StepKind kind) {
  models::TraceOptions options{kind, static_cast<std::uint64_t>(trainer.seed.value_or(0)), {}};
  if (kind == models::StepKind::train)
    options.training = {*trainer.optimizer, trainer.schedulers, trainer.precision};
  return options;
}

CheckedRun check_run(const RunOptions& options) {
  CheckedRun checked;
  checked.run = config::load_params(options.params_path, options.load, checked.diagnostics);
  for (config::TrainerSpec& trainer : checked.run.trainers)
    data::read_vocabulary_sizes(trainer, checked.diagnostics);
  for (const config::TrainerSpec& trainer : checked.run.trainers) {
    checked.trainers.push_back(TrainerCheck(trainer, options, checked.diagnostics).run());
  }
  return checked;
}

std::optional<CheckedRun> validation_stage(const RunOptions& options, const char* command) {
  CheckedRun checked = check_run(options);
  print_diagnostics(checked.diagnostics, options.shown, std::cerr);
  if (!checked.diagnostics.has_errors()) return checked;
  std::size_t errors = checked.diagnostics.error_count();
  std::cerr << "csrun " << command << ": " << errors << (errors == 1 ? " error" : " errors")
            << " in " << options.params_path << "\n";
  if (options.json) std::cout << report_json(command, checked) << "\n";
  return std::nullopt;
}

}  // namespace csrun::modes
