#pragma once

#include <string>
#include <vector>

#include "config/diagnostics.hpp"
#include "config/node.hpp"

namespace csrun::runner {

// model_dir must be a directory csrun can write to, or a path it can create. Nothing is
// created here: validation has no side effects.
void check_model_dir(const std::string& path, const config::SourceMark& mark,
                     const std::string& key_path, config::Diagnostics& diagnostics);

// A checkpoint named by the user must be a readable file.
void check_checkpoint_file(const std::string& path, const config::SourceMark& mark,
                           const std::string& key_path, config::Diagnostics& diagnostics);

// Expands checkpoint paths that may be glob patterns (validate_all.ckpt_paths); a pattern
// that matches nothing is reported.
std::vector<std::string> expand_checkpoint_patterns(const std::vector<config::Node>& patterns,
                                                    config::Diagnostics& diagnostics);

}  // namespace csrun::runner
