#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <limits>

#include "compiler/compile.hpp"
#include "compiler/plan_cache.hpp"
#include "compiler/plan_format.hpp"
#include "graph/autodiff.hpp"
#include "nn/convolution.hpp"
#include "support/step_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace csrun;

namespace {

compiler::Plan sample_plan() {
  models::TracedStep step = test::traced_step(
      "{name: gpt2, vocab_size: 50, hidden_size: 16, num_heads: 2, num_hidden_layers: 1, "
      "filter_size: 32, max_position_embeddings: 8, dropout_rate: 0.1}",
      2);
  compiler::PrecisionPolicy precision{true, graph::DType::cb16, 1};
  compiler::Plan plan = compiler::build_plan(
      compiler::compile_step(std::move(step.graph), {precision, {}}),
      {"9.9.9", "0123456789abcdef", compiler::StepKind::train, 2, 8}, precision);
  plan.mapping.wafer = "wse2";
  plan.mapping.mode = compiler::ExecutionMode::pipelined;
  plan.mapping.kernels.assign(plan.kernels.size(), {{1, 2, 3, 4}, 1.5e-6, "compute"});
  plan.mapping.layers.push_back(
      {"model.lm_head", 800, 3, 12, 1e-6, 2e-6, 0.0, 0.0, 0.0, 2e-6, "compute"});
  plan.mapping.estimate.samples_per_second = 1234.5;
  plan.mapping.estimate.bottleneck = "kernel 3";
  return plan;
}

std::string expect_decode_error(const std::string& bytes) {
  try {
    compiler::decode_plan(bytes, "plan.bin");
  } catch (const compiler::PlanFormatError& error) {
    return error.what();
  }
  FAIL("the plan decoded");
  return {};
}

}  // namespace

TEST_CASE("a plan reads back identical to what was written") {
  compiler::Plan plan = sample_plan();
  std::string bytes = compiler::encode_plan(plan);
  compiler::Plan read = compiler::decode_plan(bytes, "memory");
  CHECK(read == plan);
  CHECK(read.graph == plan.graph);
  CHECK(read.graph.to_text() == plan.graph.to_text());
  CHECK(compiler::encode_plan(read) == bytes);
  // The weights' 16-bit copies of a mixed-precision training step come back as copies.
  std::size_t copies = 0;
  for (const graph::Variable& variable : read.graph.variables()) {
    if (variable.role != graph::VariableRole::half_copy) continue;
    ++copies;
    CHECK(variable.name == variable.copy_of + "@cb16");
  }
  CHECK(copies > 0);
  // Source locations and module paths survive: a loaded plan still names model lines.
  const graph::Node& node = read.graph.node(read.kernels.back().nodes.back());
  CHECK_FALSE(node.location.file().empty());
}

TEST_CASE("a plan whose products form or sum onto a convolution's windows reads back identical") {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{2, 3, 10, 12}, graph::DType::f32}));
  graph::Tensor w(graph, graph.add_variable("w", {{4, 3, 3, 3}, graph::DType::f32},
                                            graph::VariableRole::parameter, {}));
  graph::Tensor y = nn::convolve(x, w, 1, 1);
  graph::Tensor loss = sum(y * y, {0, 1, 2, 3});
  graph.add_output("loss", loss.id());
  graph.set_phase(graph::Phase::backward);
  std::vector<graph::Tensor> grads = gradients(loss, std::vector<graph::Tensor>{w, x});
  graph.add_output("w_grad", grads[0].id());
  graph.add_output("x_grad", grads[1].id());
  graph::Graph half = graph;
  compiler::Plan plan =
      compiler::build_plan(compiler::compile_step(std::move(graph), {}),
                           {"9.9.9", "0123456789abcdef", compiler::StepKind::train, 2, 0}, {});
  auto forming = std::count_if(plan.host_steps.begin(), plan.host_steps.end(),
                               [](const compiler::HostStep& host) { return host.windows >= 0; });
  CHECK(forming == 3);  // the output, the weight's gradient, the input's gradient
  CHECK(plan.scratch.per_core_work(false) > 0);
  std::string bytes = compiler::encode_plan(plan);
  compiler::Plan read = compiler::decode_plan(bytes, "memory");
  CHECK(read == plan);
  CHECK(compiler::encode_plan(read) == bytes);

  compiler::CompileOptions mixed;
  mixed.precision = {true, graph::DType::bf16, 1};
  compiler::Plan bf16 =
      compiler::build_plan(compiler::compile_step(std::move(half), mixed),
                           {"9.9.9", "0123456789abcdef", compiler::StepKind::train, 2, 0}, {});
  auto summing =
      std::count_if(bf16.host_steps.begin(), bf16.host_steps.end(),
                    [](const compiler::HostStep& host) { return host.windows_sum >= 0; });
  CHECK(summing == 1);  // the input's gradient, its 16-bit product summed onto the windows
  CHECK(compiler::decode_plan(compiler::encode_plan(bf16), "memory") == bf16);
}

TEST_CASE("damaged plan files are refused with the reason") {
  std::string bytes = compiler::encode_plan(sample_plan());
  CHECK(expect_decode_error("hello").find("plan.bin: not a csrun plan") != std::string::npos);
  CHECK(expect_decode_error(bytes.substr(0, bytes.size() - 100)).find("truncated") !=
        std::string::npos);
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x20;
  CHECK(expect_decode_error(flipped).find("checksum does not match") != std::string::npos);
  std::string newer = bytes;
  newer[8] = static_cast<char>(compiler::kPlanFormatVersion + 1);
  CHECK(expect_decode_error(newer).find("plan format version " +
                                        std::to_string(compiler::kPlanFormatVersion + 1)) !=
        std::string::npos);
  std::string other_ops = bytes;
  other_ops[12] ^= 0x01;  // the op table's digest follows the version
  CHECK(expect_decode_error(other_ops).find("compiled by a csrun with another set of ops") !=
        std::string::npos);
}

TEST_CASE("a plan whose buffers lie past the arena is refused, however large their numbers") {
  for (std::int64_t huge : {std::int64_t{1} << 62, std::numeric_limits<std::int64_t>::max()}) {
    compiler::Plan plan = sample_plan();
    REQUIRE_FALSE(plan.memory.buffers.empty());
    plan.memory.buffers.front().offset = huge;
    plan.memory.buffers.front().bytes = huge;
    CHECK(expect_decode_error(compiler::encode_plan(plan))
              .find("a buffer lies outside the arena or graph") != std::string::npos);
  }
}

TEST_CASE("a plan whose scratch places a value outside its region or kernel is refused") {
  auto refusal = [](void (*damage)(compiler::Plan&)) {
    compiler::Plan plan = sample_plan();
    REQUIRE_FALSE(plan.scratch.kernel_values.empty());
    damage(plan);
    return expect_decode_error(compiler::encode_plan(plan));
  };
  std::string outside = "a value of the scratch lies outside its kernel or the kernels' part";
  CHECK_THAT(refusal([](compiler::Plan& plan) {
               plan.scratch.kernel_values.front().offset = std::numeric_limits<std::int64_t>::max();
             }),
             Catch::Contains(outside));
  CHECK_THAT(refusal([](compiler::Plan& plan) { plan.scratch.kernel_value_bytes = 0; }),
             Catch::Contains(outside));
  CHECK_THAT(refusal([](compiler::Plan& plan) {
               compiler::ScratchLayout::Place& place = plan.scratch.kernel_values.front();
               place.kernel = place.kernel == 0 ? 1 : 0;
             }),
             Catch::Contains(outside));
  CHECK_THAT(refusal([](compiler::Plan& plan) { plan.scratch.kernel_values.front().kernel = -1; }),
             Catch::Contains(outside));
  CHECK_THAT(refusal([](compiler::Plan& plan) {
               plan.scratch.snapshots.push_back(
                   {plan.scratch.kernel_values.front().node, plan.scratch.kernel_value_bytes, -1});
             }),
             Catch::Contains("a snapshot lies outside the scratch region"));
  for (void (*damage)(compiler::Plan&) :
       {+[](compiler::Plan& plan) { plan.scratch.snapshot_bytes = -1; },
        +[](compiler::Plan& plan) {
          plan.scratch.works.push_back({std::numeric_limits<std::int64_t>::max(), 0});
        },
        +[](compiler::Plan& plan) {
          plan.scratch.hardware_bf16_works.push_back({0, std::int64_t{1} << 62});
        }})
    CHECK_THAT(refusal(damage), Catch::Contains("the scratch layout has an impossible size"));
}

TEST_CASE("a plan reloaded from the compile cache is identical, other settings miss") {
  test::TempDir dir;
  compiler::PlanCache cache(dir.path() / "compile");
  compiler::Plan plan = sample_plan();
  std::string key = compiler::PlanCache::key(plan.fingerprint, "wafer wse2; mode auto");
  CHECK(key.rfind(plan.fingerprint + "-", 0) == 0);
  CHECK(key != compiler::PlanCache::key(plan.fingerprint, "wafer wse3; mode auto"));
  std::string problem;
  CHECK_FALSE(cache.load(key, problem));
  CHECK(problem.empty());
  std::filesystem::path path = cache.store(key, plan);
  CHECK(path == dir.path() / "compile" / key / "plan.bin");
  std::optional<compiler::Plan> loaded = cache.load(key, problem);
  REQUIRE(loaded);
  CHECK(*loaded == plan);
  // A damaged cache entry is no plan, with the reason, not a crash.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "garbage";
  CHECK_FALSE(cache.load(key, problem));
  CHECK(problem.find("not a csrun plan") != std::string::npos);
}
