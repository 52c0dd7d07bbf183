#include <catch2/catch.hpp>

#include "compiler/compile.hpp"
#include "support/step_fixture.hpp"
#include "wafer/layers.hpp"
#include "wafer/mapping_steps.hpp"
#include "wafer/placement_svg.hpp"
#include "wafer/wafer_mapping.hpp"
#include "wafer/wafer_profile.hpp"

using namespace csrun;
using compiler::ExecutionMode;

namespace {

// A small GPT: its attention makes the activations grow with the square of the sequence.
std::string gpt_model(std::int64_t sequence, int hidden = 32) {
  return "{name: gpt2, vocab_size: 64, hidden_size: " + std::to_string(hidden) +
         ", num_heads: 2, num_hidden_layers: 2, filter_size: " + std::to_string(2 * hidden) +
         ", max_position_embeddings: " + std::to_string(sequence) + "}";
}

compiler::Plan plan_for(const std::string& model, std::int64_t batch, bool training = true) {
  models::TracedStep step = test::traced_step(model, batch, training);
  compiler::PrecisionPolicy precision{true, graph::DType::bf16, 1};
  return compiler::build_plan(
      compiler::compile_step(std::move(step.graph), {precision, {}}),
      {"test", "fingerprint", training ? compiler::StepKind::train : compiler::StepKind::eval,
       batch, step.tokens_per_sample},
      precision);
}

// Options of params of the 1.x releases, whose `auto` pipelines what fits.
wafer::WaferOptions release_1x_options() {
  wafer::WaferOptions options;
  options.releases = {config::Release::r1_6, config::Release::r1_9};
  return options;
}

std::int64_t pipelined_demand(const compiler::Plan& plan) {
  return wafer::sram_demand(plan, wafer::map_layers(plan)).pipelined;
}

bool overlaps(const compiler::Region& a, const compiler::Region& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

}  // namespace

TEST_CASE("hardware profiles hold the reference figures") {
  const wafer::WaferProfile& wse2 = wafer::wafer_profile("wse2");
  CHECK(wse2.pes() == 750 * 994);
  CHECK(wse2.peak_flops() == Approx(6.56e15).epsilon(0.01));
  const wafer::WaferProfile& wse3 = wafer::wafer_profile("wse3");
  CHECK(wse3.half_lanes == 2 * wse2.half_lanes);
  CHECK(wafer::wafer_keys() == std::vector<std::string>{"wse2", "wse3"});
  CHECK_THROWS_WITH(wafer::wafer_profile("wse9"),
                    Catch::Contains("unknown wafer 'wse9' (known: wse2, wse3)"));
}

TEST_CASE("layers are module paths up to their index") {
  CHECK(wafer::layer_name("model.transformer_decoder.layers.3.self_attn.proj_q_dense_layer") ==
        "model.transformer_decoder.layers.3");
  CHECK(wafer::layer_name("model.fc_layers.0") == "model.fc_layers.0");
  CHECK(wafer::layer_name("model.lm_head") == "model.lm_head");
  CHECK(wafer::layer_name("model.embedding_layer.word_embeddings") == "model.embedding_layer");
  CHECK(wafer::layer_name("optimizer") == "optimizer");
  CHECK(wafer::layer_name("") == "(top level)");
}

TEST_CASE("auto for 1.x params picks pipelined exactly while everything fits") {
  const wafer::WaferProfile& profile = wafer::wafer_profile("wse2");
  std::int64_t capacity = profile.usable_sram();
  wafer::WaferOptions automatic = release_1x_options();
  CHECK(wafer::choose_mode(capacity, profile, automatic).mode == ExecutionMode::pipelined);
  CHECK(wafer::choose_mode(capacity + 1, profile, automatic).mode ==
        ExecutionMode::weight_streaming);
  // Params that a 2.x release reads: weight streaming, as the Model Zoo runs them.
  for (config::ReleaseRange releases :
       {config::ReleaseRange{config::Release::r2_4, config::Release::r2_10},
        config::ReleaseRange{config::Release::r1_6, config::Release::r2_10},
        config::ReleaseRange{config::Release::r1_9, config::Release::r2_0}}) {
    automatic.releases = releases;
    wafer::ModeChoice choice = wafer::choose_mode(1, profile, automatic);
    CHECK(choice.mode == ExecutionMode::weight_streaming);
    CHECK_THAT(choice.reason, Catch::Contains("params of Model Zoo " + releases.describe()) &&
                                  Catch::Contains("pipelined would fit"));
  }
  wafer::WaferOptions pipelined;
  pipelined.mode = config::ExecutionMode::pipelined;
  CHECK(wafer::choose_mode(capacity, profile, pipelined).mode == ExecutionMode::pipelined);
  CHECK_THROWS_WITH(wafer::choose_mode(capacity + 1'000'000'000, profile, pipelined),
                    Catch::Contains("pipelined execution does not fit") &&
                        Catch::Contains("1.00 GB (3.0%) too much"));
  wafer::WaferOptions cluster;
  cluster.num_csx = 2;
  CHECK(wafer::choose_mode(1, profile, cluster).mode == ExecutionMode::weight_streaming);
  cluster.mode = config::ExecutionMode::pipelined;
  CHECK_THROWS_WITH(wafer::choose_mode(1, profile, cluster),
                    Catch::Contains("runs on one system only; num_csx is 2"));
  wafer::WaferOptions streaming;
  streaming.mode = config::ExecutionMode::weight_streaming;
  CHECK(wafer::choose_mode(1, profile, streaming).mode == ExecutionMode::weight_streaming);
}

TEST_CASE("a real model crosses the fit boundary where its SRAM demand does") {
  // Find the longest sequence whose step fits on the wafer, by bisection.
  std::int64_t capacity = wafer::wafer_profile("wse2").usable_sram();
  std::int64_t fits = 64;
  std::int64_t too_big = 65536;
  REQUIRE(pipelined_demand(plan_for(gpt_model(fits), 8)) <= capacity);
  REQUIRE(pipelined_demand(plan_for(gpt_model(too_big), 8)) > capacity);
  while (too_big - fits > 1) {
    std::int64_t middle = (fits + too_big) / 2;
    (pipelined_demand(plan_for(gpt_model(middle), 8)) <= capacity ? fits : too_big) = middle;
  }
  INFO("longest sequence that fits: " << fits);
  wafer::WaferOptions automatic = release_1x_options();
  CHECK(wafer::map_to_wafer(plan_for(gpt_model(fits), 8), automatic).mode ==
        ExecutionMode::pipelined);
  compiler::Plan over = plan_for(gpt_model(too_big), 8);
  CHECK(wafer::map_to_wafer(over, automatic).mode == ExecutionMode::weight_streaming);
  wafer::WaferOptions pipelined;
  pipelined.mode = config::ExecutionMode::pipelined;
  CHECK_THROWS_WITH(wafer::map_to_wafer(over, pipelined), Catch::Contains("too much"));
}

TEST_CASE("pipelined placement: every kernel a rectangle of its own on the wafer") {
  compiler::Plan plan = plan_for(gpt_model(16), 4);
  plan.mapping = wafer::map_to_wafer(plan, release_1x_options());
  REQUIRE(plan.mapping.mode == ExecutionMode::pipelined);
  const wafer::WaferProfile& profile = wafer::wafer_profile("wse2");
  std::vector<const compiler::Region*> regions;
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const compiler::Region& region = plan.mapping.kernels[k].region;
    bool placed = !plan.kernels[k].at_load && plan.kernels[k].name != "view";
    CHECK((region.pes() > 0) == placed);
    if (!placed) continue;
    CHECK(region.x >= 0);
    CHECK(region.y >= 0);
    CHECK(region.x + region.width <= profile.width);
    CHECK(region.y + region.height <= profile.height);
    for (const compiler::Region* other : regions)
      CHECK_FALSE(overlaps(region, *other));
    regions.push_back(&region);
  }
  const compiler::Estimate& e = plan.mapping.estimate;
  CHECK(e.pe_utilization > 0.9);
  CHECK(e.pe_utilization <= 1.0);
  CHECK(e.samples_per_second > 0.0);
  CHECK(e.tokens_per_second == Approx(e.samples_per_second * 16));
  CHECK(e.bottleneck.find("kernel ") == 0);
  std::string svg = wafer::placement_svg(plan);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  std::size_t titles = 0;
  for (std::size_t at = svg.find("<title>kernel "); at != std::string::npos;
       at = svg.find("<title>kernel ", at + 1))
    ++titles;
  CHECK(titles == regions.size());
}

TEST_CASE("weight streaming: data parallel systems, SwarmX depth, micro-batches") {
  CHECK(wafer::swarmx_levels(1, 4) == 0);
  CHECK(wafer::swarmx_levels(2, 4) == 1);
  CHECK(wafer::swarmx_levels(4, 4) == 1);
  CHECK(wafer::swarmx_levels(5, 4) == 2);
  CHECK(wafer::swarmx_levels(64, 4) == 3);
  compiler::Plan plan = plan_for(gpt_model(64), 8);
  double previous = 0.0;
  double overhead = -1.0;
  for (std::int64_t systems : {1, 2, 16, 64}) {
    wafer::WaferOptions options;
    options.mode = config::ExecutionMode::weight_streaming;
    options.num_csx = systems;
    compiler::Estimate e = wafer::map_to_wafer(plan, options).estimate;
    INFO(systems << " systems");
    CHECK(e.num_csx == systems);
    CHECK(e.cluster_samples_per_second > previous);
    double added = e.cluster_step_seconds - e.step_seconds;
    CHECK(added > overhead);
    previous = e.cluster_samples_per_second;
    overhead = added;
  }
  wafer::WaferOptions micro;
  micro.mode = config::ExecutionMode::weight_streaming;
  micro.system_batch = 32;
  micro.micro_batch_fixed = true;
  compiler::Estimate fixed = wafer::map_to_wafer(plan, micro).estimate;
  CHECK(fixed.micro_batch_size == 8);
  CHECK(fixed.micro_batches == 4);
  micro.micro_batch_fixed = false;
  compiler::Estimate chosen = wafer::map_to_wafer(plan, micro).estimate;
  CHECK(32 % chosen.micro_batch_size == 0);
  CHECK(chosen.step_seconds <= fixed.step_seconds);
  micro.system_batch = 12;
  CHECK_THROWS_WITH(wafer::map_to_wafer(plan, micro),
                    Catch::Contains("does not divide the 12 samples"));
}

TEST_CASE("a CS-3 computes a compute-bound step faster than a CS-2") {
  compiler::Plan plan = plan_for(gpt_model(512, 1024), 32);
  wafer::WaferOptions options;
  options.mode = config::ExecutionMode::weight_streaming;
  double cs2 = wafer::map_to_wafer(plan, options).estimate.samples_per_second;
  options.wafer = "wse3";
  compiler::WaferMapping mapping = wafer::map_to_wafer(plan, options);
  CHECK(mapping.wafer == "wse3");
  CHECK(mapping.estimate.samples_per_second > cs2);
}
