#include <catch2/catch.hpp>

#include <cmath>

#include "runner/metric_totals.hpp"

using namespace csrun;

TEST_CASE("a ratio metric averages over its classes, a present-only one over the non-empty ones") {
  // Numerators 1, 0, 3 over denominators 2, 0, 4.
  std::vector<double> totals = {1, 0, 3, 2, 0, 4};
  CHECK(runner::mean_ratio(totals, nn::MetricAverage::ratio) == Approx((0.5 + 0.0 + 0.75) / 3));
  CHECK(runner::mean_ratio(totals, nn::MetricAverage::ratio_of_present) ==
        Approx((0.5 + 0.75) / 2));
  CHECK(runner::mean_ratio({0, 0}, nn::MetricAverage::ratio_of_present) == 0.0);
  CHECK(runner::mean_ratio({}, nn::MetricAverage::ratio) == 0.0);
}

TEST_CASE("a perplexity is the exp of the loss summed over the evaluation's tokens per token") {
  // 6 nats over 3 tokens.
  CHECK(runner::mean_ratio({6, 3}, nn::MetricAverage::exp_of_ratio) == Approx(std::exp(2.0)));
  CHECK(std::isnan(runner::mean_ratio({0, 0}, nn::MetricAverage::exp_of_ratio)));
}
