#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "compiler/compile.hpp"
#include "compiler/host_lowering.hpp"
#include "compiler/scratch_layout.hpp"
#include "graph/autodiff.hpp"
#include "graph/flops.hpp"
#include "graph/number_formats.hpp"
#include "nn/convolution.hpp"
#include "runtime/compiled_chain.hpp"
#include "runtime/host_kernels.hpp"
#include "runtime/kernel_set.hpp"
#include "runtime_fixture.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;
using graph::DType;
using runtime::Executable;

namespace {

const char* const kModels[] = {
    "{name: fc_mnist, hidden_sizes: [16, 8], dropout: 0.25}",
    "{name: gpt2, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, num_heads: 2, "
    "filter_size: 32, max_position_embeddings: 8, dropout_rate: 0.1}",
    "{name: bert, vocab_size: 40, hidden_size: 16, num_hidden_layers: 1, num_heads: 2, "
    "filter_size: 32, max_position_embeddings: 8}",
    // 75,264 weights: the update's elementwise chain spans 19 chunks split across the cores.
    "{name: fc_mnist, hidden_sizes: [96, 80]}",
};

double relative_error(double value, double expected) {
  if (std::isnan(expected)) return std::isnan(value) ? 0.0 : INFINITY;
  return std::fabs(value - expected) / std::max(1.0, std::fabs(expected));
}

// Runs one step of `plan` on the runtime and on the reference evaluator (over the plan's own
// graph, casts included) and returns the largest relative difference over outputs and updates.
double step_difference(const compiler::Plan& plan) {
  graph::Feeds feeds = test::sample_feeds(plan.graph);
  Executable executable(plan);
  test::feed(executable, feeds);
  executable.run();
  std::vector<graph::NodeId> fetch;
  std::vector<Executable::Slot> slots;
  for (const graph::NamedNode& output : plan.graph.outputs()) {
    fetch.push_back(output.node);
    slots.push_back(executable.slot(output.name));
  }
  for (const graph::NamedNode& update : plan.graph.updates()) {
    fetch.push_back(update.node);
    slots.push_back(executable.slot(update.name));  // the variable, after the step
  }
  std::vector<graph::HostTensor> expected = graph::evaluate_reference(plan.graph, feeds, fetch);
  double worst = 0.0;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    std::vector<double> actual = executable.read(slots[i]);
    REQUIRE(actual.size() == expected[i].values.size());
    for (std::size_t e = 0; e < actual.size(); ++e)
      worst = std::max(worst, relative_error(actual[e], expected[i].values[e]));
  }
  return worst;
}

// The named outputs of one step of `plan` on the runtime.
std::vector<std::vector<double>> step_outputs(const compiler::Plan& plan, const graph::Feeds& feeds,
                                              const std::vector<std::string>& names) {
  Executable executable(plan);
  test::feed(executable, feeds);
  executable.run();
  std::vector<std::vector<double>> values;
  for (const std::string& name : names)
    values.push_back(executable.read(executable.slot(name)));
  return values;
}

}  // namespace

TEST_CASE("every kernel of an f32 training step agrees with the reference evaluator") {
  for (const char* model : kModels) {
    INFO(model);
    models::TracedStep step = test::traced_step(model, 4);
    CHECK(step_difference(test::compiled_plan(step.graph, 4)) <= 1e-4);
  }
}

// What a checkpoint written in the background relies on (docs/running.md, --async_checkpoint):
// the step calls its hook once, after its forward pass and before any f32 variable changes, in
// f32 and under mixed precision (whose update also rounds the weights into their 16-bit copies),
// timed (--profile) or not.
TEST_CASE("a step calls its hook once, after its loss, before its f32 variables change") {
  for (const char* model : kModels) {
    for (auto [mixed, profiling] : {std::pair{false, false}, {true, false}, {false, true}}) {
      INFO(model << (mixed ? ", bfloat16" : ", f32") << (profiling ? ", timed" : ""));
      models::TracedStep step = test::traced_step(model, 4);
      compiler::Plan plan = mixed ? test::compiled_plan(step.graph, 4, DType::bf16, 1)
                                  : test::compiled_plan(step.graph, 4);
      Executable executable(plan);
      executable.set_profiling(profiling);  // times the runs after the first
      test::feed(executable, test::sample_feeds(plan.graph));
      executable.run();
      std::vector<std::pair<Executable::Slot, std::vector<float>>> before;
      for (const graph::Variable& variable : plan.graph.variables()) {
        Executable::Slot slot = executable.slot(variable.name);
        if (executable.type(slot).dtype != DType::f32) continue;
        std::span<const float> values = executable.floats(slot);
        before.emplace_back(slot, std::vector<float>(values.begin(), values.end()));
      }
      auto unchanged = [&](Executable::Slot slot, const std::vector<float>& values) {
        std::span<const float> now = executable.floats(slot);
        return std::equal(now.begin(), now.end(), values.begin());
      };
      Executable::Slot loss = executable.slot("loss");
      double previous_loss = executable.scalar(loss);
      int calls = 0;
      double loss_at_call = previous_loss;
      bool unchanged_at_call = true;
      executable.run([&] {
        ++calls;
        loss_at_call = executable.scalar(loss);
        for (const auto& [slot, values] : before)
          unchanged_at_call = unchanged_at_call && unchanged(slot, values);
      });
      CHECK(calls == 1);
      CHECK(unchanged_at_call);
      CHECK(loss_at_call == executable.scalar(loss));
      CHECK(loss_at_call != previous_loss);  // the weights changed after the first step
      std::size_t changed = 0;
      for (const auto& [slot, values] : before)
        changed += unchanged(slot, values) ? 0 : 1;
      CHECK(changed > 0);
      CHECK(executable.host_profile().runs == (profiling ? 1 : 0));
    }
  }
}

TEST_CASE("eval steps run on the runtime") {
  for (const char* model : kModels) {
    INFO(model);
    models::TracedStep step = test::traced_step(model, 4, false);
    CHECK(step_difference(test::compiled_plan(step.graph, 4)) <= 1e-4);
  }
}

TEST_CASE("bias adds folded into GEMMs split across the cores agree with the reference evaluator") {
  // Products of over 2^20 multiply-adds split by rows (fc_mnist), by batch (GPT's linear
  // layers over [batch, sequence, hidden]) or, with 1,024 rows of 512 columns (the feed-forward
  // layer's), in row blocks and column halves; each part starts its rows as the bias.
  const std::pair<const char*, std::int64_t> large[] = {
      {"{name: fc_mnist, hidden_sizes: [256, 128]}", 64},
      {"{name: gpt2, vocab_size: 64, hidden_size: 64, num_hidden_layers: 1, num_heads: 2, "
       "filter_size: 256, max_position_embeddings: 32}",
       8},
      {"{name: gpt2, vocab_size: 64, hidden_size: 64, num_hidden_layers: 1, num_heads: 2, "
       "filter_size: 512, max_position_embeddings: 32}",
       32},
  };
  for (auto [model, batch] : large) {
    INFO(model);
    models::TracedStep step = test::traced_step(model, batch);
    CHECK(step_difference(test::compiled_plan(step.graph, batch)) <= 1e-4);
  }
}

TEST_CASE("broadcasting elementwise kernels split across the cores agree with the reference") {
  // 122,880 elements each: rows shared across the team, split inside the middle axis, with
  // operands that step by 1 or 0 along the last axis or broadcast over other axes.
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{64, 48, 40}, DType::f32}));
  graph::Tensor bias(graph, graph.add_input("bias", {{40}, DType::f32}));
  graph::Tensor per_row(graph, graph.add_input("per_row", {{64, 48, 1}, DType::f32}));
  graph::Tensor outer(graph, graph.add_input("outer", {{64, 1, 40}, DType::f32}));
  graph::Tensor inner(graph, graph.add_input("inner", {{1, 48, 40}, DType::f32}));
  graph.add_output("bias_added", (x + bias).id());
  graph.add_output("scaled", (x * per_row).id());
  graph.add_output("from_row", (per_row - x).id());
  graph.add_output("both_broadcast", (outer / inner).id());
  graph.add_output("compared", graph::cast(x > bias, DType::f32).id());
  CHECK(step_difference(test::compiled_plan(graph, 1)) <= 1e-6);
}

TEST_CASE("sums and maxima over leading axes, split across the cores, agree with the reference") {
  // 122,880 elements: blocks of 64 columns shared across the team, each summing its rows in
  // order (a bias's gradient); 16-bit values widened a row segment at a time.
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{64, 48, 40}, DType::f32}));
  graph::Tensor x16 = graph::cast(x, DType::bf16);
  graph.add_output("sum_rows", sum(x, {0}).id());
  graph.add_output("sum_rows_and_columns", sum(x, {0, 1}).id());
  graph.add_output("max_middle", reduce_max(x, {1}).id());
  graph.add_output("mean_rows", mean(x, {0}).id());
  graph.add_output("sum_bf16", graph::cast(sum(x16, {0}), DType::f32).id());
  graph.add_output("max_bf16", graph::cast(reduce_max(x16, {0, 1}), DType::f32).id());
  CHECK(step_difference(test::compiled_plan(graph, 1)) <= 1e-6);
}

TEST_CASE(
    "sums over axes that end with the last, split across the cores, agree with the reference") {
  // 122,880 elements: a batch norm's statistics and bias gradient ([N, C, H, W] over N, H and W),
  // the rows of the trailing reduced axes summed across the team, then added per result; the same
  // bits on one core. A kept last axis and 16-bit values take the element-by-element path.
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{4, 32, 24, 40}, DType::f32}));
  std::vector<std::string> names = {"channels", "channel_means", "odd_axes", "kept_last", "bf16"};
  graph.add_output(names[0], sum(x, {0, 2, 3}).id());
  graph.add_output(names[1], mean(x * 1000.0, {0, 2, 3}, true).id());
  graph.add_output(names[2], sum(x, {1, 3}).id());
  graph.add_output(names[3], sum(x, {0, 2}).id());
  graph.add_output(names[4],
                   graph::cast(sum(graph::cast(x, DType::bf16), {0, 3}), DType::f32).id());
  compiler::Plan plan = test::compiled_plan(graph, 1);
  CHECK(step_difference(plan) <= 1e-6);
  graph::Feeds feeds = test::sample_feeds(graph);
  std::vector<std::vector<double>> on_every_core = step_outputs(plan, feeds, names);
  test::on_one_core([&] { CHECK(step_outputs(plan, feeds, names) == on_every_core); });
}

TEST_CASE("pads, slices, concatenations and broadcasts split across the cores copy exactly") {
  // 122,880 elements each: the copies of a convolution lowered to im2col (the padded input, its
  // shifted slices, their concatenation) and a broadcast over the channels, rows across the team.
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{4, 32, 24, 40}, DType::f32}));
  graph::Tensor per_image(graph, graph.add_input("per_image", {{4, 1, 24, 40}, DType::f32}));
  graph::Tensor padded = pad(x, {0, 0, 1, 1}, {0, 0, 1, 1});
  graph::Tensor shifted = slice(slice(padded, 2, 2, 26), 3, 0, 40);
  graph.add_output("padded", padded.id());
  graph.add_output("shifted", shifted.id());
  graph.add_output("concatenated", graph::concat({x, shifted, x * 2.0}, 1).id());
  graph.add_output("broadcast", broadcast_to(per_image, {4, 32, 24, 40}).id());
  graph.add_output(
      "padded_bf16",
      graph::cast(pad(graph::cast(x, DType::bf16), {1, 0, 0, 2}, {0, 0, 3, 0}), DType::f32).id());
  CHECK(step_difference(test::compiled_plan(graph, 1)) == 0.0);
}

TEST_CASE(
    "a convolution's windows and their sums, split across the cores, agree with the reference") {
  // Windows over one, two and three trailing axes; the 2-D ones of a UNet-like activation
  // (147,456 windowed values: rows across the team) and in bfloat16 (summed in f32, rounded once).
  graph::Graph graph;
  graph::Tensor image(graph, graph.add_input("image", {{2, 8, 18, 34}, DType::f32}));
  graph::Tensor volume(graph, graph.add_input("volume", {{2, 5, 6, 7}, DType::f32}));
  graph::Tensor line(graph, graph.add_input("line", {{3, 2, 600}, DType::f32}));
  graph::Tensor taken = windows(image, {3, 3});
  graph.add_output("image_windows", taken.id());
  graph.add_output("image_sums", windows_sum(taken * 0.5, {3, 3}).id());
  graph.add_output("volume_windows", windows(volume, {2, 3, 4}).id());
  graph.add_output("volume_sums", windows_sum(windows(volume, {2, 3, 4}), {2, 3, 4}).id());
  graph.add_output("line_sums", windows_sum(windows(line, {5}), {5}).id());
  CHECK(step_difference(test::compiled_plan(graph, 1)) < 1e-6);

  graph::Graph half;
  graph::Tensor x(half, half.add_input("x", {{2, 8, 18, 34}, DType::f32}));
  graph::Tensor taken_bf16 = windows(graph::cast(x, DType::bf16), {3, 3});
  half.add_output("windows", graph::cast(taken_bf16, DType::f32).id());
  half.add_output("sums", graph::cast(windows_sum(taken_bf16, {3, 3}), DType::f32).id());
  CHECK(step_difference(test::compiled_plan(half, 1)) < 1.0 / 256);

  // 16-bit windows summed into an f32 result (a convolution's input gradient under mixed
  // precision): widened as they are added, never rounded.
  graph::Graph widened;
  graph::Tensor y(widened, widened.add_input("y", {{2, 8, 18, 34}, DType::f32}));
  graph::Attributes to_f32;
  to_f32.shape = {3, 3};
  to_f32.dtype = DType::f32;
  graph::Tensor rounded = windows(graph::cast(y, DType::bf16), {3, 3});
  widened.add_output("sums", apply(graph::OpKind::windows_sum, {rounded}, to_f32).id());
  CHECK(step_difference(test::compiled_plan(widened, 1)) < 1e-6);
}

TEST_CASE(
    "convolutions that form their windows a tile at a time agree with the reference, on any "
    "number of cores, in f32 and 16 bits") {
  // A 2-D convolution over a batch of 4 (its products shared out a tile of columns, or a product,
  // at a time) and a 3-D one of one sample (its weight's gradient in two halves of its columns),
  // each with the gradients of its weight and input: products of windows and, transposed, of
  // windows summed over the output positions. In f32, and under mixed precision (16-bit windows:
  // bfloat16 multiplied as it is where the set does so, the other types widened a tile at a time).
  graph::Graph graph;
  graph::Tensor image(graph, graph.add_input("image", {{4, 6, 20, 24}, DType::f32}));
  graph::Tensor volume(graph, graph.add_input("volume", {{1, 6, 6, 8, 10}, DType::f32}));
  graph::Tensor flat(graph, graph.add_variable("flat", {{5, 6, 3, 3}, DType::f32},
                                               graph::VariableRole::parameter, {}));
  graph::Tensor deep(graph, graph.add_variable("deep", {{3, 6, 3, 3, 3}, DType::f32},
                                               graph::VariableRole::parameter, {}));
  graph::Tensor images = nn::convolve(image, flat, 1, 1);
  graph::Tensor volumes = nn::convolve(volume, deep, 1, 1);
  graph::Tensor loss = sum(images * images, {0, 1, 2, 3}) + sum(volumes * volumes, {0, 1, 2, 3, 4});
  graph.set_phase(graph::Phase::backward);
  std::vector<graph::Tensor> grads =
      gradients(loss, std::vector<graph::Tensor>{flat, deep, image, volume});
  std::vector<std::string> names = {"images",    "volumes",    "flat_grad",
                                    "deep_grad", "image_grad", "volume_grad"};
  std::vector<graph::Tensor> values = {images, volumes, grads[0], grads[1], grads[2], grads[3]};
  for (std::size_t i = 0; i < names.size(); ++i)
    graph.add_output(names[i], values[i].id());
  struct Case {
    const char* name;
    compiler::Plan plan;
    std::size_t forming;  // forward products (and f32 input gradients)
    double bound;
  };
  for (const Case& c : {Case{"f32", test::compiled_plan(graph, 1), 4, 1e-5},
                        Case{"bf16", test::compiled_plan(graph, 1, DType::bf16, 1), 2, 2e-2},
                        Case{"cb16", test::compiled_plan(graph, 1, DType::cb16, 1), 2, 2e-2},
                        Case{"f16", test::compiled_plan(graph, 1, DType::f16, 1), 2, 2e-2}}) {
    INFO(c.name);
    std::size_t forming = 0;
    std::size_t summing = 0;
    for (const compiler::HostStep& host : c.plan.host_steps) {
      if (host.windows < 0) continue;
      ++(host.transposed_b ? summing : forming);
    }
    CHECK(forming == c.forming);
    CHECK(summing == 2);  // the weights' gradients
    CHECK(step_difference(c.plan) <= c.bound);
    // The compiler's scratch layout bounds the work space the products take on this set.
    CHECK(Executable(c.plan).work_space_bytes() <=
          c.plan.scratch.work(runtime::selected_set_multiplies_bf16(), runtime::host_cores()) +
              compiler::kBufferAlignment);
    graph::Feeds feeds = test::sample_feeds(graph);
    std::vector<std::vector<double>> on_every_core = step_outputs(c.plan, feeds, names);
    test::on_one_core([&] { CHECK(step_outputs(c.plan, feeds, names) == on_every_core); });
  }
}

// Windows' gradients summed onto the padded inputs they came from, as a convolution's input
// gradient is: a product of a weight matrix's transpose [C * K, O] (of `type`) by each output
// gradient [O, P], reshaped to the windows [N, C, K, O1, ..., Od] and summed in f32.
graph::Tensor summed_windows_gradient(graph::Graph& graph, const std::string& name,
                                      const graph::Shape& padded, const graph::Shape& window,
                                      std::int64_t outputs, DType type) {
  std::int64_t count = graph::element_count(window);
  graph::Shape positions_shape = {padded[0], padded[1], count};
  std::int64_t positions = 1;
  for (std::size_t a = 0; a < window.size(); ++a) {
    positions *= padded[a + 2] - window[a] + 1;
    positions_shape.push_back(padded[a + 2] - window[a] + 1);
  }
  graph::Tensor weights(graph,
                        graph.add_input(name + "_w", {{outputs, padded[1] * count}, DType::f32}));
  graph::Tensor gradient(
      graph, graph.add_input(name + "_g", {{padded[0], outputs, positions}, DType::f32}));
  graph::Tensor product =
      matmul(swap_last_axes(graph::cast(weights, type)), graph::cast(gradient, type));
  graph::Attributes to_f32;
  to_f32.shape = window;
  to_f32.dtype = DType::f32;
  return apply(graph::OpKind::windows_sum, {reshape(product, positions_shape)}, to_f32);
}

TEST_CASE(
    "a 16-bit product summed onto the windows it is the gradient of agrees with the reference, "
    "the same bits whatever its tile and on any number of cores") {
  // A batch of 3 (a product each item) and of 1 (its channels in two halves), 3-D and 1-D windows;
  // and windows whose output rows are narrower than the window, where a later offset is not an
  // earlier position, left to windows_sum.
  for (DType type : {DType::bf16, DType::cb16, DType::f16}) {
    INFO(graph::dtype_name(type));
    graph::Graph graph;
    std::vector<std::string> names = {"batch", "single", "volume", "line", "narrow"};
    graph.add_output(
        names[0], summed_windows_gradient(graph, names[0], {3, 4, 12, 14}, {3, 3}, 5, type).id());
    graph.add_output(names[1],
                     summed_windows_gradient(graph, names[1], {1, 6, 9, 11}, {3, 3}, 4, type).id());
    graph.add_output(
        names[2],
        summed_windows_gradient(graph, names[2], {2, 3, 5, 6, 7}, {2, 3, 3}, 4, type).id());
    graph.add_output(names[3],
                     summed_windows_gradient(graph, names[3], {2, 3, 40}, {5}, 6, type).id());
    graph.add_output(names[4],
                     summed_windows_gradient(graph, names[4], {2, 3, 6, 4}, {3, 3}, 2, type).id());
    compiler::Plan plan = test::compiled_plan(graph, 1);
    std::vector<std::size_t> summing;
    for (std::size_t i = 0; i < plan.host_steps.size(); ++i) {
      if (plan.host_steps[i].windows_sum >= 0) summing.push_back(i);
    }
    CHECK(summing.size() == 4);
    // A product's f32 sums, in the GEMM's order, may round a term to the next 16-bit value.
    CHECK(step_difference(plan) <= 1.0 / 256);
    CHECK(Executable(plan).work_space_bytes() <=
          plan.scratch.work(runtime::selected_set_multiplies_bf16(), runtime::host_cores()) +
              compiler::kBufferAlignment);
    graph::Feeds feeds = test::sample_feeds(graph);
    std::vector<std::vector<double>> whole = step_outputs(plan, feeds, names);
    compiler::Plan narrow_tiles = plan;
    for (std::size_t i : summing)
      narrow_tiles.host_steps[i].windows_tile = 7;
    CHECK(step_outputs(narrow_tiles, feeds, names) == whole);
    test::on_one_core([&] { CHECK(step_outputs(plan, feeds, names) == whole); });
  }
}

TEST_CASE("a plan whose product would sum onto windows it cannot is refused when it is loaded") {
  graph::Graph graph;
  graph.add_output("sums",
                   summed_windows_gradient(graph, "x", {2, 3, 8, 9}, {3, 3}, 4, DType::bf16).id());
  compiler::Plan plan = test::compiled_plan(graph, 1);
  auto summing = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                              [](const compiler::HostStep& host) { return host.windows_sum >= 0; });
  REQUIRE(summing != plan.host_steps.end());
  auto index = static_cast<std::size_t>(summing - plan.host_steps.begin());
  auto refused = [&](auto change) {
    compiler::Plan hostile = plan;
    change(hostile.host_steps[index]);
    CHECK_THROWS_WITH(Executable(hostile), Catch::Contains("sums its product onto the windows") &&
                                               Catch::Contains("only an f32 windows_sum"));
  };
  refused([](compiler::HostStep& host) { host.windows_tile = 0; });
  refused([](compiler::HostStep& host) { host.windows_tile = std::int64_t{1} << 62; });
  refused([](compiler::HostStep& host) { host.windows_sum = host.operand_a; });
  refused([](compiler::HostStep& host) { host.operand_b = host.operand_a; });
  refused([](compiler::HostStep& host) { host.result = host.operand_b; });
}

TEST_CASE("a plan whose product would form windows it cannot is refused when it is loaded") {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{2, 3, 10, 12}, DType::f32}));
  graph::Tensor w(graph, graph.add_variable("w", {{4, 3, 3, 3}, DType::f32},
                                            graph::VariableRole::parameter, {}));
  graph.add_output("y", nn::convolve(x, w, 1, 1).id());
  compiler::Plan plan = test::compiled_plan(graph, 1);
  auto forming = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                              [](const compiler::HostStep& host) { return host.windows >= 0; });
  REQUIRE(forming != plan.host_steps.end());
  auto index = static_cast<std::size_t>(forming - plan.host_steps.begin());
  auto refused = [&](auto change) {
    compiler::Plan hostile = plan;
    change(hostile.host_steps[index]);
    CHECK_THROWS_WITH(Executable(hostile), Catch::Contains("forms the windows") &&
                                               Catch::Contains("only windows of its operand b"));
  };
  refused([](compiler::HostStep& host) { host.windows_tile = 0; });
  refused([](compiler::HostStep& host) { host.windows_tile = std::int64_t{1} << 62; });
  refused([](compiler::HostStep& host) { host.windows = host.operand_a; });
  refused([](compiler::HostStep& host) { host.operand_b = host.operand_a; });
}

TEST_CASE("argmax split across the cores agrees with the reference, ties to the first") {
  // bfloat16's rounding makes ties within a row common: the first of them is the index.
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{64, 48, 40}, DType::f32}));
  graph.add_output("last_axis", argmax(x).id());
  graph.add_output("middle_axis", argmax(x, 1).id());
  graph.add_output("bf16_last_axis", argmax(graph::cast(x * 0.01, DType::bf16)).id());
  CHECK(step_difference(test::compiled_plan(graph, 1)) == 0.0);
}

TEST_CASE("transposes split across the cores by rows agree with the reference") {
  // 73,728 elements: attention's head split and its transposed keys, a full reversal, and the
  // same in 16 bits; the rows of the result shared out across the team.
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{4, 48, 12, 32}, DType::f32}));
  graph::Tensor x16 = graph::cast(x, DType::bf16);
  graph.add_output("heads", transpose(x, {0, 2, 1, 3}).id());
  graph.add_output("keys", transpose(x, {0, 2, 3, 1}).id());
  graph.add_output("reversed", transpose(x, {3, 2, 1, 0}).id());
  graph.add_output("heads_bf16", graph::cast(transpose(x16, {0, 2, 1, 3}), DType::f32).id());
  graph.add_output("keys_bf16", graph::cast(transpose(x16, {0, 2, 3, 1}), DType::f32).id());
  // Axes of size 1, last among them (a transposed convolution's interleaving).
  graph::Tensor interleaved = reshape(x, {4, 48, 1, 384, 1});
  graph.add_output("size_one_axes", transpose(interleaved, {0, 3, 1, 2, 4}).id());
  graph.add_output("all_but_one_of_size_one", transpose(reshape(x, {1, 73728, 1}), {2, 0, 1}).id());
  CHECK(step_difference(test::compiled_plan(graph, 1)) == 0.0);
}

TEST_CASE("a scatter-add zeroes its whole table across the cores, step after step") {
  // 2,048 x 64 = 131,072 elements, zeroed by the team's threads, with updates landing in every
  // part; a second step would add to rows a part left unzeroed.
  graph::Graph graph;
  graph::Tensor updates(graph, graph.add_input("updates", {{300, 64}, DType::f32}));
  graph::Tensor ids = graph::iota(graph, {300}, 0) * 6;
  graph.add_output("table", graph::scatter_add(ids, updates, 2048).id());
  compiler::Plan plan = test::compiled_plan(graph, 1);
  graph::Feeds feeds = test::sample_feeds(plan.graph);
  std::vector<graph::NodeId> fetch{*plan.graph.find_output("table")};
  std::vector<double> expected = graph::evaluate_reference(plan.graph, feeds, fetch)[0].values;
  Executable executable(plan);
  test::feed(executable, feeds);
  for (int step = 0; step < 2; ++step) {
    executable.run();
    std::vector<double> table = executable.read(executable.slot("table"));
    REQUIRE(table.size() == expected.size());
    auto wrong = std::inner_product(table.begin(), table.end(), expected.begin(), std::size_t{0},
                                    std::plus<>(), std::not_equal_to<>());
    CHECK(wrong == 0);
  }
}

TEST_CASE("layer norms of rows of any width agree with the reference") {
  // Rows summed over eight lanes and a tail (37 = 4 x 8 + 5), and GPT-2 small's width.
  graph::Graph graph;
  graph::Tensor narrow(graph, graph.add_input("narrow", {{64, 37}, DType::f32}));
  graph::Tensor wide(graph, graph.add_input("wide", {{96, 768}, DType::f32}));
  graph.add_output("narrow_normed", layer_norm(narrow * 3.0 + 1.0, 1e-5).id());
  graph.add_output("wide_normed", layer_norm(wide, 1e-5).id());
  CHECK(step_difference(test::compiled_plan(graph, 1)) <= 1e-6);
}

TEST_CASE("mixed-precision plans run with 16-bit values emulated") {
  for (DType half : {DType::bf16, DType::f16, DType::cb16}) {
    for (int level : {0, 1, 2}) {
      INFO(graph::dtype_name(half) << " level " << level);
      models::TracedStep step = test::traced_step(kModels[1], 2);
      compiler::Plan plan = test::compiled_plan(step.graph, 2, half, level);
      // The reference rounds at the same casts but computes in double in between; a tie rounded
      // the other way moves a 16-bit value by one unit in the last place.
      CHECK(step_difference(plan) <= 2e-2);
    }
  }
}

TEST_CASE("a parameter's 16-bit copy is rounded from it before any step that follows a write") {
  models::TracedStep step = test::traced_step(kModels[3], 4);
  compiler::Plan plan = test::compiled_plan(step.graph, 4, DType::bf16, 1);
  Executable executable(plan);
  graph::Feeds feeds = test::sample_feeds(plan.graph);
  test::feed(executable, feeds);  // the parameters only: the executable keeps their copies
  std::vector<const graph::Variable*> copies;
  for (const graph::Variable& variable : plan.graph.variables()) {
    if (variable.role == graph::VariableRole::half_copy) copies.push_back(&variable);
  }
  REQUIRE(copies.size() == 3);
  auto copies_hold_their_parameters = [&] {
    for (const graph::Variable* copy : copies) {
      std::vector<double> parameter = executable.read(executable.slot(copy->copy_of));
      std::vector<double> rounded = executable.read(executable.slot(copy->name));
      for (std::size_t i = 0; i < parameter.size(); ++i) {
        if (rounded[i] != graph::round_to_format(parameter[i], graph::format_of(DType::bf16)))
          return false;
      }
    }
    return true;
  };
  Executable::Slot loss = executable.slot("loss");
  executable.run();
  double first_loss = executable.scalar(loss);
  CHECK(copies_hold_their_parameters());  // the update rounded the new weights into them
  executable.run();
  CHECK(copies_hold_their_parameters());
  CHECK(executable.scalar(loss) != first_loss);

  // The first weights written again (a checkpoint loaded): the next step reads them rounded.
  test::feed(executable, feeds);
  executable.run();
  CHECK(executable.scalar(loss) == first_loss);

  std::vector<float> values(static_cast<std::size_t>(
      graph::element_count(plan.graph.node(copies.front()->node).type.shape)));
  CHECK_THROWS_WITH(executable.write(executable.slot(copies.front()->name), values),
                    Catch::Contains("is the 16-bit copy of '" + copies.front()->copy_of +
                                    "' that the step keeps; write '" + copies.front()->copy_of));
}

// y = x w, a step that reads the weight `w` through its 16-bit copy `w@bf16` and, when
// `update_weight`, updates the weight but not the copy.
graph::Graph step_with_copy(bool update_weight) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  graph::Tensor w(
      graph, graph.add_variable("w", {{8, 8}, DType::f32}, graph::VariableRole::parameter, {}));
  graph::Variable copy;
  copy.name = "w@bf16";
  copy.role = graph::VariableRole::half_copy;
  copy.copy_of = "w";
  graph::Node leaf;
  leaf.op = graph::OpKind::variable;
  leaf.type = {{8, 8}, DType::bf16};
  graph::Tensor rounded(graph, graph.add_variable(copy, leaf));
  graph.add_output("y", cast(matmul(cast(x, DType::bf16), rounded), DType::f32).id());
  graph.set_phase(graph::Phase::update);
  if (update_weight) graph.set_update("w", (w * 0.5).id());
  return graph;
}

TEST_CASE("a plan with a 16-bit copy its step does not keep is refused") {
  CHECK_THROWS_WITH(Executable(test::compiled_plan(step_with_copy(true), 4)),
                    Catch::Contains("the plan keeps 'w@bf16', a 16-bit copy of 'w', but its step "
                                    "does not round the new 'w' into it"));
}

TEST_CASE("a copy of a weight the step does not update is rounded when the weight is written") {
  // As a split batch's micro-step reads the weights its update plan wrote.
  compiler::Plan plan = test::compiled_plan(step_with_copy(false), 4);
  Executable executable(plan);
  Executable::Slot weight = executable.slot("w");
  Executable::Slot y = executable.slot("y");
  std::vector<float> input(32, 1.0f);
  executable.write(executable.slot("x"), input);
  for (float value : {0.5f, 1.00390625f}) {  // 1 + 2^-8 rounds to 1 in bfloat16
    INFO(value);
    executable.write(weight, std::vector<float>(64, value));
    executable.run();
    CHECK(executable.read(y) == std::vector<double>(32, 8.0 * (value == 0.5f ? 0.5 : 1.0)));
    executable.run();  // and stays so while the weight is not written
    CHECK(executable.read(y) == std::vector<double>(32, 8.0 * (value == 0.5f ? 0.5 : 1.0)));
  }
}

TEST_CASE("values are written and read by name, with clear errors") {
  models::TracedStep step = test::traced_step(kModels[0], 4);
  Executable executable(test::compiled_plan(step.graph, 4));
  auto input = executable.slot("input");
  CHECK(executable.type(input).shape == graph::Shape{4, 784});
  CHECK_THROWS_WITH(executable.slot("nope"),
                    Catch::Contains("no input, variable or output named 'nope'"));
  std::vector<float> short_batch(10, 0.5f);
  CHECK_THROWS_WITH(executable.write(input, short_batch),
                    Catch::Contains("'input' is f32[4, 784] (3136 elements); 10 values"));
  CHECK_THROWS_WITH(executable.write(executable.slot("loss"), short_batch),
                    Catch::Contains("'loss' is an output of the step"));
  CHECK(executable.arena_bytes() >= executable.plan().memory.peak_bytes);
}

TEST_CASE("a step's temporaries given back between steps come back for the next step") {
  // As the training steps do while the run evaluates: the same steps, bit for bit. 64 samples of
  // 784 inputs: temporaries over dozens of pages.
  models::TracedStep step = test::traced_step(kModels[3], 64);
  compiler::Plan plan = test::compiled_plan(step.graph, 64);
  REQUIRE(plan.memory.peak_bytes - plan.memory.persistent_bytes > (64 << 10));
  graph::Feeds feeds = test::sample_feeds(plan.graph);
  Executable released(plan);
  Executable kept(plan);
  test::feed(released, feeds);
  test::feed(kept, feeds);
  Executable::Slot loss = released.slot("loss");
  for (int run = 0; run < 3; ++run) {
    released.run();
    kept.run();
    CHECK(released.scalar(loss) == kept.scalar(loss));
    // Its variables (and their 16-bit copies) stay: a release that reached them would change the
    // next step.
    released.release_temporaries();
  }
  for (const graph::Variable& variable : plan.graph.variables()) {
    INFO(variable.name);
    CHECK(released.read(released.slot(variable.name)) == kept.read(kept.slot(variable.name)));
  }
}

TEST_CASE("a new executable's values are zero, and f32 ones are written where they lie") {
  models::TracedStep step = test::traced_step(kModels[0], 4);
  Executable executable(test::compiled_plan(step.graph, 4));
  auto input = executable.slot("input");
  std::vector<double> fresh = executable.read(input);
  CHECK(std::all_of(fresh.begin(), fresh.end(), [](double value) { return value == 0.0; }));
  std::span<float> in_place = executable.floats_to_write(input);
  REQUIRE(in_place.size() == 4 * 784);
  in_place[5] = 2.5f;
  CHECK(executable.floats(input)[5] == 2.5f);
  CHECK_THROWS_WITH(executable.floats_to_write(executable.slot("loss")),
                    Catch::Contains("'loss' is an output of the step"));
  CHECK_THROWS_WITH(executable.floats_to_write(executable.slot("labels")),
                    Catch::Contains("'labels' holds i32, not f32"));
}

TEST_CASE("an index outside the embedding table is an error, not a wild read") {
  models::TracedStep step = test::traced_step(kModels[1], 2);
  Executable executable(test::compiled_plan(step.graph, 2));
  test::feed(executable, test::sample_feeds(step.graph));
  std::vector<std::int32_t> ids(16, 40);
  executable.write(executable.slot("input_ids"), ids);
  CHECK_THROWS_WITH(executable.run(), Catch::Contains("index 40 is outside a table of 40 rows"));
}

TEST_CASE("a memory plan that does not fit its graph is refused") {
  models::TracedStep step = test::traced_step(kModels[0], 4);
  compiler::Plan plan = test::compiled_plan(step.graph, 4);
  plan.memory.peak_bytes = 64;
  CHECK_THROWS_WITH(Executable(plan), Catch::Contains("lies outside its arena"));
  plan = test::compiled_plan(step.graph, 4);
  plan.memory.buffer_of.pop_back();
  CHECK_THROWS_WITH(Executable(plan), Catch::Contains("memory plan covers"));
}

TEST_CASE("a step larger than host memory is refused before allocating, saying what to lower") {
  models::TracedStep step = test::traced_step(kModels[0], 4);
  compiler::Plan plan = test::compiled_plan(step.graph, 4);
  plan.memory.peak_bytes = std::int64_t{1} << 60;
  plan.tokens_per_sample = 64;
  CHECK_THROWS_WITH(Executable(plan),
                    Catch::Contains("of host memory (its arena and scratch), more than") &&
                        Catch::EndsWith(": lower the batch size or the sequence length"));
  plan.batch_size = 1;
  CHECK_THROWS_WITH(Executable(plan),
                    Catch::EndsWith(": lower the sequence length: one sample does not fit"));
  plan.tokens_per_sample = 0;  // samples that are not sequences: images
  CHECK_THROWS_WITH(Executable(plan), Catch::EndsWith(": lower the size of a sample (its "
                                                      "image_shape): one sample does not fit"));
}

TEST_CASE("the runtime runs the plan's host steps and refuses a plan that leaves a node out") {
  models::TracedStep step = test::traced_step(kModels[0], 4);
  compiler::Plan plan = test::compiled_plan(step.graph, 4);
  plan.host_steps.pop_back();
  plan.scratch = compiler::layout_scratch(plan);
  CHECK_THROWS_WITH(Executable(plan), Catch::Contains("has no host step in the plan"));
}

TEST_CASE("a profiled step times its host steps after its first run and computes the same") {
  models::TracedStep step = test::traced_step(kModels[1], 4);
  compiler::Plan plan = test::compiled_plan(step.graph, 4);
  graph::Feeds feeds = test::sample_feeds(plan.graph);
  Executable plain(plan);
  Executable profiled(plan);
  test::feed(plain, feeds);
  test::feed(profiled, feeds);
  profiled.run();
  CHECK(profiled.host_profile().runs == 0);  // profiling is off until asked for
  profiled.set_profiling(true);
  plain.run();
  for (int run = 0; run < 3; ++run) {
    plain.run();
    profiled.run();
  }
  for (const graph::Variable& variable : plan.graph.variables()) {
    INFO(variable.name);
    CHECK(profiled.read(profiled.slot(variable.name)) == plain.read(plain.slot(variable.name)));
  }

  const Executable::HostProfile& profile = profiled.host_profile();
  CHECK(profile.runs == 3);
  REQUIRE(profile.seconds.size() == plan.host_steps.size());
  double in_steps = 0.0;
  std::size_t timed = 0;
  for (std::size_t i = 0; i < plan.host_steps.size(); ++i) {
    bool at_load = plan.kernels[static_cast<std::size_t>(plan.host_steps[i].kernel)].at_load;
    INFO("host step " << i);
    CHECK(profile.seconds[i] >= 0.0);
    if (at_load) CHECK(profile.seconds[i] == 0.0);
    timed += profile.seconds[i] > 0.0 ? 1 : 0;
    in_steps += profile.seconds[i];
  }
  CHECK(timed > plan.host_steps.size() / 2);
  CHECK(in_steps <= profile.run_seconds);

  // Another profiled executable whose first run is its only one times nothing.
  Executable once(plan);
  once.set_profiling(true);
  test::feed(once, feeds);
  once.run();
  CHECK(once.host_profile().runs == 0);
  CHECK(once.host_profile().run_seconds == 0.0);
}

namespace {

// x -> x * 3 -> bfloat16 -> float32 -> + 1 over `count` elements: a chain whose middle values
// only the chain reads, of two widths.
graph::Graph narrowing_chain(std::int64_t count) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{count}, DType::f32}));
  graph::Tensor narrowed = cast(x * 3.0, DType::bf16);
  graph.add_output("y", (cast(narrowed, DType::f32) + 1.0).id());
  return graph;
}

}  // namespace

TEST_CASE("a chain's values kept per chunk give the results of values stored whole") {
  // Three chunks and a part of one on each core; a million elements for the memory.
  for (std::int64_t count : {std::int64_t{10'000}, std::int64_t{1'000'000}}) {
    graph::Graph graph = narrowing_chain(count);
    compiler::Plan plan = test::compiled_plan(graph, 1);
    REQUIRE(plan.host_steps.size() == 1);
    REQUIRE(plan.host_steps.front().chunk_local.size() == 3);
    plan.host_steps.front().in_registers = false;
    compiler::Plan stored = plan;
    stored.host_steps.front().chunk_local.clear();
    stored.scratch = compiler::layout_scratch(stored);
    graph::Feeds feeds = test::sample_feeds(graph);
    std::vector<std::vector<double>> results;
    std::vector<std::int64_t> scratch;
    for (const compiler::Plan* run : {&plan, &stored}) {
      Executable executable(*run);
      test::feed(executable, feeds);
      executable.run();
      results.push_back(executable.read(executable.slot("y")));
      scratch.push_back(executable.scratch_bytes());
    }
    CHECK(results[0] == results[1]);
    std::vector<graph::NodeId> fetch = {*graph.find_output("y")};
    std::vector<double> expected = graph::evaluate_reference(graph, feeds, fetch).front().values;
    double worst = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i)
      worst = std::max(worst, relative_error(results[0][i], expected[i]));
    CHECK(worst <= 1e-6);  // the reference adds in double
    // Two slots of 4096 floats per core, where whole values take 10 bytes an element.
    CHECK(scratch[0] <= 2 * 4096 * 4 * 64);
    CHECK(scratch[1] >= 10 * count);
  }
}

namespace {

// A chain of every op a chain in registers computes, over `count` elements: f32 arithmetic with
// whole and single operands, comparisons stored and read by `where`, a stored boolean read by
// `where`, 16-bit values read, narrowed, stored and widened again, or narrowed only to be stored.
graph::Graph register_chain(std::int64_t count) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{count}, DType::f32}));
  graph::Tensor y(graph, graph.add_input("y", {{count}, DType::f32}));
  graph::Tensor s(graph, graph.add_input("s", {{}, DType::f32}));
  graph::Tensor h(graph, graph.add_input("h", {{count}, DType::bf16}));
  graph::Tensor h16(graph, graph.add_input("h16", {{count}, DType::f16}));
  graph::Tensor hc(graph, graph.add_input("hc", {{count}, DType::cb16}));
  graph::Tensor m(graph, graph.add_input("m", {{count}, DType::boolean}));
  graph::Tensor a = (x * s + y - x) / (abs(y) + 1.0);
  graph::Tensor b = relu(minimum(maximum(a, -x), y));
  graph::Tensor c = where(x < y, sqrt(abs(b)), rsqrt(abs(y) + 0.5));
  graph::Tensor d = where(x >= y, c, where(x <= y, -c, c * 2.0));
  graph::Tensor e =
      where(m, d, x) + cast(h, DType::f32) + cast(h16, DType::f32) * cast(hc, DType::f32);
  graph::Tensor narrowed = cast(e, DType::bf16);
  graph::Tensor narrowed16 = cast(e * 1e-6, DType::f16);  // some below float16's normal range
  graph::Tensor narrowed_cb = cast(e * y, DType::cb16);
  graph.add_output("narrowed", narrowed.id());
  graph.add_output("narrowed16", narrowed16.id());
  graph.add_output("narrowed_cb", narrowed_cb.id());
  graph.add_output("widened", (cast(narrowed, DType::f32) * y + cast(narrowed16, DType::f32) -
                               cast(narrowed_cb, DType::f32))
                                  .id());
  graph.add_output("greater", greater(e, x).id());
  graph.add_output("equal", where(equal(x, y), e, where(not_equal(e, y), x, y)).id());
  // Casts nothing in the chain reads: only stored, rounded once by the store.
  graph.add_output("stored_bf16", cast(e * x, DType::bf16).id());
  graph.add_output("stored_f16", cast(e * 1e-7, DType::f16).id());
  graph.add_output("stored_cb16", cast(e * x * 1e-9, DType::cb16).id());
  graph::Tensor infinite_where_equal = e / (y - x);  // the feeds make a third of x == y
  graph.add_output("not_finite",
                   (cast(logical_not(is_finite(infinite_where_equal)), DType::f32) + x).id());
  return graph;
}

}  // namespace

// Runs `plan`, whose chain of at least `nodes` nodes runs in registers, and the same plan with
// every chain node by node, on `feeds`; checks that every output has the same bits.
void check_same_as_by_nodes(const compiler::Plan& plan, const graph::Feeds& feeds,
                            std::size_t nodes) {
  INFO(compiler::host_steps_text(plan));
  auto in_registers = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                                   [&](const compiler::HostStep& step) {
                                     return step.in_registers && step.nodes.size() >= nodes;
                                   });
  REQUIRE(in_registers != plan.host_steps.end());
  compiler::Plan by_nodes = plan;
  for (compiler::HostStep& step : by_nodes.host_steps)
    step.in_registers = false;
  std::vector<std::vector<double>> results[2];
  const compiler::Plan* plans[2] = {&plan, &by_nodes};
  for (int run = 0; run < 2; ++run) {
    Executable executable(*plans[run]);
    test::feed(executable, feeds);
    executable.run();
    for (const graph::NamedNode& output : plan.graph.outputs())
      results[run].push_back(executable.read(executable.slot(output.name)));
  }
  for (std::size_t output = 0; output < results[0].size(); ++output) {
    INFO("output " << plan.graph.outputs()[output].name);
    CHECK(results[0][output] == results[1][output]);
  }
}

TEST_CASE("a chain in registers gives the bits of the same chain run node by node") {
  // One part of the team with a partial last block; parts on both cores, each ending mid-block.
  for (std::int64_t count : {std::int64_t{1'000}, std::int64_t{100'003}}) {
    INFO(count << " elements");
    graph::Graph graph = register_chain(count);
    compiler::Plan plan = test::compiled_plan(graph, 1);
    graph::Feeds feeds = test::sample_feeds(graph);
    for (std::size_t i = 0; i < feeds["y"].values.size(); i += 3)
      feeds["y"].values[i] = feeds["x"].values[i];  // x == y
    for (std::size_t i = 1; i < feeds["m"].values.size(); i += 7)
      feeds["m"].values[i] = 0.0;
    check_same_as_by_nodes(plan, feeds, 20);
    // The reference rounds to the 16-bit formats from sums in double, the runtime from f32
    // ones: a value either puts on the other side of a rounding boundary is a unit of bfloat16
    // apart, at most 2^-7 of it.
    CHECK(step_difference(plan) <= 0x1.0p-7);
  }
}

namespace {

// Sums over every axis of values chains compute: dynamic loss scaling's count of non-finite
// values (in registers, the flags kept per block), global_norm's sum of squares (a lone node), a
// sum of a chain that runs node by node (exp), and one of a value the chain also stores.
graph::Graph summing_chains(std::int64_t count) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{count}, DType::f32}));
  graph::Tensor y(graph, graph.add_input("y", {{count}, DType::f32}));
  graph::Tensor s(graph, graph.add_input("s", {{}, DType::f32}));
  graph.add_output("not_finite", sum(cast(logical_not(is_finite(x / y)), DType::f32), {0}).id());
  graph.add_output("squares", sum(x * x, {0}).id());
  graph.add_output("grown", sum(exp(x * 1e-3) * y, {0}).id());
  graph::Tensor scaled = x * s + y;
  graph.add_output("scaled", scaled.id());
  graph.add_output("scaled_sum", sum(scaled, {0}).id());
  return graph;
}

// `plan` with each chain's sums taken by reduce kernels after it, from the values stored.
compiler::Plan sums_by_reduce_kernels(compiler::Plan plan) {
  std::vector<compiler::HostStep> steps;
  for (compiler::HostStep& step : plan.host_steps) {
    std::vector<graph::NodeId> sums = std::move(step.sums);
    step.sums.clear();
    step.chunk_local.clear();
    steps.push_back(std::move(step));
    for (graph::NodeId sum : sums) {
      compiler::HostStep reduce;
      reduce.kernel = steps.back().kernel;
      reduce.nodes = {sum};
      steps.push_back(std::move(reduce));
    }
  }
  plan.host_steps = std::move(steps);
  plan.scratch = compiler::layout_scratch(plan);
  return plan;
}

// The outputs of one element (so that a failed check prints them all).
std::vector<double> sums_of_run(const compiler::Plan& plan, const graph::Feeds& feeds) {
  Executable executable(plan);
  test::feed(executable, feeds);
  executable.run();
  std::vector<double> results;
  for (const graph::NamedNode& output : plan.graph.outputs()) {
    std::vector<double> values = executable.read(executable.slot(output.name));
    if (values.size() == 1) results.push_back(values.front());
  }
  return results;
}

}  // namespace

TEST_CASE("a chain's sums give the bits of the reduce kernel's, on one core or several") {
  // One chunk with a partial block, three and a part, many shared across the cores.
  for (std::int64_t count : {std::int64_t{1'000}, std::int64_t{12'293}, std::int64_t{1'000'003}}) {
    INFO(count << " elements");
    graph::Graph graph = summing_chains(count);
    compiler::Plan plan = test::compiled_plan(graph, 1);
    INFO(compiler::host_steps_text(plan));
    std::size_t sums = 0;
    for (const compiler::HostStep& step : plan.host_steps)
      sums += step.sums.size();
    REQUIRE(sums == 4);
    graph::Feeds feeds = test::sample_feeds(graph);
    for (std::size_t i = 0; i < feeds["y"].values.size(); i += 5)
      feeds["y"].values[i] = 0.0;  // x / y infinite, or NaN where x is 0 too
    for (std::size_t i = 0; i < feeds["x"].values.size(); i += 11)
      feeds["x"].values[i] = 0.0;
    // Values that cancel in the first two chunks: added in another order, they would swallow the
    // other chunks' totals.
    feeds["s"].values[0] = 1.0;
    feeds["y"].values[1] = 0x1.0p70;
    feeds["y"].values[std::min<std::size_t>(4097, feeds["y"].values.size() - 1)] = -0x1.0p70;
    compiler::Plan by_nodes = plan;
    for (compiler::HostStep& step : by_nodes.host_steps)
      step.in_registers = false;
    std::vector<double> expected = sums_of_run(sums_by_reduce_kernels(plan), feeds);
    REQUIRE(expected.size() == 4);
    CHECK(expected[0] == static_cast<double>((count + 4) / 5));
    CHECK(sums_of_run(plan, feeds) == expected);
    CHECK(sums_of_run(by_nodes, feeds) == expected);
    test::on_one_core([&] {
      CHECK(sums_of_run(plan, feeds) == expected);
      CHECK(sums_of_run(sums_by_reduce_kernels(plan), feeds) == expected);
    });
  }
}

TEST_CASE("a chain in registers reads the operands it broadcasts a block at a time") {
  // A row's mean, a row of 750 (no divisor of a block) and a mask over it; 3 rows: one part
  // with a partial block, 100: parts on both cores, blocks spanning two rows.
  for (std::int64_t rows : {std::int64_t{3}, std::int64_t{100}}) {
    INFO(rows << " rows");
    graph::Graph graph;
    graph::Tensor x(graph, graph.add_input("x", {{rows, 750}, DType::f32}));
    graph::Tensor mean(graph, graph.add_input("mean", {{rows, 1}, DType::f32}));
    graph::Tensor gamma(graph, graph.add_input("gamma", {{750}, DType::f32}));
    graph::Tensor mask(graph, graph.add_input("mask", {{750}, DType::boolean}));
    graph.add_output("y", (where(mask, (x - mean) * gamma, -x) + 1.0).id());
    compiler::Plan plan = test::compiled_plan(graph, 1);
    graph::Feeds feeds = test::sample_feeds(graph);
    for (std::size_t i = 0; i < feeds["mask"].values.size(); i += 3)
      feeds["mask"].values[i] = 0.0;
    check_same_as_by_nodes(plan, feeds, 4);
    CHECK(step_difference(plan) <= 1e-6);
  }
}

namespace {

// Operands a chain broadcasts: a row of 768 (no divisor of a chunk), a row's mean, a mask of
// booleans and a 16-bit row, over `rows` rows; and a mask of each sample's 192 columns under its
// 4 heads.
graph::Graph broadcasting_chains(std::int64_t rows) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{rows, 768}, DType::f32}));
  graph::Tensor mean(graph, graph.add_input("mean", {{rows, 1}, DType::f32}));
  graph::Tensor gamma(graph, graph.add_input("gamma", {{768}, DType::f32}));
  graph::Tensor mask(graph, graph.add_input("mask", {{768}, DType::boolean}));
  graph::Tensor half_row(graph, graph.add_input("h", {{768}, DType::bf16}));
  graph::Tensor normalized = where(mask, (x - mean) * gamma, -1.0);
  graph.add_output("y", exp(normalized * 0.5).id());
  graph::Tensor halves = cast(x, DType::bf16) * half_row;
  graph.add_output("z", (cast(halves, DType::f32) + mean).id());
  // A sample's mask under its heads: kept on two runs of axes.
  graph::Tensor w(graph, graph.add_input("w", {{rows, 4, 192}, DType::f32}));
  graph::Tensor sample_mask = iota(graph, {rows, 1, 192}, 2) >= iota(graph, {rows, 1, 192}, 0);
  graph.add_output("v", exp(where(sample_mask, w * 0.5, -1.0)).id());
  return graph;
}

}  // namespace

TEST_CASE("a chain broadcasting operands a chunk at a time gives the reference's values") {
  // 3 rows: one chunk and a part; 100 rows: 19 chunks, split across the cores.
  for (std::int64_t rows : {std::int64_t{3}, std::int64_t{100}}) {
    INFO(rows << " rows");
    compiler::Plan plan = test::compiled_plan(broadcasting_chains(rows), 1);
    INFO(compiler::host_steps_text(plan));
    std::int64_t long_chains = std::count_if(
        plan.host_steps.begin(), plan.host_steps.end(), [](const compiler::HostStep& step) {
          return step.kind == compiler::HostStepKind::chain && step.nodes.size() >= 3;
        });
    CHECK(long_chains == 3);
    CHECK(plan.scratch.kernel_values.empty());
    CHECK(step_difference(plan) <= 1e-6);
  }
}

TEST_CASE("a plan running a step in registers that cannot run there is refused") {
  auto chain_of = [](compiler::Plan& plan) {
    auto found = std::find_if(
        plan.host_steps.begin(), plan.host_steps.end(), [](const compiler::HostStep& step) {
          return step.kind == compiler::HostStepKind::chain && step.nodes.size() >= 3;
        });
    REQUIRE(found != plan.host_steps.end());
    REQUIRE_FALSE(found->in_registers);
    return found;
  };
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{10'000}, DType::f32}));
  graph.add_output("y", (log(x * 2.0) + 1.0).id());
  compiler::Plan transcendental = test::compiled_plan(graph, 1);
  chain_of(transcendental)->in_registers = true;
  CHECK_THROWS_WITH(
      Executable(transcendental),
      Catch::Contains("(log to f32) in registers, which compute only f32 arithmetic"));

  compiler::Plan gemm = test::compiled_plan(test::traced_step(kModels[0], 4).graph, 4);
  auto product = std::find_if(
      gemm.host_steps.begin(), gemm.host_steps.end(),
      [](const compiler::HostStep& step) { return step.kind == compiler::HostStepKind::gemm; });
  REQUIRE(product != gemm.host_steps.end());
  product->in_registers = true;
  CHECK_THROWS_WITH(Executable(gemm), Catch::Contains("'s gemm step in registers: only chains"));
}

TEST_CASE("a plan whose chain sums what it cannot is refused") {
  compiler::Plan plan = test::compiled_plan(summing_chains(1'000), 1);
  auto summing = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                              [](const compiler::HostStep& step) { return !step.sums.empty(); });
  REQUIRE(summing != plan.host_steps.end());
  auto other = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                            [&](const compiler::HostStep& step) {
                              return !step.sums.empty() && step.sums != summing->sums;
                            });
  REQUIRE(other != plan.host_steps.end());
  compiler::Plan foreign = plan;
  // A sum of a value another chain computes, as well as that chain's.
  foreign.host_steps[static_cast<std::size_t>(summing - plan.host_steps.begin())].sums.push_back(
      other->sums.front());
  CHECK_THROWS_WITH(Executable(foreign), Catch::Contains("a chain's sums are f32 reduce_sum"));
  compiler::Plan too_many = plan;
  compiler::HostStep& step =
      too_many.host_steps[static_cast<std::size_t>(summing - plan.host_steps.begin())];
  step.sums.assign(compiler::kMaxChainSums + 1, step.sums.front());
  CHECK_THROWS_WITH(Executable(too_many), Catch::Contains("sums, more than 4"));
}

TEST_CASE("a plan keeping values per chunk that others read, or that its chain lacks, is refused") {
  compiler::Plan plan = test::compiled_plan(narrowing_chain(10'000), 1);
  REQUIRE(plan.host_steps.size() == 1);
  compiler::HostStep& chain = plan.host_steps.front();
  compiler::Plan outside = plan;
  outside.host_steps.front().chunk_local.push_back(chain.nodes.back());  // the output
  CHECK_THROWS_WITH(Executable(outside),
                    Catch::Contains("not a value its chain computes without a buffer"));
  compiler::Plan split = plan;
  // The chain's last node as a step of its own, reading a value its chain kept per chunk.
  compiler::HostStep last = split.host_steps.front();
  last.kind = compiler::HostStepKind::node;
  last.nodes = {chain.nodes.back()};
  last.chunk_local.clear();
  last.in_registers = false;
  split.host_steps.front().nodes.pop_back();
  split.host_steps.push_back(last);
  CHECK_THROWS_WITH(Executable(split), Catch::Contains("which the plan keeps only per chunk"));
}

namespace {

// y = sum(x w + b): an input x, parameters w and b, the output "y".
struct Layer {
  graph::Tensor w, b;
};

Layer add_layer(graph::Graph& graph) {
  graph::Tensor x(graph, graph.add_input("x", {{4, 8}, DType::f32}));
  graph::Tensor w(
      graph, graph.add_variable("w", {{8, 8}, DType::f32}, graph::VariableRole::parameter, {}));
  graph::Tensor b(graph,
                  graph.add_variable("b", {{8}, DType::f32}, graph::VariableRole::parameter, {}));
  graph.add_output("y", sum(matmul(x, w) + b, {0, 1}).id());
  return {w, b};
}

graph::Tensor add_counter(graph::Graph& graph, const char* name, DType dtype) {
  return {graph, graph.add_variable(name, {{}, dtype}, graph::VariableRole::statistic, {})};
}

// A training-like step: the layer's w and b updated, and `counter`, of another type in the reader.
graph::Graph owner_step() {
  graph::Graph graph;
  Layer layer = add_layer(graph);
  graph::Tensor counter = add_counter(graph, "counter", DType::f32);
  graph.set_phase(graph::Phase::update);
  graph.set_update("w", (layer.w * 0.5).id());
  graph.set_update("b", (layer.b + 1.0).id());
  graph.set_update("counter", (counter + 1.0).id());
  return graph;
}

// The same layer from the same variables, and `steps`, which the reader updates.
graph::Graph reader_step() {
  graph::Graph graph;
  add_layer(graph);
  graph::Tensor counter = add_counter(graph, "counter", DType::i32);
  graph::Tensor steps = add_counter(graph, "steps", DType::f32);
  graph.add_output("counted", cast(counter, DType::f32).id());
  graph.set_phase(graph::Phase::update);
  graph.set_update("steps", (steps + 1.0).id());
  return graph;
}

}  // namespace

TEST_CASE("a step reads the variables it shares with its owner where the owner keeps them") {
  compiler::Plan owner_plan = test::compiled_plan(owner_step(), 4);
  compiler::Plan reader_plan = test::compiled_plan(reader_step(), 4);
  std::vector<graph::NodeId> read = compiler::variables_read_from(reader_plan, owner_plan);
  auto node_of = [&](const char* name) { return reader_plan.graph.find_variable(name)->node; };
  // Not `counter` (another type) nor `steps` (the reader updates it; the owner has none).
  CHECK(read == std::vector<graph::NodeId>{node_of("w"), node_of("b")});

  Executable owner(owner_plan);
  Executable reader(reader_plan, {}, owner);
  graph::Feeds feeds = test::sample_feeds(owner_plan.graph);
  test::feed(owner, feeds);
  reader.write(reader.slot("x"), std::span<const double>(feeds.at("x").values));
  CHECK(reader.borrowed(reader.slot("w")));
  CHECK(reader.borrowed(reader.slot("b")));
  CHECK_FALSE(reader.borrowed(reader.slot("counter")));
  CHECK_FALSE(reader.borrowed(reader.slot("steps")));
  CHECK_FALSE(reader.borrowed(reader.slot("x")));

  // The reader sees the owner's values as the owner's steps update them, without a copy.
  for (int step = 0; step < 3; ++step) {
    owner.run();  // y of the weights before the update, then w halved and b + 1
    reader.run();
    Executable check(owner_plan);
    test::feed(check, feeds);
    check.write(check.slot("w"), std::span<const double>(owner.read(owner.slot("w"))));
    check.write(check.slot("b"), std::span<const double>(owner.read(owner.slot("b"))));
    check.run();
    CHECK(reader.scalar(reader.slot("y")) == check.scalar(check.slot("y")));
  }
  std::vector<float> weights(64, 1.0f);
  CHECK_THROWS_WITH(reader.write(reader.slot("w"), weights),
                    Catch::Contains("'w' is read where the step that updates it keeps it"));
  reader.write(reader.slot("steps"), std::span<const float>(weights.data(), 1));
}

TEST_CASE("a step adds to its sums where its owner reads them, keeping a -0.0 of the first") {
  // As a split batch's micro-step adds its gradients to its update step's inputs.
  const graph::TensorType matrix{{4, 4}, DType::f32};
  graph::Graph owner_graph;
  graph::Tensor w(owner_graph,
                  owner_graph.add_variable("w", matrix, graph::VariableRole::parameter, {}));
  graph::Tensor gradient(owner_graph, owner_graph.add_input("gradient/w", matrix));
  owner_graph.set_phase(graph::Phase::update);
  owner_graph.set_update("w", (w - gradient).id());
  graph::Graph reader_graph;
  graph::Tensor x(reader_graph, reader_graph.add_input("x", matrix));
  graph::Tensor sum(reader_graph, reader_graph.add_variable("gradient/w", matrix,
                                                            graph::VariableRole::gradient_sum, {}));
  reader_graph.set_phase(graph::Phase::update);
  reader_graph.set_update("gradient/w", (sum + x).id());
  compiler::Plan owner_plan = test::compiled_plan(owner_graph, 4);
  compiler::Plan reader_plan = test::compiled_plan(reader_graph, 4);
  CHECK(compiler::sums_kept_by(reader_plan, owner_plan) ==
        std::vector<graph::NodeId>{reader_plan.graph.find_variable("gradient/w")->node});

  Executable owner(owner_plan);
  Executable reader(reader_plan, {}, owner);
  CHECK(reader.borrowed(reader.slot("gradient/w")));
  std::span<float> sums = owner.floats_to_write(owner.slot("gradient/w"));
  std::fill(sums.begin(), sums.end(), -0.0f);
  std::vector<float> inputs(16);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    inputs[i] = i == 0 ? -0.0f : 0.1f * static_cast<float>(i);
  reader.write(reader.slot("x"), inputs);
  reader.run();
  reader.run();
  std::span<const float> result = owner.floats(owner.slot("gradient/w"));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    float expected = -0.0f;
    for (int step = 0; step < 2; ++step)
      expected += inputs[i];
    INFO(i);
    CHECK(std::bit_cast<std::uint32_t>(result[i]) == std::bit_cast<std::uint32_t>(expected));
  }
  CHECK(std::signbit(result[0]));  // -0.0 + -0.0 + -0.0, not +0.0
  CHECK_THROWS_WITH(
      reader.write(reader.slot("gradient/w"), inputs),
      Catch::Contains("'gradient/w' is added to where the step that reads it keeps it"));
}

TEST_CASE("a borrowed weight's 16-bit copy is rounded again once its owner says it changed") {
  // As a split batch's micro-step reads the weights its update step updates.
  compiler::Plan owner_plan = test::compiled_plan(owner_step(), 4);
  compiler::Plan reader_plan = test::compiled_plan(step_with_copy(false), 4);
  Executable owner(owner_plan);
  Executable reader(reader_plan, {}, owner);
  Executable::Slot weight = reader.slot("w");
  REQUIRE(reader.borrowed(weight));
  graph::Feeds feeds = test::sample_feeds(owner_plan.graph);
  test::feed(owner, feeds);
  reader.write(reader.slot("x"), std::span<const double>(feeds.at("x").values));
  // The y of the owner's current weight, from a reader with a copy of its own.
  auto expected = [&] {
    Executable check(reader_plan);
    check.write(check.slot("x"), std::span<const double>(feeds.at("x").values));
    check.write(check.slot("w"), std::span<const double>(owner.read(owner.slot("w"))));
    check.run();
    return check.read(check.slot("y"));
  };
  reader.run();  // its copy rounded from the owner's weight before the first step
  CHECK(reader.read(reader.slot("y")) == expected());
  std::vector<double> before = reader.read(reader.slot("y"));
  owner.run();  // w halved
  reader.run();
  CHECK(reader.read(reader.slot("y")) == before);  // not told: the copy it keeps
  reader.changed(weight);
  reader.run();
  CHECK(reader.read(reader.slot("y")) == expected());
  CHECK(reader.read(reader.slot("y")) != before);
  CHECK_THROWS_WITH(reader.changed(reader.slot("x")),
                    Catch::Contains("'x' is not read where another step keeps it"));
}

namespace {

// softmax's gradient at rows of `width` values: as one node, or as its three nodes one by one.
graph::Graph softmax_gradient(std::int64_t width, bool one_node) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{6, width}, DType::f32}));
  graph::Tensor g(graph, graph.add_input("g", {{6, width}, DType::f32}));
  graph::Tensor y = softmax(x * 4.0);
  graph::Tensor gradient = one_node ? softmax_grad(y, g) : y * (g - sum(g * y, {1}, true));
  graph.add_output("gradient", gradient.id());
  return graph;
}

// The output `name` of one run of the plan's step on `feeds`.
std::vector<double> output_of_run(const compiler::Plan& plan, const graph::Feeds& feeds,
                                  const std::string& name) {
  Executable executable(plan);
  test::feed(executable, feeds);
  executable.run();
  return executable.read(executable.slot(name));
}

}  // namespace

TEST_CASE("softmax's gradient gives the bits of its three nodes, on one core or several") {
  // Rows of a lane tail (37 = 4 x 8 + 5), GPT-2 small's attention, and of two sum chunks.
  for (std::int64_t width : {std::int64_t{37}, std::int64_t{256}, std::int64_t{4'096 + 123}}) {
    INFO(width << " values a row");
    graph::Feeds feeds = test::sample_feeds(softmax_gradient(width, true));
    compiler::Plan fused = test::compiled_plan(softmax_gradient(width, true), 1);
    compiler::Plan by_nodes = test::compiled_plan(softmax_gradient(width, false), 1);
    std::size_t reduce_kernels = 0;
    for (const compiler::HostStep& step : by_nodes.host_steps)
      reduce_kernels += by_nodes.graph.node(step.nodes.front()).op == graph::OpKind::reduce_sum;
    REQUIRE(reduce_kernels == 1);  // the sum as the reduce kernel takes it
    std::vector<double> expected = output_of_run(by_nodes, feeds, "gradient");
    CHECK(output_of_run(fused, feeds, "gradient") == expected);
    test::on_one_core([&] { CHECK(output_of_run(fused, feeds, "gradient") == expected); });
    CHECK(step_difference(fused) <= 1e-5);
  }
}

TEST_CASE("a softmax rounds each row into its 16-bit copy as it writes it") {
  for (DType half : {DType::bf16, DType::cb16}) {
    INFO(graph::dtype_name(half));
    graph::Graph graph;
    graph::Tensor x(graph, graph.add_input("x", {{5, 2'053}, DType::f32}));
    graph::Tensor y = softmax(x * 4.0);
    graph.add_output("y", y.id());
    graph.add_output("rounded", cast(y, half).id());
    compiler::Plan plan = test::compiled_plan(graph, 1);
    INFO(compiler::host_steps_text(plan));
    auto folds = [](const compiler::HostStep& step) { return step.rounded >= 0; };
    REQUIRE(std::count_if(plan.host_steps.begin(), plan.host_steps.end(), folds) == 1);
    graph::Feeds feeds = test::sample_feeds(graph);
    auto run = [&] {
      Executable executable(plan);
      test::feed(executable, feeds);
      executable.run();
      std::vector<double> values = executable.read(executable.slot("y"));
      std::vector<double> rounded = executable.read(executable.slot("rounded"));
      REQUIRE(rounded.size() == values.size());
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < values.size(); ++i)
        wrong += rounded[i] != graph::round_to_format(values[i], graph::format_of(half));
      CHECK(wrong == 0);
    };
    run();
    test::on_one_core(run);
  }
}

TEST_CASE("a plan whose step rounds into what is not its softmax's cast is refused") {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{4, 32}, DType::f32}));
  graph::Tensor scaled = x * 4.0;
  graph.add_output("rounded", cast(softmax(scaled), DType::bf16).id());
  graph.add_output("scaled", scaled.id());
  compiler::Plan plan = test::compiled_plan(graph, 1);
  auto rounding = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                               [](const compiler::HostStep& step) { return step.rounded >= 0; });
  REQUIRE(rounding != plan.host_steps.end());
  CHECK_NOTHROW(Executable(plan));
  rounding->rounded = scaled.id();
  CHECK_THROWS_WITH(Executable(plan),
                    Catch::Contains("only an f32 softmax writes a 16-bit cast of its result"));
}

namespace {

// Attention's softmax and its gradient over rows of `width` scores under a mask of the rows
// (causal) or of each sample's columns (padding), with attention dropout or without (`dropped`;
// its upstream's dropout draws as the copy's do, as a traced step's, or other draws):
// the masked scores, the f32 gradient and the dropped-out values are stored (`Returned::all`,
// also returned), or the scale and mask run row by row in the softmax, the mask, scale and cast
// after softmax_grad, and the dropouts as the kernel reads and rounds the rows.
// What a masked_rows step returns beside the probabilities' 16-bit copy and their gradient's.
enum class Returned { nothing_else, probabilities, all };
enum class Dropped { no, same_draws, other_draws };

graph::Graph masked_rows(std::int64_t width, bool padding, Returned returned,
                         Dropped dropped = Dropped::no) {
  graph::Graph graph;
  graph::Tensor scores(graph, graph.add_input("scores", {{16, 8, width}, DType::f32}));
  graph::Tensor upstream(graph, graph.add_input("upstream", {{16, 8, width}, DType::f32}));
  graph::Tensor step(graph, graph.add_input("step", {{}, DType::i32}));
  // Row r (or sample r) keeps its columns from r on.
  graph::Shape mask_shape = padding ? graph::Shape{16, 1, width} : graph::Shape{8, width};
  auto columns = static_cast<std::int64_t>(mask_shape.size()) - 1;
  graph::Tensor mask = iota(graph, mask_shape, columns) >= iota(graph, mask_shape, 0);
  graph::Tensor masked = where(mask, scores * 0.125, -1e9);
  graph::Tensor probabilities = softmax(masked);
  // Attention dropout drops the copy out, and the gradient's upstream with the same draws.
  std::uint64_t upstream_salt = dropped == Dropped::other_draws ? 12 : 11;
  graph::Tensor upstream_kept =
      dropped != Dropped::no ? dropout(upstream, step, 0.3, 7, upstream_salt) : upstream;
  graph::Tensor gradient = softmax_grad(probabilities, upstream_kept);
  graph::Tensor copied =
      dropped != Dropped::no ? dropout(probabilities, step, 0.3, 7, 11) : probabilities;
  graph.add_output("rounded", cast(copied, DType::bf16).id());
  graph.add_output("gradient", cast(where(mask, gradient, 0.0) * 0.125, DType::bf16).id());
  if (returned != Returned::nothing_else) graph.add_output("probabilities", probabilities.id());
  if (returned == Returned::all) {
    graph.add_output("masked", masked.id());
    graph.add_output("gradient_f32", gradient.id());
    if (dropped != Dropped::no) graph.add_output("dropped", copied.id());
    if (dropped != Dropped::no) graph.add_output("upstream_kept", upstream_kept.id());
  }
  return graph;
}

std::vector<std::vector<double>> outputs_of_run(const compiler::Plan& plan,
                                                const graph::Feeds& feeds) {
  Executable executable(plan);
  test::feed(executable, feeds);
  executable.run();
  std::vector<std::vector<double>> outputs;
  for (const graph::NamedNode& output : plan.graph.outputs()) {
    if (output.name == "rounded" || output.name == "gradient" || output.name == "probabilities")
      outputs.push_back(executable.read(executable.slot(output.name)));
  }
  return outputs;
}

// How many values of `got` differ from `expected`'s (a value missing or extra counts), so that a
// failure reports a count, not every value of both.
std::size_t differing_values(const std::vector<std::vector<double>>& got,
                             const std::vector<std::vector<double>>& expected) {
  std::size_t differing = 0;
  for (std::size_t o = 0; o < std::max(got.size(), expected.size()); ++o) {
    if (o >= got.size() || o >= expected.size()) {
      differing += o < got.size() ? got[o].size() : expected[o].size();
      continue;
    }
    std::size_t common = std::min(got[o].size(), expected[o].size());
    differing += std::max(got[o].size(), expected[o].size()) - common;
    for (std::size_t i = 0; i < common; ++i)
      differing += got[o][i] != expected[o][i];
  }
  return differing;
}

// Widths of masked_rows, whether its mask pads and whether its copy is dropped out: a lane tail in
// a row, rows of several blocks (six rows a run, split across the cores), and rows longer than a
// run; under a causal mask and under a padding mask. Rows of 256 (GPT-2 small's): the chains run
// compiled where the kernel set runs AVX2 or AVX-512 code; rows of 37 and 4,219 end short of a
// vector, which AVX2's code leaves to the interpreter.
constexpr std::array<std::tuple<std::int64_t, bool, Dropped>, 10> kMaskedRowCases{
    {{37, false, Dropped::no},
     {600, false, Dropped::no},
     {4'219, false, Dropped::no},
     {37, true, Dropped::no},
     {600, true, Dropped::no},
     {256, false, Dropped::no},
     {37, false, Dropped::same_draws},
     {4'219, true, Dropped::same_draws},
     {256, false, Dropped::same_draws},
     {600, false, Dropped::other_draws}}};

const char* dropped_name(Dropped dropped) {
  switch (dropped) {
    case Dropped::no:
      return "not dropped out";
    case Dropped::same_draws:
      return "dropped out, the upstream with the same draws";
    case Dropped::other_draws:
      return "dropped out, the upstream with other draws";
  }
  return "?";
}

compiler::HostStep& gradient_step(compiler::Plan& plan) {
  auto found = std::find_if(
      plan.host_steps.begin(), plan.host_steps.end(), [&](const compiler::HostStep& step) {
        return plan.graph.node(step.nodes.front()).op == graph::OpKind::softmax_grad;
      });
  REQUIRE(found != plan.host_steps.end());
  return *found;
}

std::size_t row_chain_steps(const compiler::Plan& plan) {
  return static_cast<std::size_t>(
      std::count_if(plan.host_steps.begin(), plan.host_steps.end(),
                    [](const compiler::HostStep& step) { return !step.row_chain.empty(); }));
}

std::string masked_case(std::int64_t width, bool padding, Dropped dropped) {
  return std::to_string(width) + " values a row, " + (padding ? "padding" : "causal") + " mask, " +
         dropped_name(dropped);
}

// `plan`'s outputs are `expected`, on the team's cores and on one.
void check_outputs(const compiler::Plan& plan, const graph::Feeds& feeds,
                   const std::vector<std::vector<double>>& expected) {
  CHECK(differing_values(outputs_of_run(plan, feeds), expected) == 0);
  test::on_one_core([&] { CHECK(differing_values(outputs_of_run(plan, feeds), expected) == 0); });
}

// Rows of 256 run both of `plan`'s row chains compiled where the kernel set compiles chains.
void check_chains_compiled(const compiler::Plan& plan, std::int64_t width) {
  if (width != 256 || runtime::kernel_set("").compiled_chains == runtime::ChainIsa::none ||
      !runtime::chains_compiled_here())
    return;
  Executable executable(plan);
  CHECK(executable.host_profile().chains_compiled == 2);
}

}  // namespace

TEST_CASE("a softmax's row chains give the bits of their nodes stored, on one core or several") {
  for (auto [width, padding, dropped] : kMaskedRowCases) {
    INFO(masked_case(width, padding, dropped));
    compiler::Plan fused =
        test::compiled_plan(masked_rows(width, padding, Returned::probabilities, dropped), 1);
    compiler::Plan stored =
        test::compiled_plan(masked_rows(width, padding, Returned::all, dropped), 1);
    INFO(compiler::host_steps_text(fused));
    REQUIRE(row_chain_steps(fused) == 2);
    REQUIRE(row_chain_steps(stored) == 0);
    graph::Feeds feeds = test::sample_feeds(fused.graph);
    std::vector<std::vector<double>> expected = outputs_of_run(stored, feeds);
    check_outputs(fused, feeds, expected);
    CHECK(step_difference(fused) <= 0x1.0p-7);  // bfloat16's unit, as for chains in registers
    check_chains_compiled(fused, width);
  }
}

TEST_CASE(
    "a softmax_grad that computes its softmax gives the bits of both stored, on one core or "
    "several") {
  // Attention's probabilities made again for the backward pass: only the gradient and the 16-bit
  // copy read them, so the gradient's step computes them a few rows at a time and stores none.
  // Dropped out (attention dropout) on their way into the copy or not.
  for (auto [width, padding, dropped] : kMaskedRowCases) {
    INFO(masked_case(width, padding, dropped));
    compiler::Plan computed =
        test::compiled_plan(masked_rows(width, padding, Returned::nothing_else, dropped), 1);
    compiler::Plan stored =
        test::compiled_plan(masked_rows(width, padding, Returned::all, dropped), 1);
    INFO(compiler::host_steps_text(computed));
    const compiler::HostStep& gradient = gradient_step(computed);
    REQUIRE(gradient.row_softmax >= 0);
    CHECK((gradient.dropout >= 0) == (dropped != Dropped::no));
    CHECK((gradient.upstream_dropout >= 0) == (dropped != Dropped::no));
    CHECK(gradient.softmax_chain.size() == 2);
    CHECK(gradient.row_chain.size() == 3);
    graph::Feeds feeds = test::sample_feeds(computed.graph);
    std::vector<std::vector<double>> expected = outputs_of_run(stored, feeds);
    expected.resize(2);  // the rounded probabilities and the gradient
    check_outputs(computed, feeds, expected);
    check_chains_compiled(computed, width);
  }
}

namespace {

// An eval step's attention probabilities over rows of `width` scores: rounded to bfloat16, from
// the scores masked and scaled row by row (`chained`) or as they are, and dropped out first
// (`dropped`: a training step's attention dropout) or not; with `stored`, the step also returns
// the f32 values it rounds.
graph::Graph rounded_probabilities(std::int64_t width, bool chained, bool stored,
                                   bool dropped = false) {
  graph::Graph graph;
  graph::Tensor scores(graph, graph.add_input("scores", {{16, 8, width}, DType::f32}));
  graph::Tensor step(graph, graph.add_input("step", {{}, DType::i32}));
  graph::Tensor mask = iota(graph, {8, width}, 1) >= iota(graph, {8, width}, 0);
  graph::Tensor probabilities = softmax(chained ? where(mask, scores * 0.125, -1e9) : scores);
  if (dropped) probabilities = dropout(probabilities, step, 0.3, 7, 11);
  graph.add_output("rounded", cast(probabilities, DType::bf16).id());
  if (stored) graph.add_output("probabilities", probabilities.id());
  return graph;
}

}  // namespace

TEST_CASE("a softmax kept per row rounds the bits of its stored rows, on one core or several") {
  for (auto [width, chained, dropped] :
       std::initializer_list<std::tuple<std::int64_t, bool, bool>>{{37, true, false},
                                                                   {600, true, false},
                                                                   {4'219, true, false},
                                                                   {37, false, false},
                                                                   {600, false, false},
                                                                   {4'219, false, false},
                                                                   {37, true, true},
                                                                   {600, false, true},
                                                                   {4'219, true, true},
                                                                   {300, true, true}}) {
    INFO(width << " values a row, " << (chained ? "with" : "without") << " a row chain, "
               << (dropped ? "dropped out" : "not dropped out"));
    compiler::Plan per_row =
        test::compiled_plan(rounded_probabilities(width, chained, false, dropped), 1);
    compiler::Plan stored =
        test::compiled_plan(rounded_probabilities(width, chained, true, dropped), 1);
    INFO(compiler::host_steps_text(per_row));
    auto drops_out = [](const compiler::Plan& plan) {
      return std::any_of(plan.host_steps.begin(), plan.host_steps.end(),
                         [](const auto& step) { return step.dropout >= 0; });
    };
    REQUIRE(drops_out(per_row) == dropped);
    REQUIRE_FALSE(drops_out(stored));
    auto keeps_softmax = [](const compiler::Plan& plan) {
      return std::any_of(plan.host_steps.begin(), plan.host_steps.end(), [&](const auto& step) {
        return std::find(step.chunk_local.begin(), step.chunk_local.end(), step.nodes.front()) !=
               step.chunk_local.end();
      });
    };
    REQUIRE(keeps_softmax(per_row));
    REQUIRE_FALSE(keeps_softmax(stored));
    REQUIRE(row_chain_steps(per_row) == (chained ? 1 : 0));
    graph::Feeds feeds = test::sample_feeds(per_row.graph);
    std::vector<double> expected = output_of_run(stored, feeds, "rounded");
    auto differing = [&] {
      std::vector<double> rounded = output_of_run(per_row, feeds, "rounded");
      REQUIRE(rounded.size() == expected.size());
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < rounded.size(); ++i)
        wrong += rounded[i] != expected[i];
      return wrong;
    };
    CHECK(differing() == 0);
    test::on_one_core([&] { CHECK(differing() == 0); });
  }
}

TEST_CASE("a plan that keeps a softmax per row but rounds it into nothing is refused") {
  for (bool chained : {true, false}) {
    INFO((chained ? "with" : "without") << " a row chain");
    compiler::Plan plan = test::compiled_plan(rounded_probabilities(64, chained, false), 1);
    auto rounding = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                                 [](const compiler::HostStep& step) { return step.rounded >= 0; });
    REQUIRE(rounding != plan.host_steps.end());
    CHECK_NOTHROW(Executable(plan));
    rounding->rounded = -1;
    CHECK_THROWS_WITH(Executable(plan),
                      chained ? "a softmax kept per row rounds its rows into a 16-bit copy, and "
                                "this one has none"
                              : "the plan keeps node %" + std::to_string(rounding->nodes.front()) +
                                    " per chunk, but it is not a value its chain "
                                    "computes without a buffer");
  }
}

TEST_CASE("a plan whose softmax drops its rows out through what is not its dropout is refused") {
  compiler::Plan plan = test::compiled_plan(rounded_probabilities(64, true, false, true), 1);
  auto dropping = std::find_if(plan.host_steps.begin(), plan.host_steps.end(),
                               [](const compiler::HostStep& step) { return step.dropout >= 0; });
  REQUIRE(dropping != plan.host_steps.end());
  CHECK_NOTHROW(Executable(plan));
  std::string dropout = "%" + std::to_string(dropping->dropout);
  compiler::Plan elsewhere = plan;
  auto step = static_cast<std::size_t>(dropping - plan.host_steps.begin());
  elsewhere.host_steps[step].dropout = dropping->row_chain.back();
  CHECK_THROWS_WITH(Executable(elsewhere),
                    "the plan keeps node " + dropout +
                        " per chunk, but it is not a value its chain computes without a buffer");
  std::erase(dropping->chunk_local, dropping->dropout);
  dropping->dropout = -1;  // the cast it rounds into reads the dropout, which nothing computes
  CHECK_THROWS_WITH(Executable(plan),
                    "node " + dropout + " has neither a buffer nor a kernel in the plan");
}

TEST_CASE(
    "a plan whose row chain does not compute its softmax's input, or is a chain's, is refused") {
  auto softmax_step = [](compiler::Plan& plan) -> compiler::HostStep& {
    auto found = std::find_if(
        plan.host_steps.begin(), plan.host_steps.end(), [&](const compiler::HostStep& step) {
          return plan.graph.node(step.nodes.front()).op == graph::OpKind::softmax;
        });
    REQUIRE(found != plan.host_steps.end());
    return *found;
  };
  compiler::Plan plan = test::compiled_plan(masked_rows(64, false, Returned::probabilities), 1);
  REQUIRE(softmax_step(plan).row_chain.size() == 2);
  CHECK_NOTHROW(Executable(plan));
  compiler::Plan swapped = plan;
  std::vector<graph::NodeId>& chain = softmax_step(swapped).row_chain;
  std::swap(chain.front(), chain.back());
  CHECK_THROWS_WITH(Executable(swapped), Catch::Contains("a row chain runs with an f32 softmax"));
  softmax_step(plan).kind = compiler::HostStepKind::chain;  // a chain runs no row chain
  CHECK_THROWS_WITH(Executable(plan), Catch::Contains("it is not a value its chain computes"));
  softmax_step(plan).chunk_local.clear();
  plan.scratch = compiler::layout_scratch(plan);
  CHECK_THROWS_WITH(Executable(plan), Catch::Contains("has no host step in the plan"));
}

TEST_CASE("a softmax_grad with a row chain and a buffer of its own stores its rows as well") {
  compiler::Plan plan = test::compiled_plan(masked_rows(64, false, Returned::probabilities), 1);
  graph::Feeds feeds = test::sample_feeds(plan.graph);
  std::vector<std::vector<double>> expected = outputs_of_run(plan, feeds);
  compiler::HostStep& step = gradient_step(plan);
  REQUIRE_FALSE(step.row_chain.empty());
  graph::NodeId gradient = step.nodes.front();
  std::erase(step.chunk_local, gradient);
  plan.memory.buffers.push_back(
      {gradient, compiler::BufferKind::temporary, 0, plan.graph.node(gradient).type.byte_size()});
  plan.memory.buffer_of.at(static_cast<std::size_t>(gradient)) =
      static_cast<std::int32_t>(plan.memory.buffers.size() - 1);
  plan.memory.peak_bytes = std::max(plan.memory.peak_bytes, plan.memory.buffers.back().bytes);
  CHECK(differing_values(outputs_of_run(plan, feeds), expected) == 0);
}

TEST_CASE("a plan whose softmax_grad computes a softmax other than its y operand is refused") {
  compiler::Plan plan = test::compiled_plan(masked_rows(64, false, Returned::nothing_else), 1);
  REQUIRE(gradient_step(plan).softmax_chain.size() == 2);
  CHECK_NOTHROW(Executable(plan));
  compiler::Plan swapped = plan;
  std::vector<graph::NodeId>& chain = gradient_step(swapped).softmax_chain;
  std::swap(chain.front(), chain.back());
  CHECK_THROWS_WITH(Executable(swapped),
                    Catch::Contains("only a softmax_grad computes its y operand, an f32 softmax"));
  compiler::Plan other = plan;
  gradient_step(other).row_softmax = gradient_step(other).softmax_chain.back();
  gradient_step(other).rounded = -1;
  CHECK_THROWS_AS(Executable(other), std::invalid_argument);  // the softmax is computed by none
}

TEST_CASE("dropout keeps the elements its counter-based draws keep, on one core or several") {
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO(graph::dtype_name(dtype));
    graph::Graph graph;
    graph::Tensor x(graph, graph.add_input("x", {{100'003}, dtype}));
    graph::Tensor step(graph, graph.add_input("step", {{}, DType::i32}));
    graph.add_output("dropped", dropout(x, step, 0.3, 7, 11).id());
    compiler::Plan plan = test::compiled_plan(graph, 1);
    for (double at_step : {0.0, 41.0}) {
      graph::Feeds feeds = test::sample_feeds(graph);
      feeds["step"].values = {at_step};
      std::vector<double> expected =
          graph::evaluate_reference(graph, feeds,
                                    std::vector<graph::NodeId>{*graph.find_output("dropped")})[0]
              .values;
      for (double& value : expected)  // the reference keeps an f32 value's double
        value = static_cast<float>(value);
      auto run = [&] {
        Executable executable(plan);
        test::feed(executable, feeds);
        executable.run();
        CHECK(executable.read(executable.slot("dropped")) == expected);
      };
      run();
      test::on_one_core(run);
      auto kept =
          std::count_if(expected.begin(), expected.end(), [](double v) { return v != 0.0; });
      CHECK(kept > 60'000);
      CHECK(kept < 80'000);
    }
  }
}

namespace {

// `traced` compiled as compiled_plan does, but without the pass named `left_out`.
compiler::Plan plan_without(const graph::Graph& traced, std::int64_t batch_size,
                            const compiler::PrecisionPolicy& precision, std::string_view left_out) {
  compiler::CompiledStep compiled;
  compiled.program.graph = traced;
  compiled.passes = compiler::standard_passes(precision).without(left_out).run(compiled.program);
  compiled.kernels = compiler::match_kernels(compiled.program);
  compiler::StepInfo info{"test", "fingerprint", compiler::StepKind::train, batch_size, 0};
  return compiler::build_plan(std::move(compiled), info, precision);
}

// The loss and every f32 variable after two steps of `plan`.
std::vector<std::vector<float>> after_two_steps(const compiler::Plan& plan,
                                                const graph::Feeds& feeds) {
  Executable executable(plan);
  test::feed(executable, feeds);
  executable.run();
  executable.run();
  std::vector<std::vector<float>> values{
      {static_cast<float>(executable.scalar(executable.slot("loss")))}};
  for (const graph::Variable& variable : plan.graph.variables()) {
    Executable::Slot slot = executable.slot(variable.name);
    if (executable.type(slot).dtype != DType::f32) continue;
    std::span<const float> floats = executable.floats(slot);
    values.emplace_back(floats.begin(), floats.end());
  }
  return values;
}

}  // namespace

TEST_CASE("attention's probabilities made again for the backward pass give the same steps") {
  // A sequence long against the width: the probabilities are most of what the backward reads.
  // A bfloat16 step's softmax_grad computes them itself (HostStep::row_softmax), dropping out its
  // copy and its upstream with attention's dropout, so they are never stored in f32.
  for (std::string dropout : {"0.1", "0.0"}) {
    models::TracedStep step = test::traced_step(
        "{name: gpt2, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, num_heads: 4, "
        "filter_size: 32, max_position_embeddings: 128, dropout_rate: 0.1, "
        "attention_dropout_rate: " +
            dropout + "}",
        2);
    for (compiler::PrecisionPolicy precision :
         {compiler::PrecisionPolicy{}, compiler::PrecisionPolicy{true, DType::bf16, 1}}) {
      INFO((precision.mixed ? "bfloat16" : "f32") << ", attention's dropout " << dropout);
      compiler::Plan recomputed = precision.mixed
                                      ? test::compiled_plan(step.graph, 2, DType::bf16, 1)
                                      : test::compiled_plan(step.graph, 2);
      compiler::Plan kept = plan_without(step.graph, 2, precision, "recompute-attention");
      auto backward_softmaxes = [](const compiler::Plan& plan) {
        const graph::NodeList& nodes = plan.graph.nodes();
        return std::count_if(nodes.begin(), nodes.end(), [](const graph::Node& node) {
          return node.op == graph::OpKind::softmax && node.phase == graph::Phase::backward;
        });
      };
      CHECK(backward_softmaxes(recomputed) == 2);  // one a layer
      CHECK(backward_softmaxes(kept) == 0);
      auto computed_by_gradients =
          std::count_if(recomputed.host_steps.begin(), recomputed.host_steps.end(),
                        [](const compiler::HostStep& host) { return host.row_softmax >= 0; });
      CHECK(computed_by_gradients == (precision.mixed ? 2 : 0));
      auto upstreams_dropped =
          std::count_if(recomputed.host_steps.begin(), recomputed.host_steps.end(),
                        [](const compiler::HostStep& host) { return host.upstream_dropout >= 0; });
      CHECK(upstreams_dropped == (dropout == "0.1" ? 2 : 0));
      CHECK(recomputed.memory.peak_bytes < kept.memory.peak_bytes);
      graph::Feeds feeds = test::sample_feeds(step.graph);
      CHECK(after_two_steps(recomputed, feeds) == after_two_steps(kept, feeds));
    }
  }
}

TEST_CASE("activations made again for the backward pass give the same steps") {
  // SwiGLU and RMSNorm (Llama), GELU and LayerNorm (GPT-2); in bfloat16 the gate's and the
  // feed-forward's inputs are stored as their products' 16-bit results and widened again.
  for (std::string model :
       {std::string("{name: llama, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, "
                    "num_heads: 4, filter_size: 32, max_position_embeddings: 16, "
                    "position_embedding_type: rotary, rotary_dim: 4, norm_type: rmsnorm, "
                    "nonlinearity: swiglu, share_embedding_weights: false, "
                    "use_bias_in_output: false, use_projection_bias_in_attention: false}"),
        std::string("{name: gpt2, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, "
                    "num_heads: 4, filter_size: 32, max_position_embeddings: 16}")}) {
    models::TracedStep step = test::traced_step(model, 2);
    graph::Feeds feeds = test::sample_feeds(step.graph);
    for (compiler::PrecisionPolicy precision :
         {compiler::PrecisionPolicy{}, compiler::PrecisionPolicy{true, DType::bf16, 1}}) {
      INFO(model << (precision.mixed ? ", bfloat16" : ", f32"));
      compiler::Plan recomputed = precision.mixed
                                      ? test::compiled_plan(step.graph, 2, DType::bf16, 1)
                                      : test::compiled_plan(step.graph, 2);
      compiler::Plan kept = plan_without(step.graph, 2, precision, "recompute-activations");
      CHECK(recomputed.memory.peak_bytes < kept.memory.peak_bytes);
      CHECK(after_two_steps(recomputed, feeds) == after_two_steps(kept, feeds));
    }
  }
}

TEST_CASE(
    "grouped-query attention's probabilities are rounded as their softmax writes them and made "
    "again by their gradient's step, for the same steps") {
  // Llama's queries are grouped by key/value head, so the probabilities are reshaped from the
  // heads to their groups for the product with the values, and their gradient back: the 16-bit
  // copies are taken before the reshapes, where the softmax's and the gradient's steps write them.
  for (std::string dropout : {"0.1", "0.0"}) {
    models::TracedStep step = test::traced_step(
        "{name: llama, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, num_heads: 4, "
        "attention_module: multiquery_attention, extra_attention_params: {num_kv_groups: 2}, "
        "filter_size: 32, max_position_embeddings: 128, position_embedding_type: rotary, "
        "rotary_dim: 4, norm_type: rmsnorm, nonlinearity: swiglu, share_embedding_weights: false, "
        "use_bias_in_output: false, use_projection_bias_in_attention: false, dropout_rate: " +
            dropout + ", attention_dropout_rate: " + dropout + "}",
        2);
    graph::Feeds feeds = test::sample_feeds(step.graph);
    for (compiler::PrecisionPolicy precision :
         {compiler::PrecisionPolicy{}, compiler::PrecisionPolicy{true, DType::bf16, 1}}) {
      INFO((precision.mixed ? "bfloat16" : "f32") << ", attention's dropout " << dropout);
      compiler::Plan fused = precision.mixed ? test::compiled_plan(step.graph, 2, DType::bf16, 1)
                                             : test::compiled_plan(step.graph, 2);
      auto count = [&](auto&& predicate) {
        return std::count_if(fused.host_steps.begin(), fused.host_steps.end(), predicate);
      };
      // In f32 the product with the values reads the probabilities themselves, which are stored.
      CHECK(count([](const compiler::HostStep& host) { return host.row_softmax >= 0; }) ==
            (precision.mixed ? 2 : 0));
      // Each layer's forward softmax and the one its gradient computes.
      CHECK(count([](const compiler::HostStep& host) { return host.rounded >= 0; }) ==
            (precision.mixed ? 4 : 0));
      compiler::Plan unfused = plan_without(step.graph, 2, precision, "fuse-softmax");
      CHECK(after_two_steps(fused, feeds) == after_two_steps(unfused, feeds));
    }
  }
}

namespace {

std::int64_t softmax_count(const graph::Graph& graph) {
  std::int64_t count = 0;
  for (graph::NodeId id = 0; id < static_cast<graph::NodeId>(graph.size()); ++id)
    count += graph.node(id).op == graph::OpKind::softmax ? 1 : 0;
  return count;
}

double product_flops(const graph::Graph& graph) {
  double flops = 0.0;
  for (const graph::Node& node : graph.nodes())
    flops += node.op == graph::OpKind::matmul ? graph::node_flops(graph, node) : 0.0;
  return flops;
}

// The largest relative difference between two runs' values (after_two_steps).
double largest_difference(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (std::size_t v = 0; v < a.size(); ++v) {
    REQUIRE(a[v].size() == b[v].size());
    for (std::size_t e = 0; e < a[v].size(); ++e)
      worst = std::max(worst, relative_error(a[v][e], b[v][e]));
  }
  return worst;
}

}  // namespace

TEST_CASE("attention a block of queries at a time gives the steps of whole attention") {
  // 128 queries in blocks of 48 (the last of 32): Llama's grouped queries under a causal mask,
  // GPT-2's heads with a padding mask too and attention dropout, whose masks differ by block and
  // so are checked against the reference evaluator only.
  struct Case {
    std::string model;
    bool dropout;
  };
  for (const Case& c :
       {Case{"{name: llama, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, num_heads: 4, "
             "attention_module: multiquery_attention, extra_attention_params: {num_kv_groups: 2}, "
             "filter_size: 32, max_position_embeddings: 128, position_embedding_type: rotary, "
             "rotary_dim: 4, norm_type: rmsnorm, nonlinearity: swiglu, "
             "share_embedding_weights: false, use_bias_in_output: false, "
             "use_projection_bias_in_attention: false, dropout_rate: 0.0, "
             "attention_dropout_rate: 0.0}",
             false},
        Case{"{name: gpt2, vocab_size: 40, hidden_size: 16, num_hidden_layers: 2, num_heads: 4, "
             "filter_size: 32, max_position_embeddings: 128, dropout_rate: 0.1, "
             "attention_dropout_rate: 0.1}",
             true}}) {
    INFO(c.model);
    test::CheckedTrainerModel checked = test::checked_model(c.model);
    models::TraceOptions options = checked.training_options();
    models::TracedStep whole = models::trace_step(checked.model, 2, options);
    options.attention_query_block = 48;
    models::TracedStep blocked = models::trace_step(checked.model, 2, options);
    REQUIRE(softmax_count(blocked.graph) == 3 * softmax_count(whole.graph));
    // Under the causal mask the blocks multiply only the keys their queries may see, 48, 96 and
    // 128 of them: 11,008 of a head's 16,384 scores, in each of attention's six products
    // (forward and backward) of 2 x head size (4) flops a score, for 2 samples, 4 heads and 2
    // layers.
    double hidden_scores = 2.0 * 4 * 2 * (128 * 128 - (48 * 48 + 48 * 96 + 32 * 128));
    CHECK(product_flops(whole.graph) - product_flops(blocked.graph) ==
          Approx(6 * 2 * 4 * hidden_scores));
    graph::Feeds feeds = test::sample_feeds(whole.graph);
    for (compiler::PrecisionPolicy precision :
         {compiler::PrecisionPolicy{}, compiler::PrecisionPolicy{true, DType::bf16, 1}}) {
      INFO((precision.mixed ? "bfloat16" : "f32"));
      compiler::Plan plan = precision.mixed ? test::compiled_plan(blocked.graph, 2, DType::bf16, 1)
                                            : test::compiled_plan(blocked.graph, 2);
      CHECK(step_difference(plan) <= (precision.mixed ? 2e-2 : 1e-4));
      if (c.dropout || precision.mixed) continue;
      // Only the keys' and values' gradients, summed over the blocks, add in another order.
      CHECK(largest_difference(after_two_steps(plan, feeds),
                               after_two_steps(test::compiled_plan(whole.graph, 2), feeds)) <=
            1e-5);
    }
  }
}
