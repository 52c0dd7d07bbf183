#include <iostream>

#include "modes.hpp"
#include "report.hpp"
#include "validation_stage.hpp"

namespace csrun::modes {

int validate(const RunOptions& options) {
  std::optional<CheckedRun> checked = validation_stage(options, "validate");
  if (!checked) return 1;
  if (options.json) {
    std::cout << report_json("validate", *checked) << "\n";
    return 0;
  }
  print_summary(*checked, std::cout);
  std::cout << "Config validation was successful!\n";
  return 0;
}

}  // namespace csrun::modes
