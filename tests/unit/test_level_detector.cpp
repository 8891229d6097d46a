// The level detectors behind `ridge compare` and `ridge history check` (ridge/level_detector.hpp):
// each judges a small constructed case as its caller did before the interface, names are checked,
// and a detector written here plugs into compare through CompareOptions::level_detector.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ridge/compare.hpp"
#include "ridge/errors.hpp"
#include "ridge/level_detector.hpp"

using namespace ridge;

namespace {

Record timed(std::vector<double> samples, Method method = Method::cuda_events) {
  Record r;
  r.name = "add";
  r.method = method;
  r.dtype = DType::fp32;
  r.params = {{"n", 1024}};
  r.samples_ms = std::move(samples);
  finalize(r);
  return r;
}

ResultSet run_of(Record r) {
  ResultSet s;
  s.records.push_back(std::move(r));
  return s;
}

// 1.00 ms and 1.20 ms, 20 samples each, spread by +-1%.
std::vector<double> level(double ms, std::size_t n = 20) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(ms * (0.99 + 0.02 * double(i) / double(n - 1)));
  return v;
}

// A detector without a test: any ratio outside the caller's band is a change (p = 0). Not a
// good detector; it shows where a next one goes.
class OutsideTheBand final : public LevelDetector {
 public:
  std::string_view name() const override { return "outside_the_band"; }
  LevelJudgement judge(const LevelEvidence& before, const LevelEvidence& after, const LevelTerms& terms,
                       const CompareOptions&) const override {
    LevelJudgement j;
    j.before_ms = median_of_copy(before.run_medians_ms);
    j.after_ms = median_of_copy(after.run_medians_ms);
    j.ratio = j.after_ms / j.before_ms;
    j.log_ratio = std::log(j.ratio);
    j.band = terms.band;
    j.changed = j.significant = j.band.excludes(j.ratio);
    j.p_value = j.significant ? 0 : 1;
    return j;
  }
};

}  // namespace

TEST(LevelDetector, LooksUpDetectorsByName) {
  EXPECT_EQ(level_detector_names(), (std::vector<std::string>{"rank_test", "run_medians"}));
  for (const std::string& name : level_detector_names()) EXPECT_EQ(make_level_detector(name)->name(), name);
  EXPECT_EQ(CompareOptions{}.level_detector->name(), "rank_test");
  try {
    make_level_detector("bayesian");
    FAIL() << "an unknown name was accepted";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'bayesian'"), std::string::npos) << message;
    EXPECT_NE(message.find("rank_test, run_medians"), std::string::npos) << message;
  }
  CompareOptions none;
  none.level_detector = nullptr;
  EXPECT_THROW(compare_results(run_of(timed(level(1.0))), run_of(timed(level(1.2))), none), UsageError);
}

TEST(LevelDetector, RankTestJudgesOneRecordAsCompareDoes) {
  const Record base = timed(level(1.0)), next = timed(level(1.2));
  LevelEvidence before{base.samples_ms, {base.summary.median}, {}};
  LevelEvidence after{next.samples_ms, {next.summary.median}, {}};
  LevelTerms terms;
  terms.band = NoiseBand::from_threshold(0.05, 0);
  terms.method = Method::cuda_events;
  const CompareOptions options;
  const LevelJudgement j = make_level_detector("rank_test")->judge(before, after, terms, options);
  EXPECT_DOUBLE_EQ(j.ratio, next.summary.median / base.summary.median);
  ASSERT_TRUE(j.rank_test.has_value());
  EXPECT_EQ(j.rank_test->p_value, mann_whitney_u(base.samples_ms, next.samples_ms).p_value);
  EXPECT_EQ(j.p_value, j.rank_test->p_value);
  EXPECT_TRUE(j.significant);
  EXPECT_TRUE(j.changed);
  EXPECT_DOUBLE_EQ(j.band.relative, 0.05);  // the resolution, 0.5 us of 1 ms, is narrower
  EXPECT_EQ(j.band.source, "threshold");
  EXPECT_EQ(j.resolution_basis, "fixed");  // cuda_events was never measured on an unnamed family
  EXPECT_DOUBLE_EQ(j.resolution_us, options.min_change_us);
  EXPECT_EQ(j.run_to_run_spread, -1);  // one baseline

  // compare_results gives the row the same numbers.
  const Comparison c = compare_results(run_of(base), run_of(next));
  ASSERT_EQ(c.rows.size(), 1u);
  const RecordComparison& row = c.rows[0];
  EXPECT_EQ(row.verdict, Verdict::regression);
  EXPECT_EQ(row.ratio, j.ratio);
  EXPECT_EQ(row.test.p_value, j.p_value);
  EXPECT_EQ(row.test.u, j.rank_test->u);
  EXPECT_EQ(row.noise_band, j.band.relative);
  EXPECT_EQ(row.noise_band_source, j.band.source);
  EXPECT_EQ(row.resolution_us, j.resolution_us);
  EXPECT_EQ(row.resolution_basis, j.resolution_basis);
}

TEST(LevelDetector, RankTestBandFromBaselinesSpreadThenClock) {
  // Three baselines at 1.00, 1.02 and 0.98 ms: spread (standard deviation below five runs) 2%,
  // so the band is 3 x 2% and the resolution is no term; a 3% clock change is added on top.
  LevelEvidence before, after{level(1.2), {1.2}, {}};
  for (double ms : {1.0, 1.02, 0.98}) {
    for (double s : level(ms)) before.samples_ms.push_back(s);
    before.run_medians_ms.push_back(ms);
  }
  LevelTerms terms;
  terms.band = NoiseBand::from_threshold(0.05, 0);
  const CompareOptions options;
  const auto detector = make_level_detector("rank_test");
  LevelJudgement j = detector->judge(before, after, terms, options);
  EXPECT_NEAR(j.run_to_run_spread, 0.02, 1e-12);
  EXPECT_NEAR(j.band.relative, 0.06, 1e-12);
  EXPECT_EQ(j.band.source, "run-to-run");
  EXPECT_TRUE(j.resolution_basis.empty());
  terms.clock_difference = 0.03;
  j = detector->judge(before, after, terms, options);
  EXPECT_NEAR(j.band.relative, 0.09, 1e-12);
  EXPECT_EQ(j.band.source, "clock");
  EXPECT_THROW(detector->judge(LevelEvidence{}, after, terms, options), UsageError);
}

TEST(LevelDetector, RunMediansJudgesWindowsAsHistoryDoes) {
  // Five runs at 1.0 ms, five at 1.1 ms; the series' noise 1%, z = 3.
  LevelEvidence before, after;
  for (int i = 0; i < 5; ++i) {
    before.run_log_medians.push_back(std::log(1.0));
    after.run_log_medians.push_back(std::log(1.1));
  }
  LevelTerms terms;
  terms.band = NoiseBand::from_threshold(0.01, 0);
  terms.series_noise = 0.01;
  terms.series_z = 3;
  const CompareOptions options;
  const auto detector = make_level_detector("run_medians");
  LevelJudgement j = detector->judge(before, after, terms, options);
  const double se = 0.01 * std::sqrt(2 * std::numbers::pi / 2 / 5);
  EXPECT_NEAR(j.ratio, 1.1, 1e-12);
  EXPECT_NEAR(j.before_ms, 1.0, 1e-12);
  EXPECT_NEAR(j.after_ms, 1.1, 1e-12);
  EXPECT_NEAR(j.standard_error, se, 1e-15);
  EXPECT_NEAR(j.band.relative, std::exp(3 * se) - 1, 1e-12);
  EXPECT_EQ(j.band.source, "run-to-run");
  EXPECT_NEAR(j.p_value, std::erfc(std::log(1.1) / se / std::numbers::sqrt2), 1e-15);
  EXPECT_TRUE(j.changed);
  EXPECT_TRUE(j.significant);
  EXPECT_NEAR(j.split_score, std::log(1.1) / std::sqrt(2.0 / 5), 1e-12);
  EXPECT_FALSE(j.rank_test.has_value());
  // The noise unknown: the resolution, averaged down by sqrt(runs), sets the band; p stays 1.
  terms.series_noise = -1;
  terms.band = NoiseBand::from_threshold(0, 0);
  j = detector->judge(before, after, terms, options);
  EXPECT_NEAR(j.band.relative, options.min_change_us * 1e-3 / 1.0 / std::sqrt(5.0), 1e-12);
  EXPECT_EQ(j.band.source, "resolution");
  EXPECT_EQ(j.p_value, 1);
  // The clock is a term beside the others here (compare's rank test adds it on top of them).
  terms.clock_difference = 0.2;
  j = detector->judge(before, after, terms, options);
  EXPECT_DOUBLE_EQ(j.band.relative, 0.2);
  EXPECT_EQ(j.band.source, "clock");
  EXPECT_FALSE(j.changed);
  // Raw samples alone are not its evidence.
  EXPECT_THROW(detector->judge(LevelEvidence{level(1.0), {1.0}, {}}, after, terms, options), UsageError);
}

TEST(LevelDetector, ANextDetectorPlugsIntoCompare) {
  // Two samples a side: no outcome of the rank test reaches alpha, so compare's detector calls a
  // 20% slowdown no significant change; a detector without a test calls it a regression.
  const ResultSet base = run_of(timed({1.0, 1.0})), next = run_of(timed({1.2, 1.2}));
  const Comparison ranked = compare_results(base, next);
  EXPECT_EQ(ranked.rows.at(0).verdict, Verdict::no_significant_change);
  EXPECT_NE(ranked.rows.at(0).note.find("too few samples"), std::string::npos) << ranked.rows.at(0).note;
  CompareOptions options;
  options.level_detector = std::make_shared<OutsideTheBand>();
  const Comparison c = compare_results(base, next, options);
  EXPECT_EQ(c.rows.at(0).verdict, Verdict::regression);
  EXPECT_EQ(c.rows.at(0).test.p_value, 0);
  EXPECT_DOUBLE_EQ(c.rows.at(0).ratio, 1.2);
  EXPECT_EQ(c.rows.at(0).noise_band_source, "threshold");
  EXPECT_EQ(c.regressions, 1u);
  EXPECT_TRUE(c.has_regression());
}
