#include "pass_manager.hpp"

#include <chrono>

namespace csrun::compiler {

std::vector<PassStatistics> PassManager::run(Program& program, const Observer& after_pass) const {
  std::vector<PassStatistics> statistics;
  for (const Pass& pass : passes_) {
    auto start = std::chrono::steady_clock::now();
    std::size_t changes = pass.run(program);
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    statistics.push_back(
        {pass.name, changes, program.graph.size(), program.fusions.size(), elapsed.count()});
    if (after_pass) after_pass(pass.name, program);
  }
  return statistics;
}

PassManager PassManager::without(std::string_view name) const {
  PassManager rest;
  for (const Pass& pass : passes_) {
    if (pass.name != name) rest.add(pass);
  }
  return rest;
}

}  // namespace csrun::compiler
