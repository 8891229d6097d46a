#include <chrono>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/stats.hpp"

using namespace ridge;

TEST(Stats, OddCountHandComputed) {
  const std::vector<double> v{5, 1, 4, 2, 3};
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.stddev, std::sqrt(2.5), 1e-12);  // sum of squares 10 over n-1 = 4
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.p25, 2);
  EXPECT_DOUBLE_EQ(s.p75, 4);
  EXPECT_DOUBLE_EQ(s.iqr, 2);
  EXPECT_NEAR(s.p10, 1.4, 1e-12);  // position 0.4 between 1 and 2
  EXPECT_NEAR(s.p90, 4.6, 1e-12);
}

TEST(Stats, EvenCountMedianIsMidpoint) {
  const std::vector<double> v{10, 2, 8, 4};
  EXPECT_DOUBLE_EQ(median(v), 6);
  EXPECT_DOUBLE_EQ(summarize(v).median, 6);
}

TEST(Stats, OneSample) {
  const std::vector<double> v{2.5};
  const Summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.median_ci_low, 2.5);
  EXPECT_DOUBLE_EQ(s.median_ci_high, 2.5);
}

TEST(Stats, RejectsEmptyAndNaN) {
  EXPECT_THROW(summarize(std::vector<double>{}), UsageError);
  EXPECT_THROW(summarize(std::vector<double>{1, NAN, 3}), UsageError);
  EXPECT_THROW(summarize(std::vector<double>{1, INFINITY}), UsageError);
  EXPECT_THROW(median(std::vector<double>{}), UsageError);
}

TEST(Stats, MedianIgnoresOneOutlierUnlikeMean) {
  const std::vector<double> v{1, 1, 1, 1, 100};
  const Summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 1);
  EXPECT_GT(s.mean, 20);
}

TEST(Stats, MedianConfidenceRanksMatchTable) {
  // Classic order-statistic table for 95%: n=20 -> ranks 6 and 15 (1-based).
  auto [lo, hi] = median_ci_ranks(20, 0.95);
  EXPECT_EQ(lo, 5u);
  EXPECT_EQ(hi, 14u);
  // n=10 -> ranks 2 and 9 (1-based).
  std::tie(lo, hi) = median_ci_ranks(10, 0.95);
  EXPECT_EQ(lo, 1u);
  EXPECT_EQ(hi, 8u);
  // Too few samples for 95%: the whole range.
  std::tie(lo, hi) = median_ci_ranks(5, 0.95);
  EXPECT_EQ(lo, 0u);
  EXPECT_EQ(hi, 4u);
}

TEST(Stats, ConfidenceIntervalContainsMedianAndShrinks) {
  std::vector<double> small, large;
  for (int i = 0; i < 20; ++i) small.push_back(1.0 + 0.01 * ((i * 7) % 20));
  for (int i = 0; i < 2000; ++i) large.push_back(1.0 + 0.01 * ((i * 7) % 20));
  const Summary a = summarize(small), b = summarize(large);
  EXPECT_LE(a.median_ci_low, a.median);
  EXPECT_GE(a.median_ci_high, a.median);
  EXPECT_LT(b.median_ci_relative(), a.median_ci_relative());
}

TEST(Stats, QuantileBounds) {
  const std::vector<double> v{1, 2, 3};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0), 1);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1), 3);
  EXPECT_THROW(quantile_sorted(v, 1.5), UsageError);
}

TEST(MedianCi, LinearRanksMatchTheDirectBinomialSum) {
  // The direct definition: largest k with P(X <= k) <= alpha/2, X ~ Binomial(n, 1/2).
  const auto direct = [](std::size_t n, double confidence) {
    const double alpha = 1 - confidence;
    double cdf = 0;
    std::size_t k = 0;
    bool found = false;
    for (std::size_t j = 0; j < n / 2; ++j) {
      cdf += std::exp(std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(n - j + 1.0) + n * std::log(0.5));
      if (cdf > alpha / 2) break;
      k = j;
      found = true;
    }
    return found ? std::pair<std::size_t, std::size_t>{k, n - 1 - k} : std::pair<std::size_t, std::size_t>{0, n - 1};
  };
  for (std::size_t n : {1u, 2u, 5u, 6u, 9u, 10u, 20u, 31u, 100u, 999u, 1001u, 1500u, 4000u, 20000u})
    for (double confidence : {0.9, 0.95, 0.99})
      EXPECT_EQ(median_ci_ranks(n, confidence), direct(n, confidence)) << "n " << n << " confidence " << confidence;
}

TEST(MedianCi, TenMillionSamplesTakeUnderASecond) {
  const auto start = std::chrono::steady_clock::now();
  const auto [lo, hi] = median_ci_ranks(10'000'000, 0.95);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  // Normal approximation: n/2 -+ 1.96 sqrt(n)/2 = 5,000,000 -+ 3,099.
  EXPECT_NEAR(double(lo), 5e6 - 3099, 3);
  EXPECT_EQ(lo + hi, 10'000'000u - 1) << "symmetric";
}

TEST(Stats, ConfidenceOutsideZeroToOneIsRefused) {
  const std::vector<double> samples{1.0, 2.0, 3.0};
  for (double bad : {0.0, 1.0, 2.0, -0.5, std::nan("")}) EXPECT_THROW(summarize(samples, bad), UsageError) << bad;
  EXPECT_DOUBLE_EQ(summarize(samples, 0.9).confidence, 0.9);
}
