#include "params_loader.hpp"

#include <map>
#include <optional>
#include <string>

#include "legacy_format.hpp"
#include "release_evidence.hpp"
#include "release_migrations.hpp"
#include "spelling.hpp"
#include "tensorflow_layout.hpp"
#include "trainer_reader.hpp"
#include "yaml_reader.hpp"

namespace csrun::config {

namespace {

const char* const kLegacySections =
    "the legacy sections (train_input, eval_input, model, optimizer, runconfig) or a `trainer` key";

void merge_into(Node& target, const Node& source) {
  for (const Node::Entry& entry : source.entries()) {
    Node* existing = target.find(entry.key);
    if (existing && existing->is_map() && entry.value.is_map()) {
      merge_into(*existing, entry.value);
    } else {
      target.set(entry.key, entry.value, entry.key_mark);
    }
  }
}

// Applies CLI runconfig keys to a trainer-format trainer, as the Model Zoo injects them.
void apply_to_trainer(Node& trainer, Node partial) {
  if (!trainer.is_map()) return;
  for (const char* section : {"fit", "validate", "validate_all"}) {
    std::optional<Node> part = partial.take(section);
    Node* target = trainer.find(section);
    if (part && target && target->is_map()) merge_into(*target, *part);
  }
  Node* init = trainer.find("init");
  Node* partial_init = partial.find("init");
  if (!init || !init->is_map() || !partial_init) return;
  // A trainer that names its device with `device` and gets backend settings from flags
  // (--num_csx, ...) would hold both keys, which contradict each other: the device moves
  // into backend.backend_type first. With --target_device alone, `device` is simply replaced.
  Node* backend = partial_init->find("backend");
  const Node* device = init->find("device");
  if (backend && device && !init->contains("backend")) {
    std::optional<Node> type = backend->take("backend_type");
    if (backend->entries().empty()) {
      init->set("device", type ? *type : *device);
      partial_init->take("backend");
    } else {
      backend->set("backend_type", type ? *type : *device);
      init->take("device");
    }
  }
  merge_into(*init, *partial_init);
}

Node runconfig_from_overrides(const std::vector<RunconfigOverride>& overrides) {
  Node runconfig = Node::make_map(SourceMark{"command line"}, "runconfig");
  for (const RunconfigOverride& override_ : overrides) {
    runconfig.set(override_.key, override_.value, override_.value.mark());
  }
  return runconfig;
}

// Where a legacy section's keys live in the trainer format, for the error that names one next to
// `trainer` (often a --set written for the other layout).
std::string trainer_place_of(const std::string& legacy_section) {
  static const std::map<std::string, std::string> places = {
      {"train_input", "trainer.fit.train_dataloader"},
      {"eval_input", "trainer.fit.val_dataloader (and trainer.validate.val_dataloader)"},
      {"model", "trainer.init.model"},
      {"optimizer", "trainer.init.optimizer (its schedule: trainer.init.schedulers)"},
      {"runconfig", "trainer.init.loop, .checkpoint, .logging and .backend"}};
  auto found = places.find(legacy_section);
  if (found == places.end()) return "";
  return "; in this layout " + legacy_section + "'s keys are under " + found->second;
}

std::vector<Node> trainer_trees(const Node& root, ParamsFormat& format, Diagnostics& diagnostics) {
  for (const Node::Entry& entry : root.entries()) {
    if (entry.key == "trainer") continue;
    diagnostics.error(entry.key_mark, entry.key,
                      "unexpected top-level key next to `trainer`: a trainer-format params file "
                      "holds only the `trainer` key (legacy sections cannot be mixed in)" +
                          trainer_place_of(entry.key));
  }
  const Node& trainer = *root.find("trainer");
  if (trainer.is_map()) {
    format = ParamsFormat::trainer;
    return {trainer};
  }
  if (!trainer.is_list()) {
    diagnostics.error(trainer.mark(), trainer.path(),
                      "Expected trainer to be a dict, or list of dicts. Got: " + trainer.render());
    return {};
  }
  format = ParamsFormat::trainer_list;
  std::vector<Node> trees;
  for (const Node& item : trainer.items()) {
    if (!item.is_map()) {
      diagnostics.error(item.mark(), item.path(),
                        "Expected trainer to be a dict. Got: " + item.render());
      continue;
    }
    const Node* inner = item.find("trainer");
    if (!inner) {
      diagnostics.error(item.mark(), item.path(),
                        "Trainer configuration not found in params. Please ensure that the params "
                        "contain a 'trainer' key.");
      continue;
    }
    for (const Node::Entry& entry : item.entries()) {
      if (entry.key != "trainer") {
        diagnostics.error(entry.key_mark, join_path(item.path(), entry.key),
                          "a trainer list item holds only the key `trainer`");
      }
    }
    trees.push_back(*inner);
  }
  if (trainer.items().empty()) {
    diagnostics.error(trainer.mark(), trainer.path(), "the list of trainers is empty");
  }
  return trees;
}

void describe_backend(const BackendSpec& backend,
                      std::vector<std::pair<std::string, std::string>>& out) {
  out.emplace_back("compile_dir", backend.compile_dir.value_or("None"));
  out.emplace_back("compile_only", backend.compile_only ? "True" : "False");
  out.emplace_back("validate_only", backend.validate_only ? "True" : "False");
}

// One process holds one backend: every trainer must use the first trainer's device type, and
// only cluster_config may differ between them.
void check_backends(const RunSpec& run, Diagnostics& diagnostics) {
  if (run.trainers.size() < 2) return;
  const TrainerSpec& first = run.trainers.front();
  std::vector<std::pair<std::string, std::string>> first_args;
  describe_backend(first.backend, first_args);
  for (std::size_t i = 1; i < run.trainers.size(); ++i) {
    const TrainerSpec& trainer = run.trainers[i];
    if (trainer.backend.device != first.backend.device) {
      diagnostics.error(trainer.mark, trainer.tree.path(),
                        std::string("Cannot instantiate multiple backends. A backend with type ") +
                            device_name(first.backend.device) + " has already been instantiated.");
      continue;
    }
    std::vector<std::pair<std::string, std::string>> args;
    describe_backend(trainer.backend, args);
    std::string mismatches;
    for (std::size_t k = 0; k < args.size(); ++k) {
      if (args[k].second == first_args[k].second) continue;
      mismatches += "\n\t" + args[k].first + ": " + first_args[k].second + " != " + args[k].second;
    }
    if (!mismatches.empty()) {
      diagnostics.error(trainer.mark, trainer.tree.path(),
                        std::string("Detected mismatching arguments for ") +
                            device_name(first.backend.device) + " backend:" + mismatches +
                            "\nCurrently, only cluster_config may be modified across different "
                            "trainers.");
    }
  }
}

// The releases the file is written for, and the defaults that changed between releases as its
// release had them.
void apply_release_defaults(ParamsTrees& trees, Diagnostics& diagnostics) {
  trees.releases = likely_releases(trees.written, trees.format, trees.tensorflow_layout);
  for (Node& tree : trees.trainers) {
    if (trees.format == ParamsFormat::legacy)
      full_precision_where_unset(tree, trees.releases, diagnostics);
    default_half_type(tree, trees.releases, diagnostics);
    scale_gpt_loss_by_batch(tree, trees.releases, diagnostics);
  }
}

}  // namespace

ParamsTrees read_params_trees(const std::string& path, const LoadOptions& options,
                              Diagnostics& diagnostics) {
  ParamsTrees trees;
  Node root = read_yaml_file(path, diagnostics);
  if (diagnostics.has_errors() && root.is_null()) return trees;
  for (const SetOverride& override_ : options.set_overrides) {
    apply_set_override(root, override_, diagnostics);
  }
  trees.written = std::move(root);
  const Node& written = trees.written;
  if (written.is_null()) {
    diagnostics.error(SourceMark{path, 1, 1}, "",
                      std::string("the params file is empty; it should hold ") + kLegacySections);
    return trees;
  }
  if (!written.is_map()) {
    diagnostics.error(written.mark(), "",
                      std::string("expected a mapping at the top level of the params file, with ") +
                          kLegacySections + "; found " + written.describe());
    return trees;
  }
  Node cli_runconfig = runconfig_from_overrides(options.runconfig_overrides);
  if (written.contains("trainer")) {
    trees.trainers = trainer_trees(written, trees.format, diagnostics);
    for (Node& tree : trees.trainers)
      migrate_trainer_tree(tree, diagnostics);
    if (!options.runconfig_overrides.empty()) {
      for (Node& tree : trees.trainers)
        apply_to_trainer(tree, convert_runconfig_keys(cli_runconfig, diagnostics));
    }
    apply_release_defaults(trees, diagnostics);
    return trees;
  }
  // A trainer's body alone, as a run writes it to cerebras_logs/<run>/trainer_params.yaml.
  if (written.contains("init") && !written.contains("model") && !written.contains("train_input")) {
    diagnostics.error(written.find_entry("init")->key_mark, "init",
                      "init (and fit, validate, validate_all) are a trainer's sections, here "
                      "without the `trainer:` key above them (a run's trainer_params.yaml holds "
                      "one trainer's body so): put them under `trainer:`");
    return trees;
  }
  trees.format = ParamsFormat::legacy;
  // The CLI's runconfig flags go into a copy: `written` stays the file as written.
  std::optional<Node> with_flags;
  if (!options.runconfig_overrides.empty()) {
    with_flags = written;
    merge_into(with_flags->ensure_map("runconfig", SourceMark{"command line"}, "runconfig"),
               cli_runconfig);
  }
  const Node& legacy = with_flags ? *with_flags : written;
  trees.tensorflow_layout = is_tensorflow_layout(legacy);
  trees.trainers.push_back(convert_legacy_params(legacy, diagnostics));
  apply_release_defaults(trees, diagnostics);
  return trees;
}

RunSpec read_run_spec(const std::string& path, const ParamsTrees& trees, Diagnostics& diagnostics) {
  RunSpec run;
  run.params_path = path;
  run.format = trees.format;
  for (std::size_t i = 0; i < trees.trainers.size(); ++i) {
    run.trainers.push_back(read_trainer(trees.trainers[i], i, run.format, diagnostics));
    TrainerSpec& trainer = run.trainers.back();
    trainer.tensorflow_layout = trees.tensorflow_layout;
    trainer.releases = trees.releases;
    if (trees.tensorflow_layout && trainer.precision.loss_scaling.dynamic) {
      trainer.precision.loss_scaling.overflow_tolerance =
          tensorflow_overflow_tolerance(trees.written, diagnostics);
    }
  }
  check_backends(run, diagnostics);
  return run;
}

RunSpec load_params(const std::string& path, const LoadOptions& options, Diagnostics& diagnostics) {
  ParamsTrees trees = read_params_trees(path, options, diagnostics);
  check_release_consistency(trees.written, trees.format, trees.tensorflow_layout, diagnostics);
  return read_run_spec(path, trees, diagnostics);
}

}  // namespace csrun::config
