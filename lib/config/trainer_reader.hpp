#pragma once

#include <cstddef>

#include "diagnostics.hpp"
#include "node.hpp"
#include "run_spec.hpp"

namespace csrun::config {

// Reads one trainer ({init, fit, validate, validate_all}) into its typed description,
// reporting every problem. The model and dataloader sections are checked later by the model
// registry and the data processors; this reader checks everything else.
TrainerSpec read_trainer(const Node& tree, std::size_t index, ParamsFormat format,
                         Diagnostics& diagnostics);

}  // namespace csrun::config
