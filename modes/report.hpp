#pragma once

#include <ostream>
#include <string>

#include "config/diagnostics.hpp"
#include "validation_stage.hpp"

namespace csrun::modes {

// Findings as compiler-style lines ("file:line:col: warning: key: message"), the least
// severe shown being `shown`.
void print_diagnostics(const config::Diagnostics& diagnostics, config::Severity shown,
                       std::ostream& out);

// The per-trainer summary of a checked run: model and size, device, steps, batch, precision.
void print_summary(const CheckedRun& checked, std::ostream& out);

// The same as a JSON document, with the findings and whether the run passed.
std::string report_json(const std::string& command, const CheckedRun& checked);

// 124439808 -> "124,439,808".
std::string grouped(std::int64_t value);

}  // namespace csrun::modes
