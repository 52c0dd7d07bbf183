#include "model_definitions.hpp"

namespace csrun::models {

std::string position_embedding_of(const ModelParams& params) {
  return params.node().text_or("position_embedding_type", "");
}

bool check_heads_divide_hidden(const ModelParams& params, config::Diagnostics& diagnostics) {
  std::int64_t hidden = params.integer("hidden_size");
  std::int64_t heads = params.integer("num_heads");
  if (hidden % heads == 0) return true;
  report_at(params, "num_heads",
            "hidden_size " + std::to_string(hidden) + " must be divisible by num_heads " +
                std::to_string(heads) + " (each head gets hidden_size / num_heads features)",
            diagnostics);
  return false;
}

void check_sequence_fits_positions(const ModelParams& params, const DataHints& hints,
                                   config::Diagnostics& diagnostics) {
  std::int64_t positions = params.integer("max_position_embeddings");
  if (!hints.max_sequence_length || *hints.max_sequence_length <= positions) return;
  report_at(params, "max_position_embeddings",
            "the data's max_sequence_length " + std::to_string(*hints.max_sequence_length) +
                " exceeds max_position_embeddings " + std::to_string(positions),
            diagnostics);
}

}  // namespace csrun::models
