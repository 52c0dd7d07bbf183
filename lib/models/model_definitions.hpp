#pragma once

// The definitions the registry lists, one per network. Internal to lib/models.

#include <string>

#include "registry.hpp"

namespace csrun::models {

ModelDefinition fc_mnist_definition();
ModelDefinition gpt2_definition();
ModelDefinition gpt3_definition();
ModelDefinition gptj_definition();
ModelDefinition llama_definition();
ModelDefinition bert_definition();
ModelDefinition roberta_definition();
ModelDefinition linformer_definition();
ModelDefinition t5_definition();
ModelDefinition transformer_definition();
ModelDefinition unet_definition();

// Reports a finding at a model key (its value's position, or the model section's).
void report_at(const ModelParams& params, const std::string& key, const std::string& message,
               config::Diagnostics& diagnostics);
void warn_at(const ModelParams& params, const std::string& key, const std::string& message,
             config::Diagnostics& diagnostics);

// Rules every attention-based network shares.
bool check_heads_divide_hidden(const ModelParams& params, config::Diagnostics& diagnostics);
void check_sequence_fits_positions(const ModelParams& params, const DataHints& hints,
                                   config::Diagnostics& diagnostics);

}  // namespace csrun::models
