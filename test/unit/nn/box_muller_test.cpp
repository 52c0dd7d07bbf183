#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "graph/counter_rng.hpp"
#include "nn/box_muller.hpp"

using namespace csrun;

namespace {

// Box-Muller's u1 in (0, 1] and u2 in [0, 1): keyed draws, and the ends and the points where
// the logarithm and the quarter turns change their reduction.
struct Uniforms {
  std::vector<double> u1;
  std::vector<double> u2;
};

Uniforms test_uniforms(std::size_t random_pairs) {
  Uniforms u;
  const std::vector<double> edges1{0x1p-53,
                                   0x1p-52,
                                   0.25,
                                   0.5,
                                   std::nextafter(0.5, 1.0),
                                   0x1.6a09e667f3bcdp-1,
                                   0x1.6a09e667f3bccp-1,
                                   0.999999,
                                   1.0};
  const std::vector<double> edges2{
      0.0,   0x1p-53, 0.125, std::nextafter(0.125, 1.0), 0.25, 0.375, 0.5,
      0.625, 0.75,    0.875, std::nextafter(1.0, 0.0)};
  for (double a : edges1) {
    for (double b : edges2) {
      u.u1.push_back(a);
      u.u2.push_back(b);
    }
  }
  for (std::size_t i = 0; i < random_pairs; ++i) {
    u.u1.push_back(1.0 - graph::uniform01(graph::mix_keys(11, i)));
    u.u2.push_back(graph::uniform01(graph::mix_keys(12, i)));
  }
  return u;
}

}  // namespace

TEST_CASE("Box-Muller normals are within a few ulps of the exact transform") {
  Uniforms u = test_uniforms(200'000);
  const long double two_pi = 2.0L * std::numbers::pi_v<long double>;
  double worst = 0.0;
  for (std::size_t i = 0; i < u.u1.size(); ++i) {
    std::array<double, 2> normals = nn::box_muller(u.u1[i], u.u2[i]);
    long double radius = std::sqrt(-2.0L * std::log(static_cast<long double>(u.u1[i])));
    long double angle = two_pi * static_cast<long double>(u.u2[i]);
    long double exact[2] = {radius * std::cos(angle), radius * std::sin(angle)};
    for (int k = 0; k < 2; ++k) {
      // The error relative to the radius: a value near zero (an angle near a quarter turn) is
      // as exact as the angle, not to a few of its own ulps.
      double error = static_cast<double>(
          std::fabs(normals[static_cast<std::size_t>(k)] - exact[k]) / std::fmax(radius, 1e-300L));
      worst = std::fmax(worst, error);
    }
  }
  INFO("worst error relative to the radius: " << worst);
  CHECK(worst < 4 * 0x1p-52);
}

TEST_CASE("Box-Muller's vectorized loop gives the bits of one pair at a time") {
  Uniforms u = test_uniforms(10'000);
  std::vector<double> normals(2 * u.u1.size());
  nn::box_muller(u.u1, u.u2, normals);
  for (std::size_t i = 0; i < u.u1.size(); ++i) {
    std::array<double, 2> pair = nn::box_muller(u.u1[i], u.u2[i]);
    REQUIRE(std::bit_cast<std::uint64_t>(normals[2 * i]) == std::bit_cast<std::uint64_t>(pair[0]));
    REQUIRE(std::bit_cast<std::uint64_t>(normals[2 * i + 1]) ==
            std::bit_cast<std::uint64_t>(pair[1]));
  }
}
