#pragma once

// Readers of the sections of trainer.init, each applying the Model Zoo's rules for it.
// Internal to lib/config: the public entry point is params_loader.hpp.

#include <optional>
#include <vector>

#include "class_catalog.hpp"
#include "diagnostics.hpp"
#include "node.hpp"
#include "run_spec.hpp"

namespace csrun::config {

BackendSpec read_backend(const Node& init, Diagnostics& diagnostics);
PrecisionSpec read_precision(const Node* precision, Device device, Diagnostics& diagnostics);
LoopSpec read_loop(const Node* loop, Device device, Diagnostics& diagnostics);
CheckpointSpec read_checkpoint(const Node* checkpoint, Diagnostics& diagnostics);
LoggingSpec read_logging(const Node* logging, Diagnostics& diagnostics);
std::optional<ClassSpec> read_optimizer(const Node& optimizer, Diagnostics& diagnostics);
std::vector<ClassSpec> read_schedulers(const Node& schedulers, Diagnostics& diagnostics);

// Warns of a OneCycleLR whose cycle ends before the loop's max_steps or num_steps: the Model
// Zoo's closed form, which csrun computes, goes on past it (PyTorch's stops with an error).
void check_cycle_length(const std::vector<ClassSpec>& schedulers, const LoopSpec& loop,
                        Diagnostics& diagnostics);
std::vector<ClassSpec> read_class_list(const Node& list, const ClassCatalog& catalog,
                                       Diagnostics& diagnostics);

// Reads an optional section: null when absent or null, the checked mapping otherwise.
std::optional<Node> checked_section(const Node* section, const Schema& schema,
                                    Diagnostics& diagnostics);

}  // namespace csrun::config
