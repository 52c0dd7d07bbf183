#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan.hpp"

namespace csrun::wafer {

// The layer a module path belongs to: up to its first index (model.transformer_decoder.layers.3
// for model.transformer_decoder.layers.3.self_attn.proj_q_dense_layer), else its first two
// names (model.lm_head), or "(top level)".
std::string layer_name(std::string_view scope);

// The plan's kernels grouped into layers, in the order the forward pass reaches them; layers
// only the update touches (the optimizer) come last.
struct LayerMap {
  std::vector<std::string> names;
  std::int32_t forward_layers = 0;            // the first names: the layers the forward pass runs
  std::vector<std::int32_t> layer_of_kernel;  // per plan kernel
  std::vector<std::int64_t> parameters;       // per layer: elements of the parameters it owns
  // Per layer: parameter elements its forward and backward kernels read, each once (a tied
  // embedding counts in both layers that use it; a gather counts only the rows it can fetch).
  std::vector<std::int64_t> streamed;
};

LayerMap map_layers(const compiler::Plan& plan);

}  // namespace csrun::wafer
