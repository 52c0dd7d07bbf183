#pragma once

#include <string>

#include "config/params_loader.hpp"
#include "temp_dir.hpp"

namespace csrun::test {

// Params text loaded as csrun loads a file, with every finding kept.
struct LoadedParams {
  config::RunSpec run;
  config::Diagnostics diagnostics;

  const config::TrainerSpec& trainer(std::size_t index = 0) const { return run.trainers.at(index); }
  bool has(config::Severity severity, const std::string& text) const;
  bool error(const std::string& text) const { return has(config::Severity::error, text); }
  bool warning(const std::string& text) const { return has(config::Severity::warning, text); }
  std::string dump() const;
};

LoadedParams load_params_file(const std::string& path, const config::LoadOptions& options = {});
LoadedParams load_params_text(const std::string& yaml, const config::LoadOptions& options = {});

}  // namespace csrun::test
