#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/diagnostics.hpp"
#include "config/run_spec.hpp"
#include "config/schema.hpp"
#include "model_build.hpp"
#include "model_params.hpp"

namespace csrun::models {

// One network of the Model Zoo workflow: its params schema, the data processors that feed it,
// the consistency rules between its params, and its parameter count.
struct ModelDefinition {
  std::string name;
  std::string description;
  std::vector<std::string> data_processors;
  std::shared_ptr<const config::Schema> schema;
  std::function<void(const ModelParams&, const DataHints&, config::Diagnostics&)> check;
  std::function<std::int64_t(const ModelParams&, const DataHints&)> count_parameters;
  // Networks csrun can trace: the batch they read and the builder of their forward pass and
  // loss. Empty for networks it only checks and sizes.
  std::function<BatchLayout(const ModelParams&, std::int64_t batch_size, const DataHints&)>
      batch_layout;
  std::function<ModelOutputs(ModelBuild&)> build;
};

const std::vector<ModelDefinition>& model_registry();
// Adds a network to the registry, beside the built-in ones, without editing them. Throws
// std::invalid_argument when a network of that name exists.
void register_model(ModelDefinition definition);
const ModelDefinition* find_model(std::string_view name);
std::vector<std::string> model_names();

struct CheckedModel {
  const ModelDefinition* definition = nullptr;
  bool name_inferred = false;
  ModelParams params;
  DataHints hints;
  std::int64_t parameter_count = 0;

  // The ids its labels and tokens range over, [0, id_limit()): the vocabulary, else the classes.
  std::int64_t id_limit() const;
};

// Checks a trainer's model section against the registry: the name (inferred for legacy files
// that leave it implicit), every key, the consistency rules, and sizes it.
std::optional<CheckedModel> check_model(const config::TrainerSpec& trainer,
                                        config::Diagnostics& diagnostics);

}  // namespace csrun::models
