#pragma once
// Level-change detection: did a record's level move between two sides, a new run against its
// baselines (`ridge compare`) or two windows of runs around a commit (`ridge history check`)?
// Both ask through one interface, so a next detector (a Bayesian one, a bootstrap one) is one
// class and one line in make_level_detector's registry. The callers keep what is theirs: notes,
// intervals, suspects, clock handling, verdicts. CPU only. (Implementation: src/results/level_detector.cpp.)
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/measure.hpp"

namespace ridge {

struct CompareOptions;  // compare.hpp, which includes this header

/// Two-sided Mann–Whitney U test (Wilcoxon rank-sum) of samples `a` against samples `b`.
struct RankTest {
  double u = 0;        ///< U statistic of `a` (pairs with a > b, ties count 1/2)
  double z = 0;        ///< normal score (0 when the exact distribution was used)
  double p_value = 1;  ///< two-sided
  bool exact = false;  ///< exact null distribution (small samples without ties) vs normal approximation
};

/// Exact distribution when both samples are small (n_a + n_b <= 40) and have no ties; otherwise the
/// normal approximation with tie correction and continuity correction. p = 1 when either side is
/// empty or every value is equal. Throws UsageError on NaN/inf.
RankTest mann_whitney_u(std::span<const double> a, std::span<const double> b);

/// The band a change of a record's level must exceed: the widest of its terms, and which term set
/// it. The caller starts it with the terms it knows (threshold, producer); the detector adds its own.
struct NoiseBand {
  double relative = 0;  ///< relative change of the level (0.05 = 5%)
  std::string source;   ///< the term that set it: "threshold", "producer", "clock", "run-to-run" or "resolution"
  /// The band every gate starts from: the threshold, widened to the producer's minimum
  /// (RecordGate::min_threshold) when that is larger.
  static NoiseBand from_threshold(double threshold, double producer_minimum);
  /// Widens the band to `band` when that is wider, and names `term` its source.
  void widen(double band, std::string_view term);
  /// Whether a level that moved by `ratio` (after / before) left the band, either way.
  bool excludes(double ratio) const { return ratio > 1 + relative || ratio < 1 - relative; }
};

/// Median by selection (O(n), reorders `values`; the mean of the middle two for an even count):
/// the level compare and history read from run medians, one definition so both read it alike.
/// `values` must not be empty.
double median_in_place(std::span<double> values);
/// median_in_place of a copy.
double median_of_copy(std::vector<double> values);
/// Variance of the median of `runs` independent normal values, in units of one value's variance:
/// 1/runs for one or two values (the median is their mean), pi/(2 runs) from three on (its
/// asymptotic efficiency; conservative for small odd counts). The run_medians detector's standard
/// error and history's smallest visible step rest on it.
double median_variance_factor(std::size_t runs);

/// One side of a comparison. A caller fills what it keeps: compare has raw samples and each run's
/// median; history keeps one number a run, its log median. A detector reads what it needs and
/// throws UsageError when that is missing.
struct LevelEvidence {
  std::vector<double> samples_ms;       ///< every run's raw samples pooled, ms (one work per call, one clock)
  std::vector<double> run_medians_ms;   ///< each run's median, ms
  std::vector<double> run_log_medians;  ///< each run's median as ln(ms): history's unit of evidence
};

/// What the caller knows beyond the two sides.
struct LevelTerms {
  NoiseBand band;  ///< the caller's terms (NoiseBand::from_threshold: threshold and producer)
  /// Relative SM clock change between the sides that the band must allow; 0: none (equal, unknown,
  /// or already handled by the caller: scaled to equal clocks, within the baselines', widening off).
  double clock_difference = 0;
  /// The record's timing method and the base's GPU family (gpu_family()): the resolution term
  /// where that method was measured (resolution.hpp).
  Method method = Method::none;
  std::string gpu_family;
  double series_noise = -1;  ///< the series' run-to-run noise (SeriesNoise::sigma); -1 unknown
  double series_z = 0;       ///< the normal score a change of the series must pass (SeriesNoise::z)
};

/// A detector's answer.
struct LevelJudgement {
  double before_ms = 0, after_ms = 0;  ///< each side's level
  double ratio = 0;                    ///< after / before (> 1: slower)
  double log_ratio = 0;                ///< ln(ratio) as the detector measured it: intervals are built around it
  NoiseBand band;                      ///< the caller's terms widened by the detector's
  double p_value = 1;                  ///< two-sided, of "the level did not move"
  std::optional<RankTest> rank_test;   ///< the test's statistics, where the detector ran mann_whitney_u
  double standard_error = 0;           ///< of log_ratio; 0 where the detector has none
  /// Beyond chance: p_value < CompareOptions::alpha; for a detector whose band holds its own
  /// z x standard error term (run_medians), the same as `changed`.
  bool significant = false;
  bool changed = false;                ///< significant, and the ratio lies outside the band
  bool can_be_significant = true;      ///< false: no outcome of these sample counts could pass alpha
  double run_to_run_spread = -1;       ///< relative spread of the before side's run medians; -1 not measured
  /// The resolution term, microseconds, and what it rests on ("Hopper graph_replay", "fixed");
  /// 0 and "" where it was not a term of the band.
  double resolution_us = 0;
  std::string resolution_basis;
  double split_score = 0;  ///< how cleanly the sides split: history keeps the cleanest candidate first
};

/// Decides whether a level changed. Stateless: one instance may judge from many threads.
class LevelDetector {
 public:
  virtual ~LevelDetector();
  /// The name make_level_detector knows it by.
  virtual std::string_view name() const = 0;
  /// Judges `after` against `before`. `options` carries alpha, spread_factor, min_change_us and the
  /// other knobs a detector may read (its threshold is already in terms.band).
  virtual LevelJudgement judge(const LevelEvidence& before, const LevelEvidence& after, const LevelTerms& terms,
                               const CompareOptions& options) const = 0;
};

/// The detectors by name:
/// - "rank_test" (`ridge compare`): the ratio of medians of run medians, significant by the
///   Mann–Whitney U test of the pooled raw samples; band terms: spread_factor x the before side's
///   run-to-run spread, the clock on top of the relative terms, the resolution (the timing
///   method's measured one, else min_change_us) until spread_sets_band_from runs measure the spread.
/// - "run_medians" (`ridge history check`): the ratio of medians of run log medians; band terms:
///   the clock, z x the standard error from the series' noise, or while that is unknown the
///   resolution (as rank_test's) / median / sqrt(runs); split_score from the sides' mean log medians.
/// Throws UsageError naming the valid names for any other.
std::shared_ptr<const LevelDetector> make_level_detector(std::string_view name);
/// The names make_level_detector knows, in registry order.
std::vector<std::string> level_detector_names();

}  // namespace ridge
