#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>

#include "compile_driver.hpp"
#include "config/run_spec.hpp"
#include "host_batch.hpp"
#include "trace_summary.hpp"

namespace csrun::modes {

// What `csrun compile` prints for a trainer: the plan, the passes, kernels and memory, and on the
// wafer the execution mode, SRAM and PE use, the step time and throughput per system and for
// num_csx systems, the bottleneck, the other mode for comparison, and a per-layer table.
// `host` is how csrun train runs a training step on this machine (training_on_host).
void print_compile_report(const config::TrainerSpec& trainer, const TraceSummary& trace,
                          const PlannedTrainer& planned, const std::optional<HostBatch>& host,
                          std::size_t trainers, std::ostream& out);

// The same as JSON: report.json in the plan's directory, and `csrun compile --json`.
nlohmann::json compile_report_json(const config::TrainerSpec& trainer, const TraceSummary& trace,
                                   const PlannedTrainer& planned);

// Every kernel of the plan, one tab-separated line each: kernels.tsv in the plan's directory.
std::string kernel_table(const compiler::Plan& plan);

}  // namespace csrun::modes
