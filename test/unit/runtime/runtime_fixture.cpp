#include "runtime_fixture.hpp"

#include "compiler/compile.hpp"

namespace csrun::test {

namespace {

compiler::Plan plan_with(const graph::Graph& traced, std::int64_t batch_size,
                         const compiler::PrecisionPolicy& precision) {
  compiler::CompiledStep compiled = compiler::compile_step(traced, {precision, {}});
  compiler::StepInfo info{"test", "fingerprint", compiler::StepKind::train, batch_size, 0};
  return compiler::build_plan(std::move(compiled), info, precision);
}

}  // namespace

compiler::Plan compiled_plan(const graph::Graph& traced, std::int64_t batch_size) {
  return plan_with(traced, batch_size, compiler::PrecisionPolicy{});
}

compiler::Plan compiled_plan(const graph::Graph& traced, std::int64_t batch_size, graph::DType half,
                             int level) {
  return plan_with(traced, batch_size, compiler::PrecisionPolicy{true, half, level});
}

void feed(runtime::Executable& executable, const graph::Feeds& feeds) {
  for (const auto& [name, value] : feeds) {
    const graph::Variable* variable = executable.plan().graph.find_variable(name);
    if (variable != nullptr && variable->role == graph::VariableRole::half_copy) continue;
    executable.write(executable.slot(name), std::span<const double>(value.values));
  }
}

}  // namespace csrun::test
