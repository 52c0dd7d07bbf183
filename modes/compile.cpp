#include <iostream>

#include "compile_report.hpp"
#include "host_steps.hpp"
#include "modes.hpp"
#include "plan_stage.hpp"
#include "report.hpp"
#include "validation_stage.hpp"

namespace csrun::modes {

int compile(const RunOptions& options) {
  std::optional<CheckedRun> checked = validation_stage(options, "compile");
  if (!checked) return 1;
  std::optional<std::vector<PlannedTrainer>> planned = plan_stage(*checked, options, "compile");
  if (!planned) return 1;
  nlohmann::json reports = nlohmann::json::array();
  bool training = false;
  for (std::size_t i = 0; i < planned->size(); ++i) {
    const config::TrainerSpec& trainer = checked->run.trainers[i];
    const TraceSummary& trace = *checked->trainers[i].trace;
    if (options.json) {
      reports.push_back(compile_report_json(trainer, trace, (*planned)[i]));
    } else {
      std::optional<HostBatch> host;
      if (trace.training)
        host = training_on_host(checked->trainers[i], trainer, (*planned)[i].plan, options).host;
      print_compile_report(trainer, trace, (*planned)[i], host, planned->size(), std::cout);
    }
    training = training || trace.training;
  }
  if (options.json) {
    nlohmann::json result = nlohmann::json::parse(report_json("compile", *checked));
    result["compiled"] = reports;
    std::cout << result.dump(2) << "\n";
    return 0;
  }
  std::cout << (training ? "Compile for training completed successfully!"
                         : "Compile for evaluation completed successfully!")
            << "\n";
  return 0;
}

}  // namespace csrun::modes
