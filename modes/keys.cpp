// csrun config keys: what a network, data processor, optimizer, LR scheduler, callback or logger
// accepts, as the Markdown the docs hold (docs/models.md, data.md and params.md are regenerated
// from it by scripts/docs_keys.py).

#include <algorithm>
#include <iostream>
#include <span>
#include <sstream>

#include "config/class_catalog.hpp"
#include "config/spelling.hpp"
#include "data/processor_registry.hpp"
#include "models/registry.hpp"
#include "modes.hpp"
#include "nn/optimizer.hpp"

namespace csrun::modes {

namespace {

std::string key_table(const config::Schema& schema) {
  std::ostringstream out;
  bool header = false;
  for (const config::Field& field : schema.fields()) {
    if (field.status != config::FieldStatus::active) continue;
    if (!header) out << "| key | type | default |\n|---|---|---|\n";
    header = true;
    std::string fallback = field.required        ? "**required**"
                           : field.default_value ? field.default_value->render()
                                                 : "";
    out << "| `" << field.name << "` | " << field.type.describe() << " | " << fallback << " |\n";
  }
  return out.str();
}

std::string compatibility_list(const config::Schema& schema) {
  std::ostringstream out;
  for (const config::Field& field : schema.fields()) {
    if (field.status == config::FieldStatus::active) continue;
    if (out.tellp() == 0) out << "\nAccepted with a warning or refused:\n\n";
    bool refused = field.status == config::FieldStatus::removed;
    out << "- `" << field.name << "`: " << (refused ? "error, " : "warning, ") << field.note
        << "\n";
  }
  return out.str();
}

std::string model_keys(const models::ModelDefinition& model) {
  std::string processors;
  for (const std::string& name : model.data_processors)
    processors += "`" + name + "` ";
  return model.description + ". Data processors: " + processors + "\n\n" +
         key_table(*model.schema) + compatibility_list(*model.schema);
}

std::string processor_keys(const data::ProcessorDefinition& processor) {
  return processor.description + ".\n\n" + key_table(*processor.schema) +
         compatibility_list(*processor.schema);
}

// What csrun does with a class it accepts but does not run.
std::string class_note(const config::ClassCatalog& catalog, const config::ClassEntry& entry) {
  if (!entry.no_effect_note.empty()) return entry.no_effect_note + ".\n\n";
  if (&catalog == &config::optimizer_catalog() && !nn::simulates_optimizer(entry.name)) {
    return entry.name +
           " is a valid Model Zoo optimizer, but csrun's simulator does not implement it; `csrun "
           "validate` accepts it, training with it is refused.\n\n";
  }
  return {};
}

std::string class_keys(const config::ClassCatalog& catalog, const config::ClassEntry& entry) {
  std::string text = class_note(catalog, entry);
  if (!entry.required.empty()) {
    text += "Required:";
    for (const std::string& key : entry.required)
      text += " `" + key + "`";
    text += ".\n\n";
  }
  return text + key_table(*entry.params) + compatibility_list(*entry.params);
}

const std::vector<const config::ClassCatalog*>& catalogs() {
  static const std::vector<const config::ClassCatalog*> all = {
      &config::optimizer_catalog(), &config::scheduler_catalog(), &config::callback_catalog(),
      &config::logger_catalog()};
  return all;
}

void list_names(std::ostream& out) {
  out << "networks:";
  for (const std::string& name : models::model_names())
    out << " " << name;
  out << "\ndata processors:";
  for (const std::string& name : data::processor_names())
    out << " " << name;
  for (const config::ClassCatalog* catalog : catalogs()) {
    out << "\n" << catalog->kind() << ":";
    for (const std::string& name : catalog->names())
      out << " " << name;
  }
  out << "\n";
}

// A params file must spell model and processor names as the Model Zoo registers them; asking
// about one takes any case, as it does for class names.
std::string as_registered(const std::string& name, std::span<const std::string> registered) {
  if (std::ranges::find(registered, name) != registered.end()) return name;
  for (const std::string& known : registered)
    if (config::lowercase(known) == config::lowercase(name)) return known;
  return name;
}

}  // namespace

int keys(const KeysCommand& command) {
  if (command.name.empty()) {
    list_names(std::cout);
    return 0;
  }
  std::vector<std::string> names = models::model_names();
  for (const std::string& name : data::processor_names())
    names.push_back(name);
  std::string name = as_registered(command.name, names);
  if (const models::ModelDefinition* model = models::find_model(name)) {
    std::cout << model_keys(*model);
    return 0;
  }
  if (const data::ProcessorDefinition* processor = data::find_processor(name)) {
    std::cout << processor_keys(*processor);
    return 0;
  }
  for (const config::ClassCatalog* catalog : catalogs()) {
    if (const config::ClassEntry* entry = catalog->find(name)) {
      std::cout << class_keys(*catalog, *entry);
      return 0;
    }
  }
  for (const config::ClassCatalog* catalog : catalogs()) {
    for (const std::string& class_name : catalog->names())
      names.push_back(class_name);
  }
  auto suggestion = config::closest_match(command.name, names);
  std::cerr << "csrun config keys: nothing is named '" << command.name << "'"
            << (suggestion ? "; did you mean '" + *suggestion + "'?" : std::string())
            << " (`csrun config keys` lists every name)\n";
  return 1;
}

}  // namespace csrun::modes
