#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "program.hpp"

namespace csrun::compiler {

struct Pass {
  std::string name;     // what --dump_ir names it by
  std::string summary;  // one line for help and docs
  std::function<std::size_t(Program&)> run;
};

struct PassStatistics {
  std::string name;
  std::size_t changes = 0;
  std::size_t nodes_after = 0;
  std::size_t fusions_after = 0;
  double seconds = 0.0;
};

// Runs passes in order over a program, timing each, and shows the program after each pass to an
// observer (the CLI's --dump_ir prints the ones asked for).
class PassManager {
 public:
  using Observer = std::function<void(std::string_view pass, const Program& program)>;

  void add(Pass pass) { passes_.push_back(std::move(pass)); }
  const std::vector<Pass>& passes() const { return passes_; }

  std::vector<PassStatistics> run(Program& program, const Observer& after_pass = {}) const;

  // The same passes but the one named `name`: what a pass changes is measured against them.
  PassManager without(std::string_view name) const;

 private:
  std::vector<Pass> passes_;
};

}  // namespace csrun::compiler
