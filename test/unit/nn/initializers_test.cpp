#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nn/initializers.hpp"

using namespace csrun;

namespace {

struct Moments {
  double mean;
  double std;
};

Moments moments(const std::vector<float>& values) {
  double mean =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  double variance = 0.0;
  for (float v : values)
    variance += (v - mean) * (v - mean);
  return {mean, std::sqrt(variance / static_cast<double>(values.size()))};
}

graph::Initializer named(const std::string& name) {
  graph::Initializer init;
  init.name = name;
  return init;
}

}  // namespace

TEST_CASE("initial values are a pure function of seed and name") {
  graph::Initializer init = nn::normal_initializer(0.02);
  auto a = nn::initial_values(init, {64, 32}, 1, "model.w");
  CHECK(a == nn::initial_values(init, {64, 32}, 1, "model.w"));
  CHECK(a != nn::initial_values(init, {64, 32}, 2, "model.w"));
  CHECK(a != nn::initial_values(init, {64, 32}, 1, "model.v"));
}

TEST_CASE("initializers have the distributions they name") {
  Moments normal =
      moments(nn::initial_values(nn::normal_initializer(0.5, 1.0), {200, 100}, 3, "n"));
  CHECK(normal.mean == Approx(1.0).margin(0.01));
  CHECK(normal.std == Approx(0.5).epsilon(0.02));

  graph::Initializer truncated = named("truncated_normal");
  truncated.std = 0.02;
  truncated.a = -0.04;
  truncated.b = 0.04;
  auto values = nn::initial_values(truncated, {100, 100}, 3, "t");
  CHECK(*std::min_element(values.begin(), values.end()) >= -0.04f);
  CHECK(*std::max_element(values.begin(), values.end()) <= 0.04f);
  // A normal truncated at two standard deviations keeps 88% of its variance.
  CHECK(moments(values).std == Approx(0.02 * std::sqrt(0.774)).epsilon(0.03));

  graph::Initializer uniform = named("uniform");
  uniform.a = -0.3;
  uniform.b = 0.1;
  auto u = nn::initial_values(uniform, {10000}, 3, "u");
  CHECK(*std::min_element(u.begin(), u.end()) >= -0.3f);
  CHECK(*std::max_element(u.begin(), u.end()) < 0.1f);
  CHECK(moments(u).mean == Approx(-0.1).margin(0.01));

  // Xavier uniform on a [out=300, in=100] weight: bound sqrt(6 / 400).
  auto x = nn::initial_values(named("xavier_uniform"), {300, 100}, 3, "x");
  CHECK(*std::max_element(x.begin(), x.end()) <= static_cast<float>(std::sqrt(6.0 / 400.0)));
  CHECK(moments(x).std == Approx(std::sqrt(6.0 / 400.0) / std::sqrt(3.0)).epsilon(0.02));

  CHECK(nn::initial_values(named("zeros"), {3}, 1, "z") == std::vector<float>{0, 0, 0});
  CHECK(nn::initial_values(named("ones"), {2}, 1, "o") == std::vector<float>{1, 1});
  CHECK_THROWS_WITH(nn::initial_values(named("orthogonal"), {2, 2}, 1, "w"),
                    "csrun has no initializer 'orthogonal'");
}

TEST_CASE("initializers from model params") {
  config::Node spec = config::Node::make_map();
  spec.set("name", config::Node::make_string("truncated_normal"));
  spec.set("std", config::Node::make_number(0.02));
  graph::Initializer init = nn::initializer_from(&spec, nn::zeros_initializer());
  CHECK(init.name == "truncated_normal");
  CHECK(init.a == Approx(-0.04));
  CHECK(init.b == Approx(0.04));
  CHECK(nn::initializer_from(nullptr, nn::ones_initializer()).name == "ones");
}

namespace {

// The initializer a params mapping of these entries gives.
graph::Initializer from_params(const std::vector<std::pair<std::string, config::Node>>& params) {
  config::Node spec = config::Node::make_map();
  for (const auto& [key, value] : params)
    spec.set(key, value);
  return nn::initializer_from(&spec, nn::zeros_initializer());
}

config::Node text(const char* value) {
  return config::Node::make_string(value);
}

config::Node number(double value) {
  return config::Node::make_number(value);
}

}  // namespace

TEST_CASE("initializers take the Model Zoo's parameters and defaults") {
  // create_initializer's defaults: normal and truncated_normal of std 0.05 (truncated at two
  // deviations around 0), uniform in +-0.05; a name alone means the same.
  graph::Initializer normal = from_params({{"name", text("normal")}});
  CHECK(normal.std == 0.05);
  config::Node truncated_name = text("truncated_normal");
  graph::Initializer truncated = nn::initializer_from(&truncated_name, nn::zeros_initializer());
  CHECK(truncated.std == 0.05);
  CHECK(truncated.a == Approx(-0.1));
  CHECK(truncated.b == Approx(0.1));
  graph::Initializer uniform = from_params({{"name", text("uniform")}});
  CHECK(uniform.a == -0.05);
  CHECK(uniform.b == 0.05);

  // variance_scaling: variance scale / fan of a [out=400, in=100] weight.
  auto spread = [](const graph::Initializer& init) {
    return moments(nn::initial_values(init, {400, 100}, 5, "v")).std;
  };
  CHECK(spread(from_params({{"name", text("variance_scaling")},
                            {"scale", number(2.0)},
                            {"distribution", text("normal")}})) ==
        Approx(std::sqrt(2.0 / 100)).epsilon(0.02));
  graph::Initializer fan_out = from_params({{"name", text("variance_scaling")},
                                            {"mode", text("fan_out")},
                                            {"distribution", text("uniform")}});
  std::vector<float> u = nn::initial_values(fan_out, {400, 100}, 5, "v");
  CHECK(*std::max_element(u.begin(), u.end()) <= static_cast<float>(std::sqrt(3.0 / 400)));
  CHECK(moments(u).std == Approx(std::sqrt(1.0 / 400)).epsilon(0.02));
  // Its truncated normal divides the std by 0.8796 and cuts at torch's absolute +-2, which these
  // small values never reach: the spread is 1.137 times sqrt(variance).
  graph::Initializer lecun = from_params({{"name", text("lecun_normal")}});
  CHECK(lecun.distribution == "truncated_normal");
  CHECK(spread(lecun) == Approx(std::sqrt(1.0 / 100) / 0.87962566).epsilon(0.02));
  CHECK(spread(from_params({{"name", text("variance_scaling")}, {"mode", text("fan_avg")}})) ==
        Approx(std::sqrt(1.0 / 250) / 0.87962566).epsilon(0.02));

  // kaiming: the gain of its nonlinearity (leaky_relu of slope a by default), over mode's fan.
  CHECK(spread(from_params({{"name", text("kaiming_normal")}})) ==
        Approx(std::sqrt(2.0 / 100)).epsilon(0.02));
  CHECK(spread(from_params({{"name", text("kaiming_normal")},
                            {"mode", text("fan_out")},
                            {"nonlinearity", text("tanh")}})) ==
        Approx(5.0 / 3.0 / std::sqrt(400.0)).epsilon(0.02));
  CHECK(from_params({{"name", text("kaiming_uniform")}, {"a", number(1.0)}}).gain == Approx(1.0));
}

TEST_CASE("eye fills a weight's diagonal, and a number may be a nonlinearity's gain") {
  CHECK(nn::initial_values(named("eye"), {3, 4}, 1, "w") ==
        std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  std::vector<float> part(4);
  nn::InitialValues(named("eye"), {4, 3}, 1, "w").fill(part, 6);
  CHECK(part == std::vector<float>{0, 0, 1, 0});
  CHECK_THROWS_WITH(nn::initial_values(named("eye"), {2, 3, 4}, 1, "conv.weight"),
                    "the eye initializer fills only 2-D weights (torch.nn.init.eye_), and "
                    "conv.weight has 3 dimensions");
  // create_initializer's _get_spec_value: {gain: relu} is calculate_gain('relu').
  CHECK(from_params({{"name", text("xavier_uniform")}, {"gain", text("relu")}}).gain ==
        Approx(std::sqrt(2.0)));
  CHECK(from_params({{"name", text("glorot_normal")}, {"gain", text("tanh")}}).gain ==
        Approx(5.0 / 3.0));
  CHECK(from_params({{"name", text("normal")}, {"std", text("leaky_relu")}}).std ==
        Approx(std::sqrt(2.0 / (1.0 + 0.01 * 0.01))));
  // kaiming takes no gain: its own comes from its nonlinearity.
  CHECK(from_params({{"name", text("kaiming_uniform")}, {"gain", number(3.0)}}).gain ==
        Approx(std::sqrt(2.0)));
}

TEST_CASE("initial values filled in parts, in any order, equal the whole") {
  for (const char* name : {"zeros", "normal", "truncated_normal", "xavier_uniform", "he_normal"}) {
    INFO(name);
    graph::Initializer init = named(name);
    init.std = 0.5;
    init.a = -0.6;
    init.b = 0.6;
    graph::Shape shape{40, 30};
    std::vector<float> whole = nn::initial_values(init, shape, 7, "model.w");
    nn::InitialValues values(init, shape, 7, "model.w");
    std::vector<float> parts(whole.size(), -1.0f);
    std::span<float> out(parts);
    // Odd bounds too: a normal initializer makes its values in pairs.
    values.fill(out.subspan(701), 701);
    values.fill(out.subspan(0, 301), 0);
    values.fill(out.subspan(301, 400), 301);
    CHECK(parts == whole);
  }
  CHECK_THROWS_WITH(nn::InitialValues(named("orthogonal"), {2, 2}, 1, "w"),
                    "csrun has no initializer 'orthogonal'");
}
