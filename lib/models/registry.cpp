#include "registry.hpp"

#include <algorithm>
#include <stdexcept>

#include "config/spelling.hpp"
#include "model_definitions.hpp"

namespace csrun::models {

namespace {

using config::Diagnostics;
using config::Node;

// The dataloader of a validate or validate_all section.
const Node* validation_dataloader(const config::TrainerSpec& trainer) {
  if (trainer.validate && trainer.validate->val_dataloader.is_map()) {
    return &trainer.validate->val_dataloader;
  }
  if (trainer.validate_all && !trainer.validate_all->val_dataloaders.empty()) {
    return &trainer.validate_all->val_dataloaders.front();
  }
  return nullptr;
}

const Node* first_dataloader(const config::TrainerSpec& trainer) {
  if (trainer.fit && trainer.fit->train_dataloader.is_map()) return &trainer.fit->train_dataloader;
  return validation_dataloader(trainer);
}

const Node* first_eval_dataloader(const config::TrainerSpec& trainer) {
  if (trainer.fit && !trainer.fit->val_dataloaders.empty() &&
      trainer.fit->val_dataloaders.front().is_map()) {
    return &trainer.fit->val_dataloaders.front();
  }
  return validation_dataloader(trainer);
}

std::string processor_of(const config::TrainerSpec& trainer) {
  const Node* loader = first_dataloader(trainer);
  const Node* processor = loader ? loader->find("data_processor") : nullptr;
  return processor && processor->is_string() ? processor->as_string() : std::string();
}

// Model Zoo 1.6's get_bits_per_x_dataset and _get_bpb_constant: the eval data's (else the
// training data's) data_dir names the dataset, the Pile (0.29335 tokens per byte) or
// OpenWebText2 (0.2434); any other counts 1.
double tensorflow_tokens_per_byte(const config::TrainerSpec& trainer) {
  const Node* loader = first_eval_dataloader(trainer);
  if (!loader) loader = first_dataloader(trainer);
  const Node* dir = loader ? loader->find("data_dir") : nullptr;
  std::string path = dir && dir->is_string() ? dir->as_string() : std::string();
  if (path.find("pile") != std::string::npos) return 0.29335;
  if (path.find("owt") != std::string::npos) return 0.2434;
  return 1.0;
}

DataHints read_hints(const config::TrainerSpec& trainer) {
  DataHints hints;
  const Node* loader = first_dataloader(trainer);
  if (!loader) return hints;
  if (const Node* msl = loader->find("max_sequence_length"); msl && msl->is_int()) {
    hints.max_sequence_length = msl->as_int();
  }
  if (const Node* source = loader->find("src_max_sequence_length"); source && source->is_int())
    hints.max_sequence_length = source->as_int();
  if (const Node* target = loader->find("tgt_max_sequence_length"); target && target->is_int())
    hints.target_sequence_length = target->as_int();
  if (const Node* shape = loader->find("image_shape"); shape && shape->is_list()) {
    for (const Node& dim : shape->items()) {
      if (dim.is_int()) hints.image_shape.push_back(dim.as_int());
    }
  }
  if (const Node* classes = loader->find("num_classes"); classes && classes->is_int()) {
    hints.num_classes = classes->as_int();
  }
  if (const Node* predictions = loader->find("max_predictions_per_seq");
      predictions && predictions->is_int()) {
    hints.max_predictions = predictions->as_int();
  }
  if (const Node* sentences = loader->find("max_cls_tokens"); sentences && sentences->is_int())
    hints.max_cls_tokens = sentences->as_int();
  // The static-mask processor's files hold the masks; its dynamic_mlm_scale has no effect there.
  hints.dynamic_mlm_scale = processor_of(trainer) != "BertCSVDataProcessor" &&
                            loader->flag_or("dynamic_mlm_scale", false);
  hints.dynamic_loss_weight = loader->flag_or("dynamic_loss_weight", false);
  const Node* eval = first_eval_dataloader(trainer);
  hints.eval_dynamic_loss_weight = eval && eval->flag_or("dynamic_loss_weight", false);
  if (trainer.tensorflow_layout) hints.tokens_per_byte = tensorflow_tokens_per_byte(trainer);
  return hints;
}

bool schema_knows_all(const ModelDefinition& model, const Node& params) {
  return std::all_of(params.entries().begin(), params.entries().end(),
                     [&](const Node::Entry& entry) { return model.schema->find(entry.key); });
}

bool reads_processor(const ModelDefinition& model, const std::string& processor) {
  return std::find(model.data_processors.begin(), model.data_processors.end(), processor) !=
         model.data_processors.end();
}

// Legacy params leave the model implicit (it was the directory run.py lived in): take the
// first registered model that reads the configured data processor and knows every key. A
// processor no model reads (one csrun does not know) leaves the keys to decide.
const ModelDefinition* infer_model(const config::TrainerSpec& trainer, Diagnostics& diagnostics) {
  std::string processor = processor_of(trainer);
  bool known =
      std::any_of(model_registry().begin(), model_registry().end(),
                  [&](const ModelDefinition& model) { return reads_processor(model, processor); });
  std::string evidence =
      known ? "data_processor " + processor + " and the model keys" : std::string("the model keys");
  for (const ModelDefinition& model : model_registry()) {
    bool reads = !known || reads_processor(model, processor);
    if (!reads || !schema_knows_all(model, trainer.model.params)) continue;
    diagnostics.warning(trainer.model.mark, trainer.model.path,
                        "model.name is not set (legacy params left the model to the directory "
                        "of run.py); csrun inferred '" +
                            model.name + "' from " + evidence +
                            ". Set model.name to choose explicitly");
    return &model;
  }
  std::vector<std::string> names = model_names();
  diagnostics.error(trainer.model.mark, trainer.model.path,
                    "model.name is not set and no registered model matches " +
                        (known ? "data_processor " + processor + " with these keys"
                               : std::string("these model keys")) +
                        "; add `name:` to the model section (one of " + config::quoted_list(names) +
                        ")");
  return nullptr;
}

const ModelDefinition* resolve_model(const config::TrainerSpec& trainer, Diagnostics& diagnostics) {
  // Only legacy params may leave the name out; the trainer format's omission is already an error,
  // and so is a name that is no string (nothing is inferred in its place).
  if (trainer.model.name.empty()) {
    bool implicit = trainer.format == config::ParamsFormat::legacy && !trainer.model.name_written;
    return implicit ? infer_model(trainer, diagnostics) : nullptr;
  }
  if (const ModelDefinition* model = find_model(trainer.model.name)) return model;
  std::vector<std::string> names = model_names();
  auto suggestion = config::closest_match(trainer.model.name, names);
  diagnostics.error(trainer.model.mark, config::join_path(trainer.model.path, "name"),
                    "unknown model '" + trainer.model.name + "'" +
                        (suggestion ? "; did you mean '" + *suggestion + "'?" : std::string()) +
                        " Known models: " + config::quoted_list(names, "and"));
  return nullptr;
}

}  // namespace

namespace {

std::vector<ModelDefinition>& registry() {
  static std::vector<ModelDefinition> definitions = {
      fc_mnist_definition(),
      gpt2_definition(),
      gpt3_definition(),
      gptj_definition(),
      llama_definition(),
      bert_definition(),
      bert_classifier_definition(),
      bert_token_classifier_definition(),
      bert_summarization_definition(),
      roberta_definition(),
      linformer_definition(),
      t5_definition(),
      transformer_definition(),
      unet_definition(),
  };
  return definitions;
}

}  // namespace

const std::vector<ModelDefinition>& model_registry() {
  return registry();
}

void register_model(ModelDefinition definition) {
  if (find_model(definition.name) != nullptr)
    throw std::invalid_argument("a model named '" + definition.name + "' is registered already");
  registry().push_back(std::move(definition));
}

const ModelDefinition* find_model(std::string_view name) {
  for (const ModelDefinition& model : model_registry()) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelDefinition& model : model_registry())
    names.push_back(model.name);
  return names;
}

std::int64_t CheckedModel::id_limit() const {
  if (params.has("vocab_size")) return params.integer("vocab_size");
  return hints.num_classes.value_or(10);
}

std::optional<CheckedModel> check_model(const config::TrainerSpec& trainer,
                                        Diagnostics& diagnostics) {
  if (!trainer.model.params.is_map()) return std::nullopt;
  const ModelDefinition* definition = resolve_model(trainer, diagnostics);
  if (!definition) return std::nullopt;
  CheckedModel checked;
  checked.definition = definition;
  checked.name_inferred = trainer.model.name.empty();
  checked.hints = read_hints(trainer);
  Diagnostics findings;
  checked.params = ModelParams(definition->schema->check(trainer.model.params, findings));
  bool params_valid = !findings.has_errors();
  diagnostics.append(findings);
  if (!params_valid) return checked;
  definition->check(checked.params, checked.hints, findings);
  diagnostics.append(findings);
  if (!findings.has_errors()) {
    checked.parameter_count = definition->count_parameters(checked.params, checked.hints);
  }
  return checked;
}

}  // namespace csrun::models
