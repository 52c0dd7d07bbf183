#pragma once

#include <optional>
#include <vector>

#include "compile_driver.hpp"
#include "modes.hpp"
#include "validation_stage.hpp"

namespace csrun::modes {

// The plan of every trainer: from the compile cache, or finished now, stored in the cache with
// its report.json, kernels.tsv and placement.svg. Nothing when a trainer has no plan (a network
// csrun cannot build, a run the wafer cannot do): the reason is reported (stderr; stdout as JSON
// with --json).
std::optional<std::vector<PlannedTrainer>> plan_stage(CheckedRun& checked,
                                                      const RunOptions& options,
                                                      const char* command);

}  // namespace csrun::modes
