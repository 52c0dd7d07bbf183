#pragma once

#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "overrides.hpp"
#include "release.hpp"
#include "run_spec.hpp"

namespace csrun::config {

struct LoadOptions {
  std::vector<SetOverride> set_overrides;              // --set KEY=VALUE, applied first
  std::vector<RunconfigOverride> runconfig_overrides;  // explicit CLI flags, applied last
};

// The trainers of a params file in the trainer format, before they are read: legacy params
// converted, Model Zoo release migrations applied, overrides applied.
struct ParamsTrees {
  Node written;  // the file as written, with the --set overrides
  ParamsFormat format = ParamsFormat::trainer;
  bool tensorflow_layout = false;  // Release 1.6's TensorFlow layout, read as the PyTorch one
  ReleaseRange releases;           // the releases the file's keys point to
  std::vector<Node> trainers;
};

// The first half of load_params: what a params file says, in the current trainer format. Every
// finding here is a change the file needs to be read that way (a migration, a translation, a
// key dropped) or an error.
ParamsTrees read_params_trees(const std::string& path, const LoadOptions& options,
                              Diagnostics& diagnostics);

// The second half: each trainer read into its typed description.
RunSpec read_run_spec(const std::string& path, const ParamsTrees& trees, Diagnostics& diagnostics);

// Reads a params file in either Model Zoo format (legacy sections, or `trainer:` with one
// trainer or a list of them), applies the overrides, normalizes legacy params with the Model
// Zoo's legacy-to-trainer mapping and returns one typed description per trainer. Every
// problem found goes into `diagnostics`; the caller decides when to stop.
RunSpec load_params(const std::string& path, const LoadOptions& options, Diagnostics& diagnostics);

}  // namespace csrun::config
