#include "plan_stage.hpp"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "compile_report.hpp"
#include "report.hpp"
#include "storage/atomic_file.hpp"
#include "wafer/placement_svg.hpp"

namespace csrun::modes {

namespace {

// A plan from the cache keeps the files written beside it, unless they were removed since.
bool artifacts_written(const PlannedTrainer& planned) {
  std::error_code error;
  bool wafer = planned.plan.mapping.mode != compiler::ExecutionMode::none;
  return planned.from_cache && std::filesystem::exists(planned.directory / "report.json", error) &&
         (!wafer || std::filesystem::exists(planned.directory / "placement.svg", error));
}

// report.json and, for wafer plans, placement.svg beside a new plan (plan_trainer wrote its
// kernels.tsv), and beside the plan its wafer mapping is of (--recompute_layers) when that is new.
void write_artifacts(const config::TrainerSpec& trainer, const TraceSummary& trace,
                     const PlannedTrainer& planned) {
  const PlannedTrainer* wafer = planned.wafer_plan.get();
  if (wafer != nullptr && !artifacts_written(*wafer)) write_artifacts(trainer, trace, *wafer);
  if (artifacts_written(planned)) return;
  storage::write_file_atomically(planned.directory / "report.json",
                                 compile_report_json(trainer, trace, planned).dump(2) + "\n");
  if (planned.plan.mapping.mode != compiler::ExecutionMode::none)
    storage::write_file_atomically(planned.directory / "placement.svg",
                                   wafer::placement_svg(wafer ? wafer->plan : planned.plan));
}

int report_failure(const CheckedRun& checked, const RunOptions& options, const char* command,
                   const std::string& message) {
  std::cerr << "csrun " << command << ": " << options.params_path << ": " << message << "\n";
  if (options.json) {
    nlohmann::json result = nlohmann::json::parse(report_json(command, checked));
    result["ok"] = false;
    result["error"] = message;
    std::cout << result.dump(2) << "\n";
  }
  return 1;
}

}  // namespace

std::optional<std::vector<PlannedTrainer>> plan_stage(CheckedRun& checked,
                                                      const RunOptions& options,
                                                      const char* command) {
  std::vector<PlannedTrainer> planned;
  for (std::size_t i = 0; i < checked.trainers.size(); ++i) {
    const config::TrainerSpec& trainer = checked.run.trainers[i];
    CheckedTrainer& candidate = checked.trainers[i];
    std::string which = "trainer " + std::to_string(i + 1) + ": ";
    if (!candidate.trace || !candidate.compiled) {
      std::string reason =
          candidate.untraced_reason.empty() ? "the step was not traced" : candidate.untraced_reason;
      report_failure(checked, options, command,
                     which + reason + ", so there is no step to compile");
      return std::nullopt;
    }
    try {
      planned.push_back(
          plan_trainer(trainer, *candidate.trace, std::move(*candidate.compiled), options));
      write_artifacts(trainer, *candidate.trace, planned.back());
    } catch (const std::exception& error) {
      report_failure(checked, options, command, which + error.what());
      return std::nullopt;
    }
  }
  return planned;
}

}  // namespace csrun::modes
