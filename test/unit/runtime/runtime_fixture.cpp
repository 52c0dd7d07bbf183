#include "runtime_fixture.hpp"

#include <sched.h>

#include <bit>

#include <catch2/catch.hpp>

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

std::vector<float> rounding_patterns() {
  const std::uint32_t lower_halves[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x7FFF,
                                        0x8000, 0x8001, 0xEFFF, 0xF000, 0xFFFF};
  std::vector<float> values;
  for (std::uint32_t upper = 0; upper < 0x10000; ++upper) {
    for (std::uint32_t lower : lower_halves)
      values.push_back(std::bit_cast<float>((upper << 16) | lower));
  }
  return values;
}

void on_one_core(const std::function<void()>& body) {
  cpu_set_t all;
  REQUIRE(sched_getaffinity(0, sizeof(all), &all) == 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int core = 0; core < CPU_SETSIZE; ++core) {
    if (!CPU_ISSET(core, &all)) continue;
    CPU_SET(core, &one);
    break;
  }
  REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
  body();
  REQUIRE(sched_setaffinity(0, sizeof(all), &all) == 0);
}

void feed(runtime::Executable& executable, const graph::Feeds& feeds) {
  for (const auto& [name, value] : feeds) {
    const graph::Variable* variable = executable.plan().graph.find_variable(name);
    if (variable != nullptr && variable->role == graph::VariableRole::half_copy) continue;
    executable.write(executable.slot(name), std::span<const double>(value.values));
  }
}

}  // namespace csrun::test
