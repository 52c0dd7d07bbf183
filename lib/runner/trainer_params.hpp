#pragma once

#include <string>

#include "config/node.hpp"

namespace csrun::runner {

// A params tree as block YAML (strings double-quoted), for model_dir's trainer_params.yaml: the
// trainer as csrun read it, defaults and command-line overrides applied.
std::string to_yaml(const config::Node& node);

}  // namespace csrun::runner
