#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "ridge/compare.hpp"
#include "ridge/errors.hpp"
#include "ridge/writers.hpp"

using namespace ridge;

namespace {

// Samples around `median_ms` with log-normal noise of relative width `cv`.
std::vector<double> noisy(double median_ms, double cv, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0, cv);
  std::vector<double> out(n);
  for (auto& v : out) v = median_ms * std::exp(z(rng));
  return out;
}

Record record(const std::string& name, const std::string& method, long n, std::vector<double> samples) {
  Record r;
  r.name = name;
  r.method = method;
  r.dtype = "bf16";
  r.params = {{"n", n}};
  r.samples_ms = std::move(samples);
  finalize(r);
  return r;
}

DeviceDescription h200(const std::string& uuid = "GPU-aaaa") {
  DeviceDescription d;
  d.name = "NVIDIA H200";
  d.uuid = uuid;
  return d;
}

// A result set with three sizes; `scale` multiplies every time of the n=4096 record.
ResultSet synthetic(unsigned seed, double scale_4096 = 1.0, double cv = 0.02) {
  ResultSet s;
  s.context.device = h200();
  s.context.clocks_start.sm_mhz = 1980;
  s.records.push_back(record("matmul", "cuda_events", 1024, noisy(0.05, cv, 30, seed)));
  s.records.push_back(record("matmul", "cuda_events", 2048, noisy(0.3, cv, 30, seed + 1)));
  s.records.push_back(record("matmul", "cuda_events", 4096, noisy(2.0 * scale_4096, cv, 30, seed + 2)));
  return s;
}

const RecordComparison& row_for(const Comparison& c, long n) {
  for (const auto& r : c.rows)
    if (r.params.value("n", 0L) == n) return r;
  throw std::runtime_error("row not found");
}

}  // namespace

TEST(RankTest, ExactSmallSamplesMatchEnumeration) {
  // p-values from enumerating every split of the pooled samples (independent brute force).
  const std::vector<double> a{1, 2, 3, 4, 5}, b{6, 7, 8, 9, 10};
  RankTest t = mann_whitney_u(a, b);
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_NEAR(t.p_value, 2.0 / 252, 1e-12);

  const std::vector<double> c{1.1, 2.3, 0.7, 4.2, 3.3, 2.8}, d{3.9, 5.1, 4.4, 2.9, 6.0, 5.5, 4.8};
  t = mann_whitney_u(c, d);
  EXPECT_DOUBLE_EQ(t.u, 3);
  EXPECT_NEAR(t.p_value, 0.008158508158508158, 1e-12);
  // Symmetric: swapping the sides gives the same two-sided p.
  EXPECT_NEAR(mann_whitney_u(d, c).p_value, t.p_value, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_u(d, c).u, 6.0 * 7 - 3);
}

TEST(RankTest, NormalApproximationWithTies) {
  const std::vector<double> a{1, 2, 2, 3, 4, 5, 5, 6}, b{3, 4, 5, 5, 6, 7, 8, 8, 9};
  const RankTest t = mann_whitney_u(a, b);
  EXPECT_FALSE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 12.5);
  EXPECT_NEAR(std::abs(t.z), 2.2338025357895863, 1e-9);
  EXPECT_NEAR(t.p_value, 0.025496068631499596, 1e-9);
}

TEST(RankTest, DegenerateInputs) {
  const std::vector<double> same(10, 1.5), empty;
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, same).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, empty).p_value, 1.0);
  const std::vector<double> bad{1.0, std::nan("")};
  EXPECT_THROW(mann_whitney_u(bad, same), UsageError);
}

TEST(RankTest, FalseAlarmRateNearAlpha) {
  // Same distribution on both sides: p < 0.05 in about 5% of trials, not more.
  int alarms = 0;
  const int trials = 400;
  for (int i = 0; i < trials; ++i) {
    auto a = noisy(1.0, 0.05, 25, 1000 + 2 * i), b = noisy(1.0, 0.05, 25, 1001 + 2 * i);
    if (mann_whitney_u(a, b).p_value < 0.05) ++alarms;
  }
  EXPECT_LT(alarms, trials * 0.09);
  EXPECT_GT(alarms, 0);  // a test that never fires is broken too
}

TEST(Compare, ClearRegression) {
  const Comparison c = compare_results(synthetic(1), synthetic(101, 1.20));
  const auto& r = row_for(c, 4096);
  EXPECT_EQ(r.verdict, Verdict::regression);
  EXPECT_NEAR(r.ratio, 1.20, 0.03);
  EXPECT_LT(r.test.p_value, 1e-6);
  EXPECT_GT(r.ratio_ci_low, 1.1);
  EXPECT_EQ(c.regressions, 1u);
  EXPECT_TRUE(c.has_regression());
  EXPECT_EQ(c.geomean_count, 3u);
  EXPECT_NEAR(c.geomean_ratio, std::cbrt(1.20), 0.03);
  EXPECT_NE(to_markdown(c).find("**REGRESSION**"), std::string::npos);
}

TEST(Compare, ClearImprovement) {
  const Comparison c = compare_results(synthetic(2), synthetic(202, 0.7));
  EXPECT_EQ(row_for(c, 4096).verdict, Verdict::improvement);
  EXPECT_EQ(c.improvements, 1u);
  EXPECT_FALSE(c.has_regression());
  EXPECT_LT(c.geomean_ratio, 1.0);
}

TEST(Compare, SmallSignificantChangeStaysWithinThreshold) {
  // 2% slower with very little noise: detectable, but under a 5% threshold.
  const Comparison c = compare_results(synthetic(3, 1.0, 0.002), synthetic(303, 1.02, 0.002));
  EXPECT_EQ(row_for(c, 4096).verdict, Verdict::within_threshold);
  EXPECT_FALSE(c.has_regression());
  // The same data with a 1% threshold is a regression.
  CompareOptions strict;
  strict.threshold = 0.01;
  EXPECT_TRUE(compare_results(synthetic(3, 1.0, 0.002), synthetic(303, 1.02, 0.002), strict).has_regression());
}

TEST(Compare, NoiseOnlyRaisesNoAlarm) {
  // Many pairs of runs from one distribution with a realistic 3% CV: never a regression.
  for (unsigned seed = 0; seed < 60; ++seed) {
    const Comparison c = compare_results(synthetic(10 * seed), synthetic(10 * seed + 5, 1.0, 0.03));
    EXPECT_FALSE(c.has_regression()) << "seed " << seed << "\n" << to_text(c);
    EXPECT_EQ(c.improvements, 0u) << "seed " << seed;
    EXPECT_NEAR(c.geomean_ratio, 1.0, 0.03);
  }
}

TEST(Compare, MissingRecordsOnEitherSide) {
  ResultSet base = synthetic(4), next = synthetic(404);
  next.records.erase(next.records.begin());  // n=1024 gone from new
  next.records.push_back(record("bandwidth.add", "spin_hold", 1 << 20, noisy(0.01, 0.02, 30, 9)));
  const Comparison c = compare_results(base, next);
  EXPECT_EQ(c.missing, 2u);
  EXPECT_EQ(row_for(c, 1024).verdict, Verdict::missing_in_new);
  EXPECT_EQ(row_for(c, 1 << 20).verdict, Verdict::missing_in_base);
  EXPECT_EQ(c.geomean_count, 2u);
  EXPECT_FALSE(c.has_regression());
  // A different dtype or params is a different record.
  next = synthetic(404);
  next.records[1].dtype = "fp16";
  EXPECT_EQ(compare_results(base, next).missing, 2u);
}

TEST(Compare, DifferentDevicesAndClocksAreReported) {
  ResultSet base = synthetic(5), next = synthetic(505);
  EXPECT_FALSE(compare_results(base, next).different_devices);
  next.context.device->name = "NVIDIA H100 80GB HBM3";
  Comparison c = compare_results(base, next);
  EXPECT_TRUE(c.different_devices);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings[0].find("different GPUs"), std::string::npos);

  next = synthetic(505);
  next.context.device = h200("GPU-bbbb");
  c = compare_results(base, next);
  EXPECT_TRUE(c.different_devices);
  EXPECT_NE(c.warnings[0].find("different physical GPUs"), std::string::npos);

  next = synthetic(505);
  next.context.clocks_start.sm_mhz = 1500;  // 24% lower
  c = compare_results(base, next);
  EXPECT_TRUE(c.different_clocks);
  next.context.clocks_start.sm_mhz = 1900;  // 4%: within tolerance
  EXPECT_FALSE(compare_results(base, next).different_clocks);
}

TEST(Compare, NaiveWallClockIsNeverJudged) {
  ResultSet base, next;
  base.records.push_back(record("timing", "wall_naive", 4096, noisy(0.02, 0.02, 20, 1)));
  next.records.push_back(record("timing", "wall_naive", 4096, noisy(0.04, 0.02, 20, 2)));
  const Comparison c = compare_results(base, next);
  EXPECT_EQ(c.rows.at(0).verdict, Verdict::informational);
  EXPECT_FALSE(c.has_regression());
  EXPECT_EQ(c.geomean_count, 0u);
}

TEST(Compare, TooFewSamplesSaySo) {
  ResultSet base, next;
  base.records.push_back(record("matmul", "cuda_events", 64, {1.0, 1.01, 0.99}));
  next.records.push_back(record("matmul", "cuda_events", 64, {2.0, 2.01, 1.99}));
  const Comparison c = compare_results(base, next);
  EXPECT_EQ(c.rows.at(0).verdict, Verdict::no_significant_change);
  EXPECT_NE(c.rows.at(0).note.find("too few samples"), std::string::npos);
}

TEST(Compare, ThresholdParsing) {
  EXPECT_DOUBLE_EQ(parse_threshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold(" 2.5 %"), 0.025);
  EXPECT_DOUBLE_EQ(parse_threshold("0.1"), 0.1);
  EXPECT_THROW(parse_threshold("five"), UsageError);
  EXPECT_THROW(parse_threshold("5%%"), UsageError);
  EXPECT_THROW(parse_threshold("-1%"), UsageError);
  EXPECT_THROW(parse_threshold(""), UsageError);
}

TEST(Compare, MalformedFilesAreUsageErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "ridge_compare_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  EXPECT_THROW(load_result_file(write("broken.json", "{\"schema\": \"ridge.results\", ")), UsageError);
  EXPECT_THROW(load_result_file(write("other.json", "{\"hello\": 1}")), UsageError);
  EXPECT_THROW(load_result_file(write("norecords.json", "{\"schema\":\"ridge.results\",\"schema_version\":1,\"context\":{}}")),
               UsageError);
  EXPECT_THROW(load_result_file(dir / "does_not_exist.json"), UsageError);
  // A round trip through the writer compares equal to itself.
  const ResultSet s = synthetic(6);
  const auto path = write("good.json", to_json(s).dump());
  const Comparison c = compare_results(load_result_file(path), load_result_file(path));
  EXPECT_EQ(c.unchanged, 3u);
  EXPECT_DOUBLE_EQ(c.geomean_ratio, 1.0);
  std::filesystem::remove_all(dir);
}

TEST(Compare, JsonCarriesVerdicts) {
  const Comparison c = compare_results(synthetic(7), synthetic(707, 1.5));
  const auto j = to_json(c);
  EXPECT_EQ(j["schema"], "ridge.compare");
  EXPECT_EQ(j["regressions"], 1);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][2]["verdict"], "REGRESSION");
}

TEST(CompareScale, NothingMatchedIsReported) {
  ResultSet a, b;
  Record r;
  r.name = "one";
  r.method = "cuda_events";
  r.samples_ms = {1, 1.1, 0.9};
  finalize(r);
  a.records.push_back(r);
  r.name = "two";
  b.records.push_back(r);
  const Comparison c = compare_results(a, b);
  EXPECT_EQ(c.matched, 0u);
  EXPECT_TRUE(c.nothing_compared());
  EXPECT_EQ(c.missing, 2u);
  const Comparison same = compare_results(a, a);
  EXPECT_EQ(same.matched, 1u);
  EXPECT_FALSE(same.nothing_compared());
  // Only informational records matched: nothing was judged either.
  a.records[0].method = "wall_naive";
  EXPECT_TRUE(compare_results(a, a).nothing_compared());
}

TEST(CompareScale, LargeComparisonsUseOrderStatisticIntervals) {
  ResultSet a, b;
  for (int i = 0; i < 3; ++i) {
    Record r;
    r.name = "k";
    r.method = "cuda_events";
    r.params = {{"n", i}};
    for (int j = 0; j < 41; ++j) r.samples_ms.push_back(1.0 + 0.001 * ((j * 7) % 41));
    finalize(r);
    a.records.push_back(r);
    for (auto& v : r.samples_ms) v *= 1.10;
    finalize(r);
    b.records.push_back(r);
  }
  CompareOptions small_budget;
  small_budget.bootstrap_budget = 1000;  // 246 samples x 2000 resamples is over it
  const Comparison big = compare_results(a, b, small_budget);
  EXPECT_EQ(big.ratio_ci_method, "order_statistics");
  ASSERT_EQ(big.rows.size(), 3u);
  for (const auto& row : big.rows) {
    EXPECT_NEAR(row.ratio, 1.10, 1e-9);
    EXPECT_LT(row.ratio_ci_low, row.ratio);
    EXPECT_GT(row.ratio_ci_high, row.ratio);
    EXPECT_GT(row.ratio_ci_low, 1.08);  // medians' intervals are about +-0.7% each here
    EXPECT_LT(row.ratio_ci_high, 1.12);
  }
  EXPECT_NE(big.warnings.back().find("order-statistic"), std::string::npos);
  const Comparison usual = compare_results(a, b);
  EXPECT_EQ(usual.ratio_ci_method, "bootstrap");
  EXPECT_EQ(usual.rows[0].verdict, big.rows[0].verdict) << "the verdict does not depend on the interval";
}

TEST(CompareScale, ChecksAreShownNotJudged) {
  ResultSet a;
  Record r;
  r.name = "decode.check_logits";
  r.method = "none";
  r.samples_ms = {0.5};  // a check that somehow carries a positive number is still not a timing
  finalize(r);
  a.records.push_back(r);
  const Comparison c = compare_results(a, a);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].verdict, Verdict::informational);
  EXPECT_TRUE(c.nothing_compared());
}
