#pragma once

#include <string>

#include "config/diagnostics.hpp"
#include "config/params_loader.hpp"

namespace csrun::modes {

// What every subcommand receives from the command line.
struct RunOptions {
  std::string params_path;
  config::LoadOptions load;
  bool fake_data = false;  // synthetic samples instead of the configured datasets
  bool json = false;       // machine-readable result on stdout
  config::Severity shown = config::Severity::note;  // the least severe finding printed
};

// Each returns the process exit status: 0 on success, 1 on a user-facing error (already
// reported on stderr, and in the JSON result with --json).
int validate(const RunOptions& options);
int compile(const RunOptions& options);
int train(const RunOptions& options);
int eval(const RunOptions& options);

}  // namespace csrun::modes
