#pragma once

#include <string>

#include "node.hpp"

namespace csrun::config {

// A params tree as block YAML, written by yaml-cpp's emitter (strings double-quoted, numbers
// in their shortest exact form) that read_yaml_text reads back as the same
// tree: model_dir's trainer_params.yaml, and dataloader sections sent to data workers.
std::string to_yaml(const Node& node);

}  // namespace csrun::config
