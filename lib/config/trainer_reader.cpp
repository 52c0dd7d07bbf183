#include "trainer_reader.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "param_types.hpp"
#include "spelling.hpp"
#include "trainer_sections.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

const std::vector<std::string> kTrainerKeys = {"init", "fit", "validate", "validate_all"};
const std::vector<std::string> kInitKeys = {"device",    "backend",   "model_dir",  "seed",
                                            "model",     "optimizer", "schedulers", "precision",
                                            "sparsity",  "loop",      "checkpoint", "logging",
                                            "callbacks", "loggers",   "autorestart"};
// The states of 2.4 and later, and 2.0-2.2's names: lr_scheduler (schedulers), sparsity.
const std::vector<std::string> kCheckpointStates = {"model",        "optimizer",  "schedulers",
                                                    "grad_scaler",  "dataloader", "global_step",
                                                    "lr_scheduler", "sparsity"};

// Core callbacks are configured through their own init key, never through `callbacks`.
const std::map<std::string, std::string>& core_callbacks() {
  static const std::map<std::string, std::string> core = {
      {"artifactdircallback", "model_dir"},
      {"reproducibility", "seed"},
      {"backendcallback", "backend"},
      {"modelcallback", "model"},
      {"optimizercallback", "optimizer"},
      {"schedulerscallback", "schedulers"},
      {"mixedprecision", "precision"},
      {"sparsitycallback", "sparsity"},
      {"trainingloop", "loop"},
      {"loopcallback", "loop"},
      {"logging", "logging"},
      {"checkpoint", "checkpoint"},
      {"gradientaccumulationcallback", "loop.grad_accum_steps"}};
  return core;
}

void report_unknown_keys(const Node& map, const std::vector<std::string>& known,
                         const std::string& what, Diagnostics& diagnostics) {
  for (const Node::Entry& entry : map.entries()) {
    if (std::find(known.begin(), known.end(), entry.key) != known.end()) continue;
    auto suggestion = closest_match(entry.key, known);
    diagnostics.error(
        entry.key_mark, join_path(map.path(), entry.key),
        "Extra inputs are not permitted" +
            (suggestion ? "; did you mean '" + *suggestion + "'?"
                        : "; valid keys of " + what + ": " + quoted_list(known, "and")));
  }
}

const Node* present(const Node& map, const char* key) {
  const Node* value = map.find(key);
  return value && !value->is_null() ? value : nullptr;
}

class TrainerReader {
 public:
  TrainerReader(std::size_t index, ParamsFormat format, Diagnostics& diagnostics)
      : format_(format), diagnostics_(diagnostics) {
    spec_.index = index;
    spec_.format = format;
  }

  TrainerSpec read(const Node& tree) {
    spec_.mark = tree.mark();
    spec_.tree = tree;
    if (!tree.is_map()) {
      diagnostics_.error(tree.mark(), tree.path(),
                         "Expected trainer to be a dict. Got: " + tree.render());
      return std::move(spec_);
    }
    report_unknown_keys(tree, kTrainerKeys, "a trainer", diagnostics_);
    const Node* init = tree.find("init");
    if (init && !init->is_null() && !init->is_map()) {
      diagnostics_.error(init->mark(), init->path(),
                         "expected a mapping (the trainer's device, model, optimizer and "
                         "callbacks); found " +
                             init->describe());
      return std::move(spec_);
    }
    if (!init || !init->is_map()) {
      diagnostics_.error(init ? init->mark() : tree.mark(), init ? init->path() : tree.path(),
                         format_ == ParamsFormat::legacy
                             ? "a legacy params file needs a model section (and usually "
                               "train_input, optimizer and runconfig)"
                             : "Trainer configuration must have an 'init' key.");
      return std::move(spec_);
    }
    read_init(*init);
    read_fit(tree.find("fit"));
    read_validate(tree.find("validate"));
    read_validate_all(tree.find("validate_all"));
    apply_callback_effects();
    return std::move(spec_);
  }

 private:
  void read_init(const Node& init) {
    report_unknown_keys(init, kInitKeys, "trainer.init", diagnostics_);
    spec_.backend = read_backend(init, diagnostics_);
    if (const Node* dir = present(init, "model_dir")) {
      if (auto checked = T::string().check(*dir, diagnostics_))
        spec_.model_dir = checked->as_string();
    }
    if (const Node* seed = present(init, "seed")) {
      if (auto checked = T::integer().check(*seed, diagnostics_)) spec_.seed = checked->as_int();
    }
    read_model(init);
    if (const Node* optimizer = present(init, "optimizer")) {
      spec_.optimizer = read_optimizer(*optimizer, diagnostics_);
    }
    if (const Node* schedulers = init.find("schedulers")) {
      spec_.schedulers = read_schedulers(*schedulers, diagnostics_);
    }
    spec_.precision = read_precision(init.find("precision"), spec_.backend.device, diagnostics_);
    read_loop_section(init);
    check_cycle_length(spec_.schedulers, spec_.loop, diagnostics_);
    spec_.checkpoint = read_checkpoint(init.find("checkpoint"), diagnostics_);
    spec_.logging = read_logging(init.find("logging"), diagnostics_);
    if (const Node* callbacks = init.find("callbacks")) read_callbacks(*callbacks);
    if (const Node* loggers = init.find("loggers")) {
      spec_.loggers = read_class_list(*loggers, logger_catalog(), diagnostics_);
    }
    if (const Node* sparsity = present(init, "sparsity")) read_sparsity(*sparsity);
    if (const Node* autorestart = present(init, "autorestart")) {
      diagnostics_.warning(autorestart->mark(), autorestart->path(),
                           "autorestart has no effect in csrun: rerun the same command to resume "
                           "from the latest checkpoint");
    }
  }

  void read_loop_section(const Node& init) {
    const Node* loop = present(init, "loop");
    if (!loop) {
      spec_.loop_defaulted = true;
      spec_.loop.num_epochs = 1;
      return;
    }
    spec_.loop = read_loop(loop, spec_.backend.device, diagnostics_);
  }

  void read_model(const Node& init) {
    const Node* model = init.find("model");
    if (!model) {
      diagnostics_.error(init.mark(), init.path(),
                         format_ == ParamsFormat::legacy
                             ? "a legacy params file needs a model section"
                             : "Trainer init configuration must have a 'model' key.");
      return;
    }
    if (!model->is_map()) {
      diagnostics_.error(
          model->mark(), model->path(),
          "expected the model's parameters as a mapping; found " + model->describe());
      return;
    }
    spec_.model.mark = model->mark();
    spec_.model.path = model->path();
    spec_.model.params = *model;
    std::optional<Node> name = spec_.model.params.take("name");
    std::optional<Node> old_name = spec_.model.params.take("model_name");
    if (old_name) {
      diagnostics_.warning(old_name->mark(), old_name->path(),
                           "The \"model_name\" key is now deprecated and will be removed in a "
                           "future release. Please use \"name\" instead.");
      if (name && !name->same_value(*old_name)) {
        diagnostics_.error(
            old_name->mark(), old_name->path(),
            "Got conflicting model names: " + name->render() + " and " + old_name->render());
      }
      if (!name) name = old_name;
    }
    if (!name) {
      if (format_ != ParamsFormat::legacy) {
        diagnostics_.error(model->mark(), model->path(),
                           "Model configuration must have a 'name' key.");
      }
      return;
    }
    spec_.model.name_written = true;
    if (auto checked = T::string().check(*name, diagnostics_))
      spec_.model.name = checked->as_string();
  }

  void read_sparsity(const Node& sparsity) {
    std::vector<const Node*> groups;
    if (sparsity.is_list()) {
      for (const Node& item : sparsity.items())
        groups.push_back(&item);
    } else {
      groups.push_back(&sparsity);
    }
    for (const Node* group : groups) {
      if (!group->is_map()) {
        diagnostics_.error(group->mark(), group->path(),
                           "expected a sparsity mapping (algorithm, sparsity or schedule, ...); "
                           "found " +
                               group->describe());
        continue;
      }
      // Model Zoo 2.0's dynamic sparsity (rigl, set) used `schedule: {freq, stop}` for its
      // update steps, not for the sparsity levels this rule is about.
      const Node* schedule = group->find("schedule");
      bool update_steps = schedule && schedule->is_map() && schedule->contains("freq");
      if (group->contains("sparsity") && schedule && !update_steps) {
        diagnostics_.error(group->mark(), group->path(),
                           "Cannot specify both 'sparsity' and 'schedule' in the same config");
      }
    }
    diagnostics_.warning(sparsity.mark(), sparsity.path(),
                         "sparsity has no effect in csrun: the simulator trains dense weights");
  }

  void read_callbacks(const Node& callbacks) {
    if (!callbacks.is_list()) {
      spec_.callbacks = read_class_list(callbacks, callback_catalog(), diagnostics_);
      return;
    }
    Node allowed = Node::make_list(callbacks.mark(), callbacks.path());
    for (const Node& item : callbacks.items()) {
      if (item.is_map() && item.entries().size() == 1) {
        const Node::Entry& entry = item.entries().front();
        auto core = core_callbacks().find(lowercase(entry.key));
        if (core != core_callbacks().end()) {
          diagnostics_.error(entry.key_mark, join_path(item.path(), entry.key),
                             "Callback " + entry.key +
                                 " is a core callback and cannot be "
                                 "overridden; set trainer.init." +
                                 core->second + " instead");
          continue;
        }
      }
      allowed.push_back(item);
    }
    spec_.callbacks = read_class_list(allowed, callback_catalog(), diagnostics_);
  }

  CheckpointChoice read_checkpoint_choice(const Node& section, const char* key) {
    const Node::Entry* entry = section.find_entry(key);
    if (!entry) return {};
    if (entry->value.is_null()) return {CheckpointChoice::Kind::none, {}, entry->key_mark};
    if (auto path = T::string().check(entry->value, diagnostics_)) {
      return {CheckpointChoice::Kind::path, path->as_string(), entry->value.mark()};
    }
    return {};
  }

  std::vector<Node> read_dataloaders(const Node* value) {
    std::vector<Node> loaders;
    if (!value || value->is_null()) return loaders;
    if (value->is_map()) return {*value};
    if (value->is_list()) {
      for (const Node& item : value->items()) {
        if (item.is_map()) {
          loaders.push_back(item);
        } else {
          diagnostics_.error(item.mark(), item.path(),
                             "expected a dataloader mapping; found " + item.describe());
        }
      }
      return loaders;
    }
    diagnostics_.error(
        value->mark(), value->path(),
        "expected a dataloader mapping or a list of them; found " + value->describe());
    return loaders;
  }

  const Node* section(const Node* node, const std::vector<std::string>& keys,
                      const std::string& name) {
    if (!node || node->is_null()) return nullptr;
    if (!node->is_map()) {
      diagnostics_.error(node->mark(), node->path(),
                         "expected a mapping; found " + node->describe());
      return nullptr;
    }
    report_unknown_keys(*node, keys, name, diagnostics_);
    return node;
  }

  void read_fit(const Node* node) {
    const Node* fit = section(node, {"train_dataloader", "val_dataloader", "ckpt_path"}, "fit");
    if (!fit) return;
    FitSpec spec;
    const Node* train = fit->find("train_dataloader");
    if (!train || !train->is_map()) {
      diagnostics_.error(
          train ? train->mark() : fit->mark(), fit->path(),
          train ? "expected the train dataloader as a mapping; found " + train->describe()
                : std::string("Field required: 'train_dataloader'"));
    } else {
      spec.train_dataloader = *train;
    }
    spec.val_dataloaders = read_dataloaders(fit->find("val_dataloader"));
    spec.checkpoint = read_checkpoint_choice(*fit, "ckpt_path");
    spec_.fit = std::move(spec);
  }

  void read_validate(const Node* node) {
    const Node* validate = section(node, {"val_dataloader", "ckpt_path"}, "validate");
    if (!validate) return;
    ValidateSpec spec;
    std::vector<Node> loaders = read_dataloaders(validate->find("val_dataloader"));
    if (loaders.empty() && !validate->contains("val_dataloader")) {
      diagnostics_.error(validate->mark(), validate->path(), "Field required: 'val_dataloader'");
    }
    if (!loaders.empty()) spec.val_dataloader = loaders.front();
    spec.checkpoint = read_checkpoint_choice(*validate, "ckpt_path");
    spec_.validate = std::move(spec);
  }

  void read_validate_all(const Node* node) {
    const Node* validate_all = section(node, {"val_dataloaders", "ckpt_paths"}, "validate_all");
    if (!validate_all) return;
    ValidateAllSpec spec;
    spec.val_dataloaders = read_dataloaders(validate_all->find("val_dataloaders"));
    if (const Node* paths = present(*validate_all, "ckpt_paths")) {
      if (auto checked = string_or_strings().check(*paths, diagnostics_)) {
        if (checked->is_list()) {
          spec.checkpoint_paths = checked->items();
        } else {
          spec.checkpoint_paths.push_back(*checked);
        }
      }
    }
    spec_.validate_all = std::move(spec);
  }

  // Callbacks that carry settings csrun keeps elsewhere in the typed description.
  void apply_callback_effects() {
    for (const ClassSpec& callback : spec_.callbacks) {
      if (callback.disabled) continue;
      if (callback.type == "GlobalFlags" || callback.type == "ScopedTrainFlags" ||
          callback.type == "ScopedValidateFlags") {
        apply_flags(callback);
      } else if (callback.type == "KeepNCheckpoints") {
        if (const Node* n = callback.params.find("n")) spec_.checkpoint.keep_last = n->as_int();
      } else if (callback.type == "LoadCheckpointStates") {
        apply_checkpoint_states(callback);
      }
    }
  }

  void apply_flags(const ClassSpec& callback) {
    if (const Node* retrace = callback.params.find("csx.debug.retrace_every_iteration")) {
      spec_.backend.retrace_every_iteration = retrace->as_bool();
    }
    const Node* micro = callback.params.find("csx.performance.micro_batch_size");
    if (!micro) return;
    bool train = callback.type != "ScopedValidateFlags";
    bool validate = callback.type != "ScopedTrainFlags";
    if (train && spec_.fit) set_micro_batch(spec_.fit->train_dataloader, *micro);
    if (!validate) return;
    if (spec_.fit) {
      for (Node& loader : spec_.fit->val_dataloaders)
        set_micro_batch(loader, *micro);
    }
    if (spec_.validate) set_micro_batch(spec_.validate->val_dataloader, *micro);
    if (spec_.validate_all) {
      for (Node& loader : spec_.validate_all->val_dataloaders)
        set_micro_batch(loader, *micro);
    }
  }

  void set_micro_batch(Node& loader, const Node& micro) {
    if (!loader.is_map()) return;
    if (const Node* own = loader.find("micro_batch_size"); own && !own->same_value(micro)) {
      diagnostics_.error(micro.mark(), micro.path(),
                         "micro_batch_size " + micro.render() +
                             " contradicts the dataloader's own "
                             "micro_batch_size " +
                             own->render() + " (" + own->mark().to_string() + ")");
      return;
    }
    loader.set("micro_batch_size", micro, micro.mark());
  }

  void apply_checkpoint_states(const ClassSpec& callback) {
    const Node* states = callback.params.find("load_checkpoint_states");
    if (!states) return;
    std::vector<std::string> names;
    if (states->is_string()) {
      std::string text = states->as_string();
      for (std::size_t start = 0; start <= text.size();) {
        std::size_t comma = std::min(text.find(',', start), text.size());
        std::string name = text.substr(start, comma - start);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (!name.empty()) names.push_back(name);
        start = comma + 1;
      }
    } else {
      for (const Node& item : states->items())
        names.push_back(item.as_string());
    }
    if (names.size() == 1 && names.front() == "all") return;
    std::vector<std::string> unexpected;
    for (const std::string& name : names) {
      if (std::find(kCheckpointStates.begin(), kCheckpointStates.end(), name) ==
          kCheckpointStates.end()) {
        unexpected.push_back(name);
      }
    }
    if (!unexpected.empty()) {
      diagnostics_.error(
          states->mark(), states->path(),
          "Unexpected keys specified via `load_checkpoint_states`: " + python_list(unexpected) +
              ". Only the keys in the following list are accepted: " +
              python_list(kCheckpointStates));
      return;
    }
    spec_.checkpoint.load_checkpoint_states = names;
  }

  ParamsFormat format_;
  Diagnostics& diagnostics_;
  TrainerSpec spec_;
};

}  // namespace

TrainerSpec read_trainer(const Node& tree, std::size_t index, ParamsFormat format,
                         Diagnostics& diagnostics) {
  return TrainerReader(index, format, diagnostics).read(tree);
}

}  // namespace csrun::config
