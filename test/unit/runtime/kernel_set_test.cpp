// The kernel sets (the hot kernels built for several instruction sets, one chosen at start-up):
// each exports only its entry, every set this CPU runs converts 16-bit values bit for bit as the
// scalar conversions do, and a training step gives the same results on every set, within the
// tolerances docs/install.md states, and the same bits twice on one set.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/scratch_layout.hpp"
#include "graph/tensor.hpp"
#include "runtime/bf16_dot_rate.hpp"
#include "runtime/cpu_features.hpp"
#include "runtime/half_precision.hpp"
#include "runtime/host_kernels.hpp"
#include "runtime/kernel_set.hpp"
#include "runtime/thread_team.hpp"
#include "runtime_fixture.hpp"
#include "support/step_fixture.hpp"

using namespace csrun;
using graph::DType;
using runtime::Executable;

namespace {

std::string command_output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::string text;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr)
    text += buffer.data();
  return text;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> all;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    all.push_back(line);
  return all;
}

struct StepResult {
  std::vector<std::vector<double>> values;  // outputs, then variables after the update
};

StepResult run_step(const compiler::Plan& plan, const graph::Feeds& feeds,
                    std::string_view kernel_set) {
  Executable executable(plan, kernel_set);
  test::feed(executable, feeds);
  executable.run();
  StepResult result;
  for (const graph::NamedNode& output : plan.graph.outputs())
    result.values.push_back(executable.read(executable.slot(output.name)));
  for (const graph::NamedNode& update : plan.graph.updates())
    result.values.push_back(executable.read(executable.slot(update.name)));
  return result;
}

double largest_difference(const StepResult& a, const StepResult& b) {
  REQUIRE(a.values.size() == b.values.size());
  double worst = 0.0;
  for (std::size_t v = 0; v < a.values.size(); ++v) {
    REQUIRE(a.values[v].size() == b.values[v].size());
    for (std::size_t e = 0; e < a.values[v].size(); ++e) {
      double x = a.values[v][e], y = b.values[v][e];
      if (std::isnan(x) && std::isnan(y)) continue;
      worst = std::max(worst, std::fabs(x - y) / std::max(1.0, std::fabs(y)));
    }
  }
  return worst;
}

const char* const kSetModels[] = {
    "{name: fc_mnist, hidden_sizes: [96, 80], dropout: 0.25}",
    "{name: gpt2, vocab_size: 40, hidden_size: 32, num_hidden_layers: 2, num_heads: 2, "
    "filter_size: 64, max_position_embeddings: 16, dropout_rate: 0.1}",
    "{name: bert, vocab_size: 40, hidden_size: 16, num_hidden_layers: 1, num_heads: 2, "
    "filter_size: 32, max_position_embeddings: 8}",
};

// `count` random values, each exactly a bfloat16 value.
std::vector<double> bf16_values(std::int64_t count, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal;
  std::vector<double> values(static_cast<std::size_t>(count));
  for (double& value : values)
    value =
        runtime::widen_from_half(runtime::narrow_to_half(normal(random), DType::bf16), DType::bf16);
  return values;
}

// One product of two bfloat16 operands, as stored (a transposed operand is read through a
// transpose the GEMM folds), its result in `result`, optionally plus a bias per column.
struct ProductCase {
  const char* name;
  graph::Shape a, b;
  bool transpose_a = false, transpose_b = false;
  DType result = DType::f32;
  bool bias = false;
  // A 16-bit result of many tiles, each computed in f32 in a band of its core's and rounded: the
  // f32 result is never whole where the set widens.
  bool rounded_by_tiles = false;
};

graph::Shape swapped(graph::Shape shape) {
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return shape;
}

// The product in double, and for each element the sum of |a b| over its terms.
struct ExactProduct {
  std::vector<double> values, magnitudes;
};

// Matrix `batch` of op(t), element (row, column): t as stored, or its last two axes swapped.
struct MatrixView {
  MatrixView(const graph::HostTensor& t, bool transposed)
      : values(t.values.data()),
        batch_stride(t.shape[t.shape.size() - 2] * t.shape.back()),
        row_stride(transposed ? 1 : t.shape.back()),
        column_stride(transposed ? t.shape.back() : 1) {}

  double at(std::int64_t batch, std::int64_t row, std::int64_t column) const {
    return values[batch * batch_stride + row * row_stride + column * column_stride];
  }

  const double* values;
  std::int64_t batch_stride, row_stride, column_stride;
};

ExactProduct exact_product(const ProductCase& c, const graph::Feeds& feeds) {
  graph::Shape a = c.transpose_a ? swapped(c.a) : c.a;  // m x k, logically
  graph::Shape b = c.transpose_b ? swapped(c.b) : c.b;  // k x n
  std::int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  std::int64_t batches = graph::element_count(a) / (m * k);
  MatrixView left(feeds.at("a"), c.transpose_a), right(feeds.at("b"), c.transpose_b);
  const std::vector<double>* bias = c.bias ? &feeds.at("bias").values : nullptr;
  ExactProduct exact;
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = bias ? (*bias)[static_cast<std::size_t>(j)] : 0.0;
        double magnitude = std::fabs(sum);
        for (std::int64_t l = 0; l < k; ++l) {
          double term = left.at(batch, i, l) * right.at(batch, l, j);
          sum += term;
          magnitude += std::fabs(term);
        }
        exact.values.push_back(sum);
        exact.magnitudes.push_back(magnitude);
      }
    }
  }
  return exact;
}

}  // namespace

TEST_CASE("each kernel set exports only its entry point") {
  // Everything else is local to the set, so no function compiled for one instruction set can
  // be linked into another set's callers.
  std::vector<std::string> objects;
  std::istringstream list(CSRUN_KERNEL_SET_OBJECTS);
  for (std::string object; std::getline(list, object, ',');)
    objects.push_back(object);
  REQUIRE(objects.size() == runtime::kernel_set_names().size());
  for (const std::string& object : objects) {
    INFO(object);
    std::vector<std::string> defined =
        lines(command_output("nm --extern-only --defined-only '" + object + "'"));
    REQUIRE(defined.size() == 1);
    CHECK(defined[0].find(" csrun_kernel_set_") != std::string::npos);
  }
}

TEST_CASE("the chosen kernel set is one this CPU runs, and an unknown one is refused") {
  std::vector<std::string_view> runnable = runtime::runnable_kernel_sets();
  REQUIRE_FALSE(runnable.empty());
  CHECK(std::find(runnable.begin(), runnable.end(), runtime::selected_kernel_set()) !=
        runnable.end());
  CHECK(runtime::kernel_set_summary().starts_with(std::string(runtime::selected_kernel_set())));
  CHECK_THROWS_WITH(runtime::kernel_set("sse9"),
                    Catch::Contains("this csrun has no kernel set 'sse9'; it has"));
  for (std::string_view name : runtime::kernel_set_names()) {
    if (std::find(runnable.begin(), runnable.end(), name) != runnable.end()) continue;
    CHECK_THROWS_WITH(
        runtime::kernel_set(name),
        Catch::Contains("this CPU cannot run the " + std::string(name) + " kernels: it lacks"));
  }
}

TEST_CASE("the avx512bf16 set is chosen only where its dot products multiply-add as fast as FMAs") {
  std::vector<std::string_view> features = runtime::cpu_features();
  std::vector<std::string_view> runnable = runtime::runnable_kernel_sets();
  const char* forced = std::getenv("CSRUN_CPU");
  bool chooses = forced == nullptr || *forced == '\0' || std::string_view(forced) == "auto";
  bool offered = std::find(runnable.begin(), runnable.end(), "avx512bf16") != runnable.end() &&
                 std::find(runnable.begin(), runnable.end(), "amx") == runnable.end();
  if (std::find(features.begin(), features.end(), "avx512_bf16") == features.end() || !chooses ||
      !offered) {
    SUCCEED("csrun chooses no set by the dot products' rate here");
    return;
  }
  double rate = runtime::bf16_dot_rate();
  INFO("AVX512_BF16 dot products at " << rate << "x the f32 FMAs' multiply-adds");
  // The CPUs measured sit far from 1 (about 0.5 and 2): a second measurement agrees.
  REQUIRE(std::isfinite(rate));
  REQUIRE(rate > 0.1);
  REQUIRE(rate < 10.0);
  std::string summary = runtime::kernel_set_summary();
  INFO(summary);
  if (rate >= 1.0) {
    CHECK(runtime::selected_kernel_set() == "avx512bf16");
    CHECK(summary.find("dot products") == std::string::npos);
  } else {
    CHECK(runtime::selected_kernel_set() == "avx512");
    CHECK(
        summary.starts_with("avx512 (the fastest set this CPU runs: its AVX512_BF16 dot products "
                            "multiply-add at 0."));
    CHECK(summary.find("x the rate of its f32 FMAs, so the avx512bf16 set's bfloat16 GEMMs would "
                       "be slower; CSRUN_CPU=") != std::string::npos);
  }
}

TEST_CASE("every kernel set converts 16-bit values bit for bit as the scalar conversions do") {
  std::vector<float> values = test::rounding_patterns();
  std::vector<std::uint16_t> every_half(0x10000);
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits)
    every_half[bits] = static_cast<std::uint16_t>(bits);
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    const runtime::KernelSet& kernels = runtime::kernel_set(name);
    for (DType dtype : {DType::bf16, DType::f16, DType::cb16}) {
      INFO(name << " " << graph::dtype_name(dtype));
      std::vector<std::uint16_t> narrowed(values.size());
      kernels.narrow(values.data(), narrowed.data(), static_cast<std::int64_t>(values.size()),
                     dtype);
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < values.size(); ++i)
        mismatches += narrowed[i] != runtime::narrow_to_half(values[i], dtype);
      CHECK(mismatches == 0);
      std::vector<float> widened(every_half.size());
      kernels.widen(every_half.data(), widened.data(), static_cast<std::int64_t>(widened.size()),
                    dtype);
      mismatches = 0;
      for (std::size_t bits = 0; bits < every_half.size(); ++bits) {
        float expected = runtime::widen_from_half(every_half[bits], dtype);
        mismatches +=
            std::bit_cast<std::uint32_t>(widened[bits]) != std::bit_cast<std::uint32_t>(expected);
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("a training step gives the same bits twice on one kernel set and agrees across sets") {
  for (const char* model : kSetModels) {
    models::TracedStep step = test::traced_step(model, 4);
    graph::Feeds feeds = test::sample_feeds(step.graph);
    struct Variant {
      const char* name;
      compiler::Plan plan;
      double tolerance;
    };
    // f32: the sets differ in summation order and in the last bits of vectorized exp and tanh.
    // 16-bit: such a difference can round a 16-bit value the other way, one unit in its last
    // place.
    Variant variants[] = {{"f32", test::compiled_plan(step.graph, 4), 1e-5},
                          {"bf16", test::compiled_plan(step.graph, 4, DType::bf16, 1), 2e-2}};
    for (const Variant& variant : variants) {
      std::vector<std::string_view> sets = runtime::runnable_kernel_sets();
      StepResult first = run_step(variant.plan, feeds, sets.front());
      for (std::string_view name : sets) {
        INFO(model << " " << variant.name << ": " << name << " against " << sets.front());
        StepResult result = run_step(variant.plan, feeds, name);
        CHECK(largest_difference(result, first) <= variant.tolerance);
        CHECK(run_step(variant.plan, feeds, name).values == result.values);
      }
    }
  }
}

// The amx set multiplies two bfloat16 operands on AMX tiles and the avx512bf16 set with
// AVX512_BF16's dot products (oneDNN's matmul), the others widen them to f32; f32 operands go to
// oneDNN's f32 kernels in the three AVX-512 sets where they measure faster
// (not a transposed left operand, not a sum of more than 4096 terms, not a right-hand operand of
// more than 2^20 elements read as stored) or where OpenBLAS runs no AVX-512 kernels, else to
// sgemm (f32_gemm_library.hpp). The operands hold bfloat16 values, so
// every term is exact in f32 and all sum them in f32, in different orders: each element is within
// k 2^-23 of the sum of its terms' magnitudes, plus 2^-126 per term for the subnormals the
// hardware takes as zero; a 16-bit result rounds that once more.
namespace {
void check_products(const std::vector<std::string_view>& sets, DType operands) {
  const ProductCase cases[] = {
      {"a linear layer with a bias, in row blocks across the team",
       {520, 200},
       {72, 200},
       false,
       true,
       DType::f32,
       true},
      {"a transposed left operand (a weight's gradient)", {256, 96}, {256, 80}, true, false},
      {"a linear layer with a bias, in two short row blocks",
       {300, 64},
       {560, 64},
       false,
       true,
       DType::f32,
       true},
      {"a weight's gradient in a power of two of row blocks", {64, 1600}, {64, 520}, true, false},
      {"a product of few rows with a bias, in two column halves",
       {32, 300},
       {600, 300},
       false,
       true,
       DType::f32,
       true},
      {"a product of few rows, its bfloat16 result in two column halves",
       {40, 200},
       {200, 520},
       false,
       false,
       DType::bf16},
      {"attention heads", {4, 2, 64, 32}, {4, 2, 48, 32}, false, true},
      // Heads shared out across the cores, each widening its own 16-bit left operand.
      {"attention heads across the cores", {2, 4, 128, 160}, {2, 4, 160, 64}},
      {"attention heads across the cores, transposed", {2, 4, 160, 128}, {2, 4, 160, 64}, true},
      {"attention heads across the cores, a 16-bit result",
       {2, 4, 128, 160},
       {2, 4, 160, 64},
       false,
       false,
       DType::bf16},
      // Left operands too large to widen whole, widened a block of 1023 rows at a time (and one).
      {"attention heads of long sequences", {2, 1024, 4100}, {2, 4100, 16}},
      {"attention heads of long sequences, transposed", {2, 4100, 1024}, {2, 4100, 16}, true},
      {"a bfloat16 result", {128, 64}, {64, 96}, false, false, DType::bf16},
      // 16 row blocks of 256 or 257 rows.
      {"a tall 16-bit result, rounded a tile at a time",
       {4100, 64},
       {520, 64},
       false,
       true,
       DType::bf16,
       false,
       true},
      {"a tall 16-bit result from a transposed left operand, rounded a tile at a time",
       {64, 4100},
       {64, 520},
       true,
       false,
       DType::bf16,
       false,
       true},
      {"a sum of more terms than oneDNN's f32 kernels take", {130, 4100}, {4100, 24}},
      {"a right-hand operand larger than oneDNN's f32 kernels take", {130, 1030}, {1030, 1020}},
  };
  // bfloat16 values, held in the operands' type (exactly but for a few tiny float16 ones).
  auto values = [&](const graph::Shape& shape, std::uint32_t seed) {
    std::vector<double> held = bf16_values(graph::element_count(shape), seed);
    if (operands == DType::f32) return held;
    for (double& value : held) {
      auto rounded = static_cast<float>(value);
      value = runtime::widen_from_half(runtime::narrow_to_half(rounded, operands), operands);
    }
    return held;
  };
  for (const ProductCase& c : cases) {
    // A product's result is f32 or its operands' 16-bit type.
    if (c.result != DType::f32 && operands == DType::f32) continue;
    DType result = c.result == DType::f32 ? DType::f32 : operands;
    graph::Graph graph;
    graph::Tensor a(graph, graph.add_input("a", {c.a, operands}));
    graph::Tensor b(graph, graph.add_input("b", {c.b, operands}));
    graph::Attributes attrs;
    attrs.dtype = result;
    graph::NodeId product = graph.add(graph::OpKind::matmul,
                                      {(c.transpose_a ? graph::swap_last_axes(a) : a).id(),
                                       (c.transpose_b ? graph::swap_last_axes(b) : b).id()},
                                      std::move(attrs));
    graph::Shape out_shape = graph.node(product).type.shape;
    graph::Feeds feeds{{"a", {c.a, operands, values(c.a, 1)}},
                       {"b", {c.b, operands, values(c.b, 2)}}};
    if (c.bias) {
      graph::Shape bias_shape{out_shape.back()};
      graph::Tensor bias(graph, graph.add_input("bias", {bias_shape, DType::f32}));
      product = (graph::Tensor(graph, product) + bias).id();
      feeds["bias"] = {bias_shape, DType::f32, bf16_values(out_shape.back(), 3)};
    }
    graph.add_output("result", product);
    compiler::Plan plan = test::compiled_plan(graph, 1);
    ExactProduct exact = exact_product(c, feeds);
    std::int64_t k = c.transpose_a ? c.a[c.a.size() - 2] : c.a.back();
    for (std::string_view name : sets) {
      INFO(c.name << " on the " << name << " set, " << graph::dtype_name(operands) << " operands");
      Executable executable(plan, name);
      test::feed(executable, feeds);
      executable.run();
      std::vector<double> actual = executable.read(executable.slot("result"));
      REQUIRE(actual.size() == exact.values.size());
      std::size_t outside = 0;
      for (std::size_t e = 0; e < actual.size(); ++e) {
        double bound =
            static_cast<double>(k) * (std::ldexp(exact.magnitudes[e], -23) + std::ldexp(1.0, -126));
        if (result != DType::f32) bound += std::ldexp(std::fabs(exact.values[e]), -8);
        outside += std::fabs(actual[e] - exact.values[e]) > bound;
      }
      CHECK(outside == 0);
      // The compiler's scratch layout bounds what the executable takes beside its arena (its two
      // areas each rounded up to whole cache lines) on this set: what host-memory estimates
      // count.
      bool hardware_bf16 = runtime::kernel_set(name).multiplies_bf16();
      CHECK(hardware_bf16 == (name == "amx" || name == "avx512bf16"));
      CHECK(executable.scratch_bytes() <= plan.scratch.bytes(hardware_bf16, runtime::host_cores()) +
                                              2 * compiler::kBufferAlignment);
      bool bands = runtime::host_cores() < 16 && !(hardware_bf16 && operands == DType::bf16);
      if (c.rounded_by_tiles && bands) {
        CHECK(executable.scratch_bytes() <
              static_cast<std::int64_t>(exact.values.size() * sizeof(float)));
      }
      // A set that multiplies bfloat16 in hardware rounds a bfloat16 result in its GEMM: no f32
      // copy of it, no widened operands.
      if ((name == "amx" || name == "avx512bf16") && result == DType::bf16) {
        CHECK(executable.scratch_bytes() <
              static_cast<std::int64_t>(exact.values.size() * sizeof(std::uint16_t)));
      }
    }
  }
}
}  // namespace

TEST_CASE("bfloat16 products are the exact products summed in f32 on every kernel set") {
  check_products(runtime::runnable_kernel_sets(), DType::bf16);
}

TEST_CASE(
    "f32 products are the products summed in f32 on every kernel set, through oneDNN or sgemm") {
  check_products(runtime::runnable_kernel_sets(), DType::f32);
}

TEST_CASE(
    "cbfloat16 and float16 products are the exact products summed in f32 on every kernel set") {
  // No set multiplies them in hardware: each widens the left operand's rows and rounds the
  // result a tile at a time, next to the tile's GEMM call.
  check_products(runtime::runnable_kernel_sets(), DType::cb16);
  check_products(runtime::runnable_kernel_sets(), DType::f16);
}

namespace {
// In a process of its own (CTest runs each case alone) the set is the first to make oneDNN
// kernels, so it pins them to its own instructions, as on a CPU with no better ones.
void check_products_alone(std::string_view set) {
  std::vector<std::string_view> sets = runtime::runnable_kernel_sets();
  if (std::find(sets.begin(), sets.end(), set) == sets.end()) {
    WARN("this CPU cannot run the " << set << " kernels");
    return;
  }
  check_products({set}, DType::bf16);
  check_products({set}, DType::f32);
}
}  // namespace

TEST_CASE("the avx512bf16 set's products are exact products summed in f32") {
  // AVX512_BF16's dot products, as on a CPU without AMX.
  check_products_alone("avx512bf16");
}

TEST_CASE("the avx512 set's products are exact products summed in f32") {
  // AVX-512 F, as on a CPU without AVX512_BF16 (Skylake-SP to Ice Lake): bfloat16 operands are
  // widened to f32.
  check_products_alone("avx512");
}

namespace {

// Losses and logit gradients of 96 rows of 1003 classes (enough for the kernels to split the
// rows across the team, each part with a row buffer of its own), labels outside [0, 1003) on
// some rows, and the products that read the gradient. With explicit casts the logits are
// widened to f32 before the loss; without, mixed precision lowers the graph to bfloat16.
constexpr std::int64_t kCrossEntropyRows = 96;

graph::Feeds cross_entropy_feeds() {
  const graph::Shape x_shape{kCrossEntropyRows, 24};
  const graph::Shape w_shape{24, 1003};
  std::vector<double> labels(kCrossEntropyRows);
  std::vector<double> g(kCrossEntropyRows);
  for (std::size_t r = 0; r < labels.size(); ++r) {
    labels[r] = r % 17 == 5 ? -1.0 : static_cast<double>((r * 389) % 1003);
    g[r] = 0.125 * static_cast<double>(r % 9) - 0.5;
  }
  labels[3] = 1002.0;
  return {{"x", {x_shape, DType::f32, bf16_values(graph::element_count(x_shape), 4)}},
          {"w", {w_shape, DType::f32, bf16_values(graph::element_count(w_shape), 5)}},
          {"labels", {{kCrossEntropyRows}, DType::i32, labels}},
          {"g", {{kCrossEntropyRows}, DType::f32, g}}};
}

graph::Graph cross_entropy_graph(bool explicit_casts) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("x", {{kCrossEntropyRows, 24}, DType::f32}));
  graph::Tensor w(graph, graph.add_input("w", {{24, 1003}, DType::f32}));
  graph::Tensor labels(graph, graph.add_input("labels", {{kCrossEntropyRows}, DType::i32}));
  graph::Tensor g(graph, graph.add_input("g", {{kCrossEntropyRows}, DType::f32}));
  auto half = [&](const graph::Tensor& t) {
    return explicit_casts ? graph::cast(t, DType::bf16) : t;
  };
  auto widened = [&](const graph::Tensor& t) {
    return explicit_casts ? graph::cast(t, DType::f32) : t;
  };
  graph::Tensor logits = widened(graph::matmul(half(x), half(w)));
  graph::Tensor gradient = graph::softmax_cross_entropy_grad(logits, labels, g);
  graph.add_output("loss", graph::softmax_cross_entropy(logits, labels).id());
  graph.add_output("dx",
                   widened(graph::matmul(half(gradient), graph::swap_last_axes(half(w)))).id());
  graph.add_output("dw",
                   widened(graph::matmul(graph::swap_last_axes(half(x)), half(gradient))).id());
  return graph;
}

}  // namespace

// Mixed precision hands the loss and its gradient a product's bfloat16 logits as they are, and
// lets the gradient's kernel round it to bfloat16 when only products read it: the same bits as
// widening the logits, computing in f32 and rounding the gradient with casts.
namespace {
// The values of a product of `a` and `b` (bfloat16 values held in `operands`), its result in
// `result`, on the kernel set `name`.
std::vector<double> product_values(const graph::Shape& a, const graph::Shape& b, bool transpose_a,
                                   DType operands, DType result, std::string_view name) {
  graph::Graph graph;
  graph::Tensor x(graph, graph.add_input("a", {a, operands}));
  graph::Tensor y(graph, graph.add_input("b", {b, operands}));
  graph::Attributes attrs;
  attrs.dtype = result;
  graph.add_output("result",
                   graph.add(graph::OpKind::matmul,
                             {(transpose_a ? graph::swap_last_axes(x) : x).id(), y.id()}, attrs));
  graph::Feeds feeds{{"a", {a, operands, bf16_values(graph::element_count(a), 1)}},
                     {"b", {b, operands, bf16_values(graph::element_count(b), 2)}}};
  return run_step(test::compiled_plan(graph, 1), feeds, name).values.front();
}
}  // namespace

TEST_CASE("a 16-bit product's result is its f32 product rounded, bit for bit, tile by tile") {
  // Computed a tile at a time in a core's band and rounded from there, the result is what the
  // same product computed in f32 where it lies rounds to: in 16 row blocks, in column halves (8
  // row blocks of two), and many products.
  struct Shapes {
    graph::Shape a, b;
    bool transpose_a;
  };
  for (const Shapes& shapes :
       {Shapes{{4100, 64}, {64, 520}, false}, Shapes{{64, 4100}, {64, 520}, true},
        Shapes{{40, 200}, {200, 520}, false}, Shapes{{3, 300, 64}, {3, 64, 200}, false}}) {
    // The sets in their order, so that the first to make oneDNN kernels is the one with the most
    // instructions (check_products_alone).
    for (std::string_view name : runtime::runnable_kernel_sets()) {
      for (DType operands : {DType::bf16, DType::cb16, DType::f16}) {
        if (operands == DType::bf16 && runtime::kernel_set(name).multiplies_bf16()) continue;
        INFO(graph::dtype_name(operands) << " operands on the " << name << " set");
        std::vector<double> wide =
            product_values(shapes.a, shapes.b, shapes.transpose_a, operands, DType::f32, name);
        std::vector<double> rounded =
            product_values(shapes.a, shapes.b, shapes.transpose_a, operands, operands, name);
        REQUIRE(wide.size() == rounded.size());
        std::size_t differ = 0;
        for (std::size_t e = 0; e < wide.size(); ++e) {
          double expected = runtime::widen_from_half(
              runtime::narrow_to_half(static_cast<float>(wide[e]), operands), operands);
          differ += expected != rounded[e];
        }
        CHECK(differ == 0);
      }
    }
  }
}

TEST_CASE("cross-entropy on bfloat16 logits gives the bits of widening them first") {
  graph::Feeds feeds = cross_entropy_feeds();
  compiler::Plan lowered = test::compiled_plan(cross_entropy_graph(false), 1, DType::bf16, 1);
  compiler::Plan widened = test::compiled_plan(cross_entropy_graph(true), 1);
  auto reads_bf16_logits = [](const graph::Graph& graph, graph::OpKind op) {
    for (const graph::Node& node : graph.nodes()) {
      if (node.op == op) return graph.node(node.inputs[0]).type.dtype == DType::bf16;
    }
    return false;
  };
  CHECK(reads_bf16_logits(lowered.graph, graph::OpKind::softmax_cross_entropy));
  CHECK(reads_bf16_logits(lowered.graph, graph::OpKind::softmax_cross_entropy_grad));
  CHECK_FALSE(reads_bf16_logits(widened.graph, graph::OpKind::softmax_cross_entropy));
  for (const graph::Node& node : lowered.graph.nodes()) {
    if (node.op == graph::OpKind::softmax_cross_entropy_grad) CHECK(node.type.dtype == DType::bf16);
  }
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    INFO(name);
    CHECK(run_step(lowered, feeds, name).values == run_step(widened, feeds, name).values);
  }
}

// Each part of the team widens its rows into a buffer of its own: a row's bits must not depend on
// which part, or how many, there are.
TEST_CASE("cross-entropy on bfloat16 logits gives the same bits on one core and on every core") {
  if (runtime::ThreadTeam::available_cores() < 2) {
    WARN("one core: nothing to compare");
    return;
  }
  graph::Feeds feeds = cross_entropy_feeds();
  compiler::Plan lowered = test::compiled_plan(cross_entropy_graph(false), 1, DType::bf16, 1);
  for (std::string_view name : runtime::runnable_kernel_sets()) {
    INFO(name);
    StepResult every_core = run_step(lowered, feeds, name);
    test::on_one_core([&] { CHECK(run_step(lowered, feeds, name).values == every_core.values); });
  }
}
