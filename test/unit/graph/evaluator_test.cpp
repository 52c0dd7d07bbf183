#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "graph/counter_rng.hpp"
#include "graph/number_formats.hpp"
#include "graph/reference_evaluator.hpp"
#include "graph/tensor.hpp"

using namespace csrun::graph;

namespace {

HostTensor run(const Tensor& t, const Feeds& feeds = {}) {
  NodeId id = t.id();
  return evaluate_reference(t.graph(), feeds, std::span<const NodeId>(&id, 1))[0];
}

}  // namespace

TEST_CASE("the reference evaluator computes small cases by hand") {
  Graph graph;
  Tensor a = constant_values(graph, {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = constant_values(graph, {1, 0, 0, 1, 1, 1}, {3, 2});
  CHECK(run(matmul(a, b)).values == std::vector<double>{4, 5, 10, 11});
  CHECK(run(a + constant_values(graph, {10, 20, 30}, {3})).values ==
        std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(run(sum(a, {1})).values == std::vector<double>{6, 15});
  CHECK(run(mean(a)).values == std::vector<double>{3.5});
  CHECK(run(reduce_max(a, {0})).values == std::vector<double>{4, 5, 6});
  CHECK(run(argmax(a, 1)).values == std::vector<double>{2, 2});
  CHECK(run(transpose(a, {1, 0})).values == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(run(slice(a, 1, 1, 3)).values == std::vector<double>{2, 3, 5, 6});
  CHECK(run(pad(slice(a, 0, 0, 1), {0, 1}, {1, 0})).values ==
        std::vector<double>{0, 1, 2, 3, 0, 0, 0, 0});
  CHECK(run(concat({a, a}, 0)).shape == Shape{4, 3});
  CHECK(run(iota(graph, {2, 3}, 1)).values == std::vector<double>{0, 1, 2, 0, 1, 2});
  Tensor ids = constant_values(graph, {2, 0}, {2}, DType::i32);
  CHECK(run(gather(a, constant_values(graph, {1}, {1}, DType::i32))).values ==
        std::vector<double>{4, 5, 6});
  CHECK(run(one_hot(ids, 3)).values == std::vector<double>{0, 0, 1, 1, 0, 0});
  CHECK(run(scatter_add(ids, constant_values(graph, {1, 2, 3, 4}, {2, 2}), 3)).values ==
        std::vector<double>{3, 4, 0, 0, 1, 2});
  HostTensor s = run(softmax(constant_values(graph, {0, std::log(3.0)}, {2})));
  CHECK(s.values[0] == Approx(0.25));
  CHECK(s.values[1] == Approx(0.75));
  HostTensor ln = run(layer_norm(constant_values(graph, {1, 3}, {2}), 0.0));
  CHECK(ln.values[0] == Approx(-1.0));
  CHECK(ln.values[1] == Approx(1.0));
  CHECK(run(where(a > 3.0, a, 0.0)).values == std::vector<double>{0, 0, 0, 4, 5, 6});
  CHECK(run(cast(constant(graph, 2.7), DType::i32)).values == std::vector<double>{2});
}

TEST_CASE("casts round to the 16-bit formats, ties to even") {
  CHECK(round_to_format(1.0 + 1.0 / 256, format_of(DType::bf16)) == 1.0);  // tie, to even
  CHECK(round_to_format(1.0 + 3.0 / 256, format_of(DType::bf16)) ==
        1.0 + 4.0 / 256);  // tie, to even
  CHECK(round_to_format(65504.0, format_of(DType::f16)) == 65504.0);
  CHECK(std::isinf(round_to_format(65520.0, format_of(DType::f16))));
  CHECK(round_to_format(std::ldexp(1.0, -24), format_of(DType::f16)) ==
        std::ldexp(1.0, -24));  // subnormal
  CHECK(round_to_format(std::ldexp(1.0, -26), format_of(DType::f16)) == 0.0);
  // cbfloat16: 9 fraction bits, largest finite (2 - 2^-9) * 2^31.
  CHECK(round_to_format(1.0 + 1.0 / 1024, format_of(DType::cb16)) == 1.0);
  CHECK(round_to_format(std::ldexp(2.0 - std::ldexp(1.0, -9), 31), format_of(DType::cb16)) ==
        std::ldexp(2.0 - std::ldexp(1.0, -9), 31));
  CHECK(std::isinf(round_to_format(std::ldexp(1.0, 32), format_of(DType::cb16))));
  Graph graph;
  NodeId id = cast(constant(graph, 1.0 + 1.0 / 1024), DType::bf16).id();
  CHECK(evaluate_reference(graph, {}, std::span<const NodeId>(&id, 1))[0].values[0] == 1.0);
}

TEST_CASE("dropout is a deterministic function of seed, salt, step and element") {
  Graph graph;
  Tensor x = constant(graph, 1.0, {1000});
  Tensor step = constant(graph, 3.0, {}, DType::i32);
  HostTensor first = run(dropout(x, step, 0.25, 5, 1));
  HostTensor again = run(dropout(x, step, 0.25, 5, 1));
  HostTensor other_step = run(dropout(x, constant(graph, 4.0, {}, DType::i32), 0.25, 5, 1));
  CHECK(first.values == again.values);
  CHECK(first.values != other_step.values);
  double kept = 0;
  for (double v : first.values) {
    CHECK((v == 0.0 || v == Approx(1.0 / 0.75)));
    kept += v != 0.0;
  }
  CHECK(kept / 1000 == Approx(0.75).margin(0.05));
}

TEST_CASE("dropout's integer threshold keeps exactly the draws its uniform comparison keeps") {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  const double rates[] = {0.0,
                          -0.5,
                          0x1p-80,
                          0x1p-53,
                          0x1.8p-53,
                          0.1,
                          0.25,
                          1.0 / 3,
                          0.5,
                          0.9,
                          std::nextafter(1.0, 0.0),
                          1.0,
                          1.5,
                          kNan};
  for (double rate : rates) {
    INFO("rate " << rate);
    std::uint64_t threshold = dropout_keep_threshold(rate);
    // At the threshold a draw's value reaches the rate; one below, it does not.
    auto value = [](std::uint64_t bits) { return static_cast<double>(bits) * 0x1p-53; };
    if (threshold < (std::uint64_t{1} << 53)) CHECK(value(threshold) >= rate);
    if (threshold > 0) CHECK_FALSE(value(threshold - 1) >= rate);
    std::uint64_t step_key = dropout_step_key(5, 1, 3);
    for (std::int64_t index = 0; index < 20'000; ++index) {
      bool by_bits = dropout_keeps_bits(step_key, index, threshold);
      if (by_bits != dropout_keeps(step_key, index, rate)) FAIL("element " << index);
    }
  }
}

TEST_CASE("feeds are checked") {
  Graph graph;
  Tensor x(graph, graph.add_input("x", {{2}, DType::f32}));
  NodeId id = (x * 2.0).id();
  CHECK_THROWS_WITH(evaluate_reference(graph, {}, std::span<const NodeId>(&id, 1)),
                    "no value fed for x");
  Feeds wrong = {{"x", HostTensor::filled({3}, 1.0)}};
  CHECK_THROWS_WITH(evaluate_reference(graph, wrong, std::span<const NodeId>(&id, 1)),
                    "the value fed for x is [3], not f32[2]");
}

TEST_CASE(
    "softmax cross-entropy: the loss at the label, its gradient, 0 for a label out of range") {
  Graph graph;
  Tensor logits = constant_values(graph, {0, std::log(3.0), 5, 5}, {2, 2});
  Tensor labels = constant_values(graph, {1, -100}, {2}, DType::i32);
  HostTensor loss = run(softmax_cross_entropy(logits, labels));
  CHECK(loss.values[0] == Approx(-std::log(0.75)));
  CHECK(loss.values[1] == 0.0);
  Tensor g = constant_values(graph, {2, 2}, {2});
  HostTensor gradient = run(softmax_cross_entropy_grad(logits, labels, g));
  CHECK(gradient.values[0] == Approx(0.5));   // 2 * (0.25 - 0)
  CHECK(gradient.values[1] == Approx(-0.5));  // 2 * (0.75 - 1)
  CHECK(gradient.values[2] == 0.0);
  CHECK(gradient.values[3] == 0.0);
  CHECK_THROWS_WITH(
      softmax_cross_entropy(logits, constant_values(graph, {1, 1, 1}, {3}, DType::i32)),
      Catch::Contains("do not match the rows of logits"));
}
