// `ridge history check` asks its level detector (CheckOptions::compare.level_detector) about each
// window pair: the default, run medians, gives judge_window's numbers, and another plugs in.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/history_check.hpp"
#include "ridge/level_detector.hpp"

using namespace ridge;

namespace {

// Ten runs of one commit each: five at 1.0 ms, then five at 1.1 ms, each run 0.1% apart.
std::vector<SeriesPoint> step_series() {
  std::vector<SeriesPoint> points;
  for (int i = 0; i < 10; ++i) {
    Record r;
    r.name = "add";
    r.method = Method::cuda_events;
    r.dtype = DType::fp32;
    const double ms = (i >= 5 ? 1.1 : 1.0) * (1 + 0.001 * (i % 3));
    r.samples_ms = {ms * 0.999, ms, ms * 1.001};
    finalize(r);
    points.push_back({fmt::format("c{:02}", i), fmt::format("2026-12-01T00:{:02}:00Z", i), 13000, std::move(r)});
  }
  return points;
}

// Never calls a change.
class NeverChanged final : public LevelDetector {
 public:
  std::string_view name() const override { return "never_changed"; }
  LevelJudgement judge(const LevelEvidence&, const LevelEvidence&, const LevelTerms& terms,
                       const CompareOptions&) const override {
    LevelJudgement j;
    j.band = terms.band;
    return j;
  }
};

}  // namespace

TEST(HistoryDetector, JudgeWindowReportsTheRunMediansDetector) {
  const std::vector<SeriesPoint> points = step_series();
  const CheckOptions options;
  EXPECT_EQ(options.compare.level_detector->name(), "run_medians");
  const SeriesNoise noise = learn_series_noise(points, 1, options);
  const WindowJudgement w = judge_window(points, noise, 0, 5, 10, options);
  LevelEvidence before, after;
  for (std::size_t i = 0; i < points.size(); ++i) (i < 5 ? before : after).run_log_medians.push_back(noise.log_medians[i]);
  LevelTerms terms;
  terms.band = NoiseBand::from_threshold(options.compare.threshold, 0);
  terms.series_noise = noise.sigma;
  terms.series_z = noise.z;
  const LevelJudgement j = make_level_detector("run_medians")->judge(before, after, terms, options.compare);
  EXPECT_EQ(w.log_ratio, j.log_ratio);
  EXPECT_EQ(w.median_before_ms, j.before_ms);
  EXPECT_EQ(w.median_after_ms, j.after_ms);
  EXPECT_EQ(w.standard_error, j.standard_error);
  EXPECT_EQ(w.p_value, j.p_value);
  EXPECT_EQ(w.noise_band, j.band.relative);
  EXPECT_EQ(w.noise_band_source, j.band.source);
  EXPECT_EQ(w.split_score, j.split_score);
  EXPECT_TRUE(w.change);
  EXPECT_NEAR(std::exp(w.log_ratio), 1.1, 0.005);

  const auto found = detect_changes(points, 0, options);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].commit, "c05");
  EXPECT_EQ(found[0].p_value, j.p_value);
}

TEST(HistoryDetector, ANextDetectorPlugsIntoHistory) {
  const std::vector<SeriesPoint> points = step_series();
  CheckOptions options;
  options.compare.level_detector = std::make_shared<NeverChanged>();
  EXPECT_TRUE(detect_changes(points, 0, options).empty());
  // The rank test reads raw samples, which history does not hand over: said, not guessed.
  options.compare.level_detector = make_level_detector("rank_test");
  EXPECT_THROW(detect_changes(points, 0, options), UsageError);
  options.compare.level_detector = nullptr;
  EXPECT_THROW(validate(options), UsageError);
}
