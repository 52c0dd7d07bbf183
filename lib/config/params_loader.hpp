#pragma once

#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "overrides.hpp"
#include "run_spec.hpp"

namespace csrun::config {

struct LoadOptions {
  std::vector<SetOverride> set_overrides;              // --set KEY=VALUE, applied first
  std::vector<RunconfigOverride> runconfig_overrides;  // explicit CLI flags, applied last
};

// Reads a params file in either Model Zoo format (legacy sections, or `trainer:` with one
// trainer or a list of them), applies the overrides, normalizes legacy params with the Model
// Zoo's legacy-to-trainer mapping and returns one typed description per trainer. Every
// problem found goes into `diagnostics`; the caller decides when to stop.
RunSpec load_params(const std::string& path, const LoadOptions& options, Diagnostics& diagnostics);

}  // namespace csrun::config
