#include "plan.hpp"

namespace csrun::compiler {

const char* step_kind_name(StepKind kind) {
  return kind == StepKind::train ? "train" : "eval";
}

const char* execution_mode_name(ExecutionMode mode) {
  switch (mode) {
    case ExecutionMode::none:
      return "none";
    case ExecutionMode::pipelined:
      return "pipelined";
    case ExecutionMode::weight_streaming:
      return "weight_streaming";
  }
  return "?";
}

}  // namespace csrun::compiler
