// The runtime's exp, erf, exact gelu and sigmoid (runtime/transcendental.hpp) on floats of every
// exponent, both signs and the special values: within a few units in the last place of the
// functions computed in double precision in every kernel set this CPU runs, and the same bits from
// each set with FMA, interpreted (a chain program of the one instruction, as a chain in registers
// runs it) and compiled to AVX-512 and AVX2 code.

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/compiled_chain.hpp"
#include "runtime/host_kernels.hpp"
#include "runtime/kernel_set.hpp"

using namespace csrun;
using runtime::ChainCode;
using runtime::ChainIsa;

namespace {

// Every 4099th float32 bit pattern (about a million: every exponent, both signs, NaNs), and the
// values where the functions change course.
std::vector<float> spread_floats() {
  std::vector<float> values;
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099)
    values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (float edge : {0.0f,
                     -0.0f,
                     kInf,
                     -kInf,
                     std::numeric_limits<float>::quiet_NaN(),
                     std::numeric_limits<float>::denorm_min(),
                     std::numeric_limits<float>::min(),
                     std::numeric_limits<float>::max(),
                     88.7228f,
                     88.72284f,
                     88.7229f,
                     -87.3365f,
                     -103.28f,
                     -103.98f,
                     -104.0f,
                     -105.0f,
                     89.0f,
                     4.0f,
                     -4.0f,
                     3.9999998f,
                     1e-20f}) {
    values.push_back(edge);
    values.push_back(-edge);
  }
  return values;
}

// `code` over `values` by the chain program of one instruction: r1 = code(r0), r0 read in place.
runtime::ChainProgram one_instruction(ChainCode code, const std::vector<float>& values,
                                      std::vector<float>& out) {
  runtime::ChainProgram program;
  program.registers = 2;
  program.direct = {values.data(), nullptr};
  program.instructions.push_back({code, graph::DType::f32, 1, 0, 0, 0});
  program.stores.push_back({1, reinterpret_cast<std::byte*>(out.data()), graph::DType::f32});
  return program;
}

std::vector<float> interpreted(const runtime::KernelSet& set, ChainCode code,
                               const std::vector<float>& values) {
  std::vector<float> out(values.size());
  runtime::ChainProgram program = one_instruction(code, values, out);
  std::vector<float> registers(static_cast<std::size_t>(program.registers) * runtime::kChainLanes);
  set.run_chain_program(program, registers.data(), 0, std::ssize(values), nullptr);
  return out;
}

// Compiled to `isa`'s code, the last elements short of a vector interpreted as the runtime does.
std::vector<float> compiled(const runtime::KernelSet& set, ChainIsa isa, ChainCode code,
                            const std::vector<float>& values) {
  std::vector<float> out(values.size());
  runtime::ChainProgram program = one_instruction(code, values, out);
  auto count = std::ssize(values);
  std::optional<runtime::CompiledChain> chain =
      runtime::CompiledChain::compile(program, count, runtime::kChainLanes, isa);
  REQUIRE(chain.has_value());
  std::int64_t stopped = chain->run(0, count, nullptr);
  std::vector<float> registers(static_cast<std::size_t>(program.registers) * runtime::kChainLanes);
  if (stopped < count) set.run_chain_program(program, registers.data(), stopped, count, nullptr);
  return out;
}

double reference(ChainCode code, double x) {
  switch (code) {
    case ChainCode::exp:
      return std::exp(x);
    case ChainCode::erf:
      return std::erf(x);
    case ChainCode::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    default:
      return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  }
}

// Floats in order as integers, so that the difference of two is the units in the last place
// between them.
std::int64_t ordered(float value) {
  auto bits = static_cast<std::int64_t>(std::bit_cast<std::int32_t>(value));
  return bits < 0 ? std::numeric_limits<std::int32_t>::min() - bits : bits;
}

// The first element whose bits differ; NaN agrees with NaN (their payloads depend on the order
// of a product's operands, which IEEE leaves open).
std::string first_difference(const std::vector<float>& values, const std::vector<float>& expected,
                             const std::vector<float>& actual) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(expected[i]) == std::bit_cast<std::uint32_t>(actual[i]) ||
        (std::isnan(expected[i]) && std::isnan(actual[i])))
      continue;
    return "x = " + std::to_string(values[i]) + " (bits " +
           std::to_string(std::bit_cast<std::uint32_t>(values[i])) +
           "): " + std::to_string(expected[i]) + " against " + std::to_string(actual[i]);
  }
  return {};
}

struct Function {
  ChainCode code;
  const char* name;
  // The most units in the last place from the rounded double result (for gelu, those of x / 2),
  // for a normal x and for a subnormal one.
  std::int64_t ulps;
  std::int64_t subnormal_ulps;
};

constexpr Function kFunctions[] = {{ChainCode::exp, "exp", 2, 0},
                                   {ChainCode::erf, "erf", 8, 1},
                                   {ChainCode::gelu, "gelu", 8, 1},
                                   {ChainCode::sigmoid, "sigmoid", 4, 0}};

// gelu's 1 + erf cancels for negative x, where gelu is far below x: its error is measured in
// units of x / 2's last place, the scale of both of its factors' errors.
std::int64_t error_ulps(ChainCode code, float x, float actual, float expected) {
  if (actual == expected) return 0;
  if (code != ChainCode::gelu || !std::isfinite(actual) || !std::isfinite(expected))
    return std::abs(ordered(actual) - ordered(expected));
  float half = std::fabs(0.5f * x);
  float unit = std::nextafter(half, std::numeric_limits<float>::infinity()) - half;
  return static_cast<std::int64_t>(
      std::ceil(std::fabs(static_cast<double>(actual) - expected) / unit));
}

struct Accuracy {
  std::int64_t worst = 0;
  float at = 0.0f;

  void add(float x, std::int64_t ulps) {
    if (ulps <= worst) return;
    worst = ulps;
    at = x;
  }
};

}  // namespace

TEST_CASE("exp, erf, gelu and sigmoid are within a few ulps of the double-precision functions") {
  std::vector<float> values = spread_floats();
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    const runtime::KernelSet& set = runtime::kernel_set(name);
    for (const Function& function : kFunctions) {
      std::vector<float> out = interpreted(set, function.code, values);
      Accuracy normal;
      Accuracy subnormal;
      for (std::size_t i = 0; i < values.size(); ++i) {
        float expected = static_cast<float>(reference(function.code, values[i]));
        if (std::isnan(expected)) {
          INFO(function.name << "(" << values[i] << ") = " << out[i]);
          CHECK(std::isnan(out[i]));
          continue;
        }
        bool tiny = std::fabs(values[i]) < std::numeric_limits<float>::min();
        (tiny ? subnormal : normal)
            .add(values[i], error_ulps(function.code, values[i], out[i], expected));
      }
      INFO("kernel set " << name << ", " << function.name << ": " << normal.worst << " ulps at "
                         << normal.at << "; of a subnormal x " << subnormal.worst << " ulps at "
                         << subnormal.at);
      CHECK(normal.worst <= function.ulps);
      CHECK(subnormal.worst <= function.subnormal_ulps);
    }
  }
}

// The sets with FMA instructions (all but baseline, which rounds each product and sum) against
// the avx2 set.
TEST_CASE(
    "exp, erf, gelu and sigmoid give the same bits in every kernel set with FMA, compiled too") {
  std::vector<std::string_view> sets = runtime::runnable_kernel_sets();
  if (std::find(sets.begin(), sets.end(), "avx2") == sets.end()) {
    SUCCEED("this CPU runs no kernel set with FMA");
    return;
  }
  std::vector<float> values = spread_floats();
  const runtime::KernelSet& first = runtime::kernel_set("avx2");
  for (const Function& function : kFunctions) {
    std::vector<float> expected = interpreted(first, function.code, values);
    for (std::string_view name : sets) {
      if (name == "baseline") continue;
      const runtime::KernelSet& set = runtime::kernel_set(name);
      INFO(function.name << ", kernel set " << name << " against avx2");
      CHECK(first_difference(values, expected, interpreted(set, function.code, values)).empty());
      if (!runtime::chains_compiled_here()) continue;
      INFO("compiled to " << runtime::chain_isa_name(set.compiled_chains) << " code");
      CHECK(first_difference(values, expected,
                             compiled(set, set.compiled_chains, function.code, values))
                .empty());
    }
  }
}
