#pragma once
// Change detection over a run history: each record's series, its own run-to-run noise, and the
// commits where its level changed (`ridge history check`). CPU only. (Implementation:
// src/history/detect.cpp, text.cpp.)
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/compare.hpp"
#include "ridge/history_store.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// Options of change detection over commits. Each record's series (same name, method, dtype,
/// params, machine and GPU) is tested at every commit under review: the median of the run medians
/// of up to `window_runs` runs before against that of up to `window_runs` runs from that commit
/// on. The unit of evidence is the run (one number each), and the band a change must exceed comes
/// from the series' own run-to-run noise (learn_series_noise, judge_window).
struct CheckOptions {
  /// Alpha (divided by the candidates of a series), clock terms, min_change_us (only while a series
  /// has too few runs to learn its noise): as `ridge compare`. Its level_detector: "run_medians"
  /// (level_detector.hpp), whose evidence is one log median a run. The threshold 3%, not compare's 5%:
  /// the relative change that matters, beside the learned noise (bench/history_detection.py).
  CompareOptions compare{.threshold = 0.03, .level_detector = make_level_detector("run_medians")};
  std::size_t window_runs = 5;  ///< runs on each side of a candidate commit
  /// A series whose own run-to-run noise hides a step of the threshold at window_runs gets wider
  /// windows, as many runs a side as it needs to see the threshold, up to this many (window_runs:
  /// never wider). Its changes then sit further apart than its windows.
  std::size_t max_window_runs = 15;
  std::size_t min_runs_before = 2;  ///< a candidate needs this many runs before it (and one at or after)
  /// Only commits after this one (a run's commit, or a unique prefix of it) are under review; empty: all.
  std::string since;
};

/// Throws UsageError naming the first bad field of `options`.
void validate(const CheckOptions& options);


/// A change of a record's level at one commit.
struct HistoryChange {
  std::string commit;           ///< the first commit at the new level
  std::string previous_commit;  ///< the last commit at the old level
  std::string run_time_utc;     ///< of the first run at the new level
  std::string name, method, dtype;
  nlohmann::json params = nlohmann::json::object();
  std::string machine, gpu;
  std::size_t runs_before = 0, runs_after = 0;  ///< runs in each window
  /// The median of each window's run medians.
  double median_before_ms = 0, median_after_ms = 0;
  double ratio = 0;  ///< median after / median before (> 1: slower)
  /// 95% interval of the ratio from the series' run-to-run noise; 0 when the noise is unknown.
  double ratio_ci_low = 0, ratio_ci_high = 0;
  /// Two-sided normal test of the log ratio against the series' run-to-run noise; 1 while the
  /// noise is unknown (fewer than 5 runs: the resolution decided).
  double p_value = 1;
  /// The series' run-to-run noise (run_to_run_noise: relative standard deviation of one run's
  /// median); -1 when too few runs to learn it.
  double run_to_run_noise = -1;
  double alpha = 0;          ///< the level it had to pass: CompareOptions::alpha / candidates of the series
  double noise_band = 0;     ///< relative change it had to exceed, and which term set it
  std::string noise_band_source;
  bool regression = false;   ///< slower (an improvement otherwise)
  double clock_difference = -1;  ///< relative SM clock difference of the record between the windows; -1 unknown
  bool clock_changed = false;    ///< clock_difference > CompareOptions::clock_tolerance
  bool driver_changed = false;   ///< the windows' runs do not all share one driver version
  int driver_before = 0, driver_after = 0;  ///< driver of the last run before and the first after
  bool at_newest_commit = false;  ///< at the newest commit of the history
};

/// A series whose own run-to-run noise hides a step of the threshold's size at the window
/// (HistoryCheck::noisy_series): the smallest step its windows can see, and the runs a side they
/// would need to see the threshold.
struct NoisySeries {
  std::string name, method, dtype;
  nlohmann::json params = nlohmann::json::object();
  std::string machine, gpu;
  double run_to_run_noise = 0;      ///< SeriesNoise::sigma
  double smallest_step = 0;         ///< relative step its full windows resolve: exp(z sigma sqrt(2 pi / (2 window))) - 1
  std::size_t runs_for_threshold = 0;  ///< runs on each side to resolve the threshold (0: more than 1,000)
};

/// The result of History-wide change detection.
struct HistoryCheck {
  CheckOptions options;
  std::vector<HistoryChange> changes;  ///< by series, then commit
  std::size_t series = 0;          ///< record series in the history
  std::size_t series_judged = 0;   ///< series long enough for at least one candidate commit
  std::size_t candidates = 0;      ///< (series, commit) pairs tested
  std::string newest_commit;       ///< of the newest run
  std::size_t runs = 0;
  /// Judged series whose noise hides a step of the threshold at the window, with the runs they need.
  std::vector<NoisySeries> noisy_series;

  /// A regression at the newest commit: `ridge history check` exits ExitCode::regression.
  bool regression_at_newest() const;
  /// No series could be judged: exits ExitCode::nothing_compared.
  bool nothing_compared() const { return series_judged == 0; }
};

/// One run of a series: when and where, and its record.
struct SeriesPoint {
  std::string commit, run_time_utc;
  int driver_version = 0;
  Record record;
  /// The run's GPU family (HistoryRun::gpu_family): while a series is too young to learn its noise,
  /// its record's timing method's measured resolution on that family sets the band ("" = unknown:
  /// CompareOptions::min_change_us).
  std::string gpu_family;
};

/// One record's series: the same record (name, method, dtype, params; the n-th of equal ones in a
/// run) in every run of one machine and GPU, oldest run first.
struct RecordSeries {
  std::string machine, gpu;
  std::vector<SeriesPoint> points;
  std::vector<std::size_t> run_positions;  ///< each point's run, as an index into the `runs` given
};

/// Every record's series over `runs` (History::runs(), oldest first), in order of first appearance.
std::vector<RecordSeries> record_series(const History& history, std::span<const HistoryRun> runs);

/// The robust run-to-run noise of a series from its runs' log medians (oldest first; NaN entries
/// are skipped): the 75th percentile of the absolute differences of successive runs over its
/// value for normal noise, so a level step or a quarter of outlying runs barely moves it. A
/// relative standard deviation of one run's median; -1 below 5 finite runs.
double run_to_run_noise(std::span<const double> log_medians);

/// What detection learns of one series once: each run's log median and SM clock, its noise and
/// the normal score a change must pass.
struct SeriesNoise {
  std::vector<double> log_medians;  ///< per point; NaN for a run without samples
  std::vector<double> clocks_mhz;   ///< per point; -1 unknown
  double sigma = -1;                ///< run_to_run_noise of log_medians
  double alpha = 0;                 ///< CompareOptions::alpha / candidates of the series
  double z = 0;                     ///< two-sided normal score of alpha
  bool clock_scaled = false;        ///< runs brought to equal clocks (scale_compute_bound_by_clock)
};
SeriesNoise learn_series_noise(std::span<const SeriesPoint> points, std::size_t candidates, const CheckOptions& options);

/// The smallest relative step full windows of `window_runs` runs a side resolve under `noise`
/// (the run-to-run term of judge_window's band); 0 while the noise is unknown.
double smallest_visible_step(const SeriesNoise& noise, std::size_t window_runs);

/// The runs a side a series' windows take: window_runs, widened while its noise hides a step of
/// the threshold, up to max_window_runs.
std::size_t series_window_runs(const SeriesNoise& noise, const CheckOptions& options);

/// Runs [lo, k) against runs [k, hi) of a series: the ratio of the windows' medians of run
/// medians, and the band it must exceed: the largest of the threshold, the producer's gate, the
/// SM clock change between the windows (unless widen_by_clock is off), and z x the standard error
/// of the difference of two medians of run medians under the series' noise (sigma x
/// sqrt(pi/2 (1/m + 1/n)), the median of one or two runs counted as their mean). While the noise
/// is unknown, the resolution / median / sqrt(runs) instead: the record's timing method's measured
/// resolution on the run's GPU family (resolution.hpp), else min_change_us.
struct WindowJudgement {
  std::size_t runs_before = 0, runs_after = 0;
  double median_before_ms = 0, median_after_ms = 0;
  double log_ratio = 0;
  double standard_error = 0;  ///< of log_ratio; 0 when the noise is unknown
  double p_value = 1;         ///< two-sided normal test of log_ratio against the noise; 1 when unknown
  double min_threshold = 0;   ///< the largest producer gate in the windows
  double clock_difference = -1;
  double noise_band = 0;
  std::string noise_band_source;  ///< "threshold", "producer", "clock", "run-to-run" or "resolution"
  bool change = false;            ///< the ratio lies outside the band
  double split_score = 0;         ///< |difference of the windows' mean log medians| / sqrt(1/m + 1/n)
};
WindowJudgement judge_window(std::span<const SeriesPoint> points, const SeriesNoise& noise, std::size_t lo,
                             std::size_t k, std::size_t hi, const CheckOptions& options);

/// Changes in one series (points oldest first); `first_candidate` is the index of the first
/// point under review. `alpha` and the windows come from `options`; `candidates` (out) counts
/// the commits tested. A series whose newest record is never judged (is_judged) has no changes.
/// Changes are found greedily: of the candidates whose windows differ by more than their band
/// (judge_window), the one with the cleanest split is kept, windows never cross a kept change,
/// and the rest are tested again.
std::vector<HistoryChange> detect_changes(std::span<const SeriesPoint> points, std::size_t first_candidate,
                                          const CheckOptions& options, std::size_t* candidates = nullptr);

/// Change detection over every series of the history. Throws UsageError on bad options or a
/// `since` commit that no run has.
HistoryCheck check_history(const History& history, const CheckOptions& options = {});

/// check_history over series already loaded from `runs` (record_series).
HistoryCheck check_series(std::span<const HistoryRun> runs, std::span<const RecordSeries> series,
                          const CheckOptions& options = {});

/// Plain text for a terminal: a summary line and one line per change.
std::string to_text(const HistoryCheck& check);
nlohmann::json to_json(const HistoryCheck& check);

}  // namespace ridge
