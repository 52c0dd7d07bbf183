// csrun config convert: a params file of any Model Zoo release and layout, written in the current
// (2.10) trainer format with every migration applied and a comment line per change.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "config/params_loader.hpp"
#include "config/release_evidence.hpp"
#include "config/yaml_writer.hpp"
#include "data/processor_registry.hpp"
#include "data/vocabulary_files.hpp"
#include "models/registry.hpp"
#include "modes.hpp"
#include "report.hpp"
#include "storage/atomic_file.hpp"

namespace csrun::modes {

namespace {

using config::Node;

// The comment lines the file opens with (a licence, what the config is for), kept as written:
// converting a converted file then gives the same text.
std::string leading_comments(const std::string& path) {
  std::ifstream file(path);
  std::string kept;
  std::string pending_blank;
  std::string line;
  while (std::getline(file, line)) {
    std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
      pending_blank += "\n";
      continue;
    }
    if (line[first] != '#') break;
    kept += (kept.empty() ? "" : pending_blank) + line + "\n";
    pending_blank.clear();
  }
  return kept;
}

std::string change_line(const config::Diagnostic& change) {
  std::string where = change.key_path.empty() ? std::string("the file") : change.key_path;
  if (change.mark.has_position()) where += " (line " + std::to_string(change.mark.line) + ")";
  return "#   " + where + ": " + change.message + "\n";
}

// The header naming the changes, one line each; nothing when the file needed none.
std::string changes_header(const std::string& path, const config::ParamsTrees& trees,
                           const config::Diagnostics& changes) {
  std::string lines;
  std::set<std::string> seen;
  for (const config::Diagnostic& change : changes.all()) {
    std::string line = change_line(change);
    if (seen.insert(line).second) lines += line;
  }
  bool reshaped = trees.format == config::ParamsFormat::legacy;
  if (lines.empty() && !reshaped) return {};
  std::string layout = trees.tensorflow_layout ? "TensorFlow-layout legacy params"
                       : reshaped              ? "legacy params"
                                               : "trainer params";
  std::string name = std::filesystem::path(path).filename().string();
  return "# csrun config convert: " + name + " (" + layout +
         ") in the Model Zoo 2.10 trainer format" + (lines.empty() ? ".\n" : "; changes:\n") +
         lines;
}

// Keys a schema accepts for compatibility only: the converted file leaves them out.
void drop_no_effect_keys(Node& section, const config::Schema& schema,
                         config::Diagnostics& changes) {
  for (const config::Field& field : schema.fields()) {
    if (field.status != config::FieldStatus::no_effect) continue;
    const Node::Entry* entry = section.find_entry(field.name);
    if (!entry) continue;
    changes.warning(entry->key_mark, entry->value.path(), "left out: " + field.note);
    section.take(field.name);
  }
}

void drop_loader_keys(Node& loader, config::Diagnostics& changes) {
  if (!loader.is_map()) return;
  const Node* name = loader.find("data_processor");
  const data::ProcessorDefinition* processor =
      name && name->is_string() ? data::find_processor(name->as_string()) : nullptr;
  drop_no_effect_keys(loader, processor ? *processor->schema : *data::unknown_processor().schema,
                      changes);
}

void drop_loaders_keys(Node* loaders, config::Diagnostics& changes) {
  if (!loaders) return;
  if (!loaders->is_list()) return drop_loader_keys(*loaders, changes);
  for (Node& loader : loaders->items())
    drop_loader_keys(loader, changes);
}

// The model section as 2.10 writes it: its name first, no keys without effect.
Node converted_model(const Node& written, const models::CheckedModel& model,
                     config::Diagnostics& changes) {
  Node section = written;
  drop_no_effect_keys(section, *model.definition->schema, changes);
  if (!model.name_inferred) return section;
  changes.warning(written.mark(), config::join_path(written.path(), "name"),
                  "set to '" + model.definition->name +
                      "', the network csrun infers for this legacy file (2.x names it)");
  Node named = Node::make_map(written.mark(), written.path());
  named.set("name", Node::make_string(model.definition->name, written.mark()));
  for (const Node::Entry& entry : section.entries())
    named.set(entry.key, entry.value, entry.key_mark);
  return named;
}

// `auto` means what the file's release meant: up to 1.9 the wafer ran a model pipelined where it
// fit, from 2.0 weight streaming. No 2.10 key says "pipelined where it fits", so the converted file
// keeps `auto`, and this says what changes and which setting keeps the old way.
void note_auto_mode(const config::TrainerSpec& trainer, config::Diagnostics& changes) {
  bool auto_mode = trainer.backend.execution_mode == config::ExecutionMode::automatic;
  if (!auto_mode || trainer.releases.last > config::Release::r1_9 ||
      trainer.backend.device != config::Device::csx || trainer.backend.cluster.num_csx > 1)
    return;
  changes.warning(trainer.mark, "backend.execution_mode",
                  "auto: Model Zoo " + trainer.releases.describe() +
                      " ran this file pipelined where the model fits the wafer; in the 2.10 "
                      "format auto runs weight streaming (add execution_mode: pipelined to the "
                      "backend section to run it as before; csrun compile of the original "
                      "says which it chose)");
}

void note_tensorflow_loss_scaling(const config::TrainerSpec& trainer,
                                  config::Diagnostics& changes) {
  if (!trainer.precision.loss_scaling.overflow_tolerance) return;
  changes.warning(trainer.mark, "optimizer.loss_scaling_factor",
                  "the TensorFlow layout's dynamic loss scaling (CSDynamicLossScale) halves the "
                  "scale only when a share of the steps since its last change overflowed; the "
                  "2.10 format has no key for that, so the converted file halves it at every "
                  "overflow, as cerebras.pytorch's GradScaler does");
}

// Plain scalars such as 1e-5 that YAML 1.2 reads as numbers and PyYAML as strings: csrun reads
// them as numbers, and the converted file spells them so that both agree.
void spell_numbers(Node& node, config::Diagnostics& changes) {
  if (node.is_string() && node.looks_numeric()) {
    changes.warning(node.mark(), node.path(),
                    "written as a number: PyYAML reads " + node.text() +
                        " as a string, csrun as the number it spells");
    node = Node::make_number(std::strtod(node.text().c_str(), nullptr), node.mark(), node.path());
    return;
  }
  for (Node& item : node.items())
    spell_numbers(item, changes);
  for (Node::Entry& entry : node.entries())
    spell_numbers(entry.value, changes);
}

// `map` with the keys of `order` first, in that order, and the others after them as written.
Node ordered(const Node& map, std::initializer_list<const char*> order) {
  Node sorted = Node::make_map(map.mark(), map.path());
  for (const char* key : order) {
    if (const Node::Entry* entry = map.find_entry(key))
      sorted.set(key, entry->value, entry->key_mark);
  }
  for (const Node::Entry& entry : map.entries()) {
    if (!sorted.contains(entry.key)) sorted.set(entry.key, entry.value, entry.key_mark);
  }
  return sorted;
}

// The trainer's sections in the order the Model Zoo's own 2.x files use.
Node in_model_zoo_order(const Node& tree) {
  Node sorted = ordered(tree, {"init", "fit", "validate", "validate_all"});
  if (Node* init = sorted.find("init"); init && init->is_map()) {
    *init = ordered(
        *init, {"device", "backend", "model_dir", "seed", "model", "optimizer", "schedulers",
                "precision", "sparsity", "loop", "checkpoint", "logging", "callbacks", "loggers"});
  }
  return sorted;
}

Node converted_trainer(config::TrainerSpec& trainer, config::Diagnostics& changes,
                       config::Diagnostics& findings) {
  data::read_vocabulary_sizes(trainer, changes);
  std::optional<models::CheckedModel> model = models::check_model(trainer, findings);
  Node tree = trainer.tree;
  Node* init = tree.find("init");
  Node* section = init ? init->find("model") : nullptr;
  if (model && model->definition && section && section->is_map())
    *section = converted_model(*section, *model, changes);
  if (Node* fit = tree.find("fit")) {
    drop_loaders_keys(fit->find("train_dataloader"), changes);
    drop_loaders_keys(fit->find("val_dataloader"), changes);
  }
  if (Node* validate = tree.find("validate"))
    drop_loaders_keys(validate->find("val_dataloader"), changes);
  if (Node* validate_all = tree.find("validate_all"))
    drop_loaders_keys(validate_all->find("val_dataloaders"), changes);
  spell_numbers(tree, changes);
  note_auto_mode(trainer, changes);
  note_tensorflow_loss_scaling(trainer, changes);
  return in_model_zoo_order(tree);
}

Node params_root(const config::RunSpec& run, std::vector<Node> trainers) {
  Node root = Node::make_map();
  if (run.format != config::ParamsFormat::trainer_list) {
    root.set("trainer", std::move(trainers.front()));
    return root;
  }
  Node list = Node::make_list();
  for (Node& trainer : trainers) {
    Node item = Node::make_map();
    item.set("trainer", std::move(trainer));
    list.push_back(std::move(item));
  }
  root.set("trainer", std::move(list));
  return root;
}

void report(const config::Diagnostics& changes, const config::Diagnostics& findings,
            const ConvertCommand& command) {
  print_diagnostics(changes, command.shown, std::cerr);
  print_diagnostics(findings, command.shown, std::cerr);
  std::size_t errors = changes.error_count() + findings.error_count();
  if (errors == 0) return;
  std::cerr << "csrun config convert: " << errors << (errors == 1 ? " error" : " errors") << " in "
            << command.params_path << "\n";
}

}  // namespace

int convert(const ConvertCommand& command) {
  config::Diagnostics changes;
  config::Diagnostics findings;
  config::ParamsTrees trees = config::read_params_trees(command.params_path, {}, changes);
  if (changes.has_errors()) {
    report(changes, findings, command);
    return 1;
  }
  config::check_release_consistency(trees.written, trees.format, trees.tensorflow_layout, findings);
  config::RunSpec run = config::read_run_spec(command.params_path, trees, findings);
  std::vector<Node> trainers;
  for (config::TrainerSpec& trainer : run.trainers)
    trainers.push_back(converted_trainer(trainer, changes, findings));
  report(changes, findings, command);
  if (changes.has_errors() || findings.has_errors() || trainers.empty()) return 1;
  std::string text = leading_comments(command.params_path) +
                     changes_header(command.params_path, trees, changes) +
                     config::to_yaml(params_root(run, std::move(trainers)));
  if (command.output_path.empty()) {
    std::cout << text;
    return 0;
  }
  try {
    storage::write_file_atomically(command.output_path, text);
  } catch (const std::runtime_error& error) {
    std::cerr << "csrun config convert: " << error.what() << "\n";
    return 1;
  }
  std::cerr << "csrun config convert: wrote " << command.output_path << "\n";
  return 0;
}

}  // namespace csrun::modes
