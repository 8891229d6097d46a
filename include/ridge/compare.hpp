#pragma once
// Comparing two result files: per-record ratios of medians, a rank test on the raw samples, a
// geometric mean, and verdicts a CI job can act on. CPU only. (Implementation: src/results/compare.cpp;
// the rank test and NoiseBand are in level_detector.hpp, the detection both compare and history share.)
#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/level_detector.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// Percentile-bootstrap confidence interval of median(b) / median(a): resamples both sides
/// `resamples` times with a fixed seed (reproducible). Returns {low, high}.
std::pair<double, double> bootstrap_median_ratio_ci(std::span<const double> a, std::span<const double> b,
                                                    double confidence = 0.95, int resamples = 2000,
                                                    unsigned seed = 12345);

/// Interval of median(b) / median(a) from each side's distribution-free median interval
/// (Summary::median_ci_low/high), combined in log space as independent errors: O(1), for
/// comparisons too large to bootstrap. Returns {0, 0} when a median or bound is not positive.
std::pair<double, double> order_statistic_ratio_ci(const Summary& a, const Summary& b);

enum class Verdict {
  regression,          ///< significantly slower by more than the threshold
  improvement,         ///< significantly faster by more than the threshold
  within_threshold,    ///< a significant difference, but smaller than the threshold
  no_significant_change,
  informational,       ///< compared but never judged (e.g. the deliberately wrong wall_naive method)
  /// Beyond the record's band (from its baselines' own spread, or its method's measured resolution)
  /// but within CompareOptions::min_change_us, the most one process was seen to jump: re-measure it
  /// in a fresh process to confirm (confirm_suspects); not a regression by itself.
  suspect,
  missing_in_base,
  missing_in_new,
};
std::string to_string(Verdict v);

struct CompareOptions {
  double threshold = 0.05;        ///< relative change of the median that matters (0.05 = 5%)
  double alpha = 0.01;            ///< significance level of the two-sided rank test
  double clock_tolerance = 0.10;  ///< relative SM clock difference reported as "clocks differ"
  int bootstrap_resamples = 2000;  ///< resamples of each record's ratio interval
  /// Largest resamples x (all samples of both files) that is bootstrapped (1e8 draws: about 2 s of
  /// one core; a full report, about 10,000 samples a file, is far below it);
  /// above it every row's interval is order_statistic_ratio_ci (Comparison::ratio_ci_method).
  double bootstrap_budget = 1e8;
  /// With several baselines (repeated runs of the same code), a change must also exceed this many
  /// times the record's run-to-run spread (RecordComparison::run_to_run_spread).
  double spread_factor = 3;
  /// The fixed resolution, microseconds: the absolute term of a record's band where its timing
  /// method's resolution on its GPU family was never measured (resolution.hpp), and the most one
  /// process was seen to jump. Between processes, kernels of a few microseconds move by tens to a
  /// few hundred nanoseconds (cuBLAS heuristics, where buffers land in L2), even with the SM clock
  /// settled: in ten reports in a row on the H200 a 1.6 us add kernel read 0.47 us slower in one
  /// run, and a 5 us GEMM up to 0.36 us (results/h200/gate). A significant change beyond a
  /// narrower band (a measured method, or several baselines' spread) but within this is
  /// Verdict::suspect: confirmed in a fresh process before it is called.
  double min_change_us = 0.5;
  /// The absolute term of the band from the record's timing method on the base's GPU family
  /// (spread_factor x measured_resolution()'s run-to-run sd) where that was measured; false: always
  /// min_change_us.
  bool per_method_resolution = true;
  /// With at least this many baselines holding a record, their measured spread sets its band and
  /// the resolution no longer does: a significant change beyond the band but within
  /// min_change_us is Verdict::suspect (re-measure), not a pass and not yet a regression.
  std::size_t spread_sets_band_from = 3;
  /// Clock: when a record's SM clocks differ between the runs, its band widens by that difference
  /// (a GEMM at the power cap runs as fast as its clock allows; a change the clock explains is not code).
  /// Not where spread_sets_band_from or more baselines span the new run's clock: their spread was
  /// measured across those clocks (on the H100 the 4096^3 BF16 GEMM read 177.0-177.5 us in ten runs
  /// whose NVML clocks read 1635-1905 MHz: the readings, not the kernel, moved; results/h100/gate).
  bool widen_by_clock = true;
  /// Equal clocks: a compute-bound record (extra.bound "compute") whose samples' SM clock differs
  /// between the runs is compared at the base's clock (its new time scaled by new clock / base
  /// clock), and its band is not widened. Needs each side's per-sample clocks (the launch-free
  /// timers record them). Off by default: on the H200 the power-capped 4096^3 GEMM's time did not
  /// follow its clock closely enough, and 2 of 45 pairs of identical runs were flagged by 5.7-5.8%
  /// (results/h200/gate/equal_clocks_false_alarms.txt), where widening the band flagged none.
  bool scale_compute_bound_by_clock = false;
  /// A record the baseline judges that the new run lacks fails the gate (Comparison::fails_on_missing,
  /// `ridge compare` exit 9): a report section that crashed must not pass. True where dropping
  /// records is intended.
  bool allow_missing = false;
  /// Decides whether each record's level changed (level_detector.hpp): the rank test of the raw
  /// samples here; history check's run medians in CheckOptions::compare. Another detector: one
  /// class and one line in make_level_detector's registry, or any LevelDetector set here.
  std::shared_ptr<const LevelDetector> level_detector = make_level_detector("rank_test");
};

/// One record matched (or not) between the two files. Times in milliseconds.
struct RecordComparison {
  std::string name, method, dtype;
  nlohmann::json params = nlohmann::json::object();
  std::size_t base_count = 0, new_count = 0;
  double base_median_ms = 0, new_median_ms = 0;
  double ratio = 0;                  ///< new median / base median (> 1: slower); 0 when missing
  double ratio_ci_low = 0, ratio_ci_high = 0;  ///< 95% interval of the ratio (Comparison::ratio_ci_method)
  RankTest test;
  Verdict verdict = Verdict::no_significant_change;
  std::string note;  ///< why the verdict, when not obvious
  /// Baselines that hold this record (their samples are pooled for the rank test; base_median_ms
  /// is the median of their medians).
  std::size_t baseline_runs = 0;
  /// Spread of those baselines' medians relative to their median: 1.4826 x their median absolute
  /// deviation from 5 baselines on (robust to one process that jumped), the standard deviation
  /// below; -1 below 2 runs.
  double run_to_run_spread = -1;
  double min_threshold = 0;       ///< the producers' RecordGate::min_threshold (the larger of base and new)
  /// The relative change a significant difference must exceed to be a regression or an improvement:
  /// max(threshold, min_threshold, spread_factor x run_to_run_spread); 0 for rows never judged.
  double noise_band = 0;
  std::string noise_band_source;  ///< which term set it: "threshold", "producer", "run-to-run", "resolution" or "clock"
  /// The resolution term, microseconds (0 where the baselines' spread replaced it), and what it rests
  /// on: "Hopper graph_replay" for a measured method, "fixed" for CompareOptions::min_change_us.
  double resolution_us = 0;
  std::string resolution_basis;
  std::string gate_reason;        ///< the producer's reason, when a gate set the verdict or the band
  /// The smallest slowdown this comparison could have flagged for the record: its noise band, or
  /// the half-width of the ratio's 95% interval when that is wider (a change inside the sampling
  /// noise is not significant). 0 for rows never judged.
  double smallest_flagged_slowdown = 0;
  /// Relative SM clock difference of the record between the runs: from the median clock of its
  /// samples where both sides recorded them, else from its start and end readings; -1 unknown.
  double clock_difference = -1;
  /// The new run's samples were scaled to the base's SM clock (CompareOptions::scale_compute_bound_by_clock)
  /// by this factor before the ratio, the test and the interval; 1 = not scaled.
  double clock_scale = 1;
  /// The new run's samples were brought to the base's work per call by this factor (base work /
  /// new work: flops where counted, else bytes): a record whose identity matches but whose work
  /// differs (a ceiling probe's tuner chose another launch shape, with another amount of work) is
  /// compared per unit of work, its rate. Baselines pooled are brought to the first one's work the
  /// same way. 1 = the work agreed.
  double work_scale = 1;
  /// The band's clock term was left out: the new run's clock lies within those its baselines ran at,
  /// whose measured spread (spread_sets_band_from or more) already holds what the clock did.
  bool clock_within_baselines = false;
  /// Missing from the new run although the base judges it (is_judged): counts toward Comparison::missing_judged.
  bool missing_judged = false;
};

struct Comparison {
  CompareOptions options;
  std::vector<RecordComparison> rows;  ///< base order, then records only in the new file
  /// Over rows judged (neither missing nor informational); NaN when none was (never 0, which reads as a speed-up).
  double geomean_ratio = std::numeric_limits<double>::quiet_NaN();
  std::size_t geomean_count = 0;     ///< rows judged: matched, with samples, not informational
  std::size_t matched = 0;           ///< records found in both files (judged or informational)
  std::size_t regressions = 0, improvements = 0, within_threshold = 0, unchanged = 0, missing = 0;
  std::size_t suspects = 0;  ///< rows Verdict::suspect: re-measure those records to confirm
  bool different_devices = false;
  bool different_clocks = false;
  std::vector<std::string> warnings;  ///< devices, clocks, duplicate records, tool versions, interval method
  /// How the rows' ratio intervals were computed: "bootstrap" or, for very large comparisons,
  /// "order_statistics" (see CompareOptions::bootstrap_budget).
  std::string ratio_ci_method = "bootstrap";
  std::string base_label, new_label;  ///< e.g. file names
  std::size_t baselines = 1;          ///< baseline result sets compared against
  std::string gpu_family;             ///< the first baseline's GPU family (gpu_family()), "" unknown
  /// Records of the first baseline that compare judges (is_judged) but the new run lacks.
  std::size_t missing_judged = 0;

  /// True when at least one record regressed significantly beyond the threshold.
  bool has_regression() const { return regressions > 0; }
  /// True when no record was judged (none matched, or only informational ones did): a gate
  /// must not pass on that (`ridge compare` exits ExitCode::nothing_compared).
  bool nothing_compared() const { return geomean_count == 0; }
  /// True when a judged baseline record is missing from the new run and CompareOptions::allow_missing
  /// is off: the gate fails (`ridge compare` exits ExitCode::records_missing).
  bool fails_on_missing() const { return missing_judged > 0 && !options.allow_missing; }
};

/// Whether compare ever judges this record: timed (not a check), not by wall_naive, not marked
/// informational by its producer, and measured in its own run (not carried_over from a cache).
bool is_judged(const Record& r);

/// The median SM clock of a record's samples (extra.sample_sm_mhz), MHz; -1 when not recorded.
double median_sample_clock_mhz(const Record& r);

/// The factor that brings `r`'s times to `reference`'s work per call (FLOPs where counted, else
/// bytes): reference work / r's work, 1 when either is unknown or they agree. compare and history
/// compare a record whose work differs between runs (a ceiling probe's tuned launch shape) by rate.
double work_scale(const Record& reference, const Record& r);

/// Why nothing was compared, in words (how many records matched of how many on each side, and how
/// records match); empty when something was. The one text `ridge compare` (exit 6) and Python's
/// NothingComparedError give.
std::string nothing_compared_reason(const Comparison& c);

/// `first` with its suspects confirmed or cleared by `again`, a comparison of the same baselines
/// with those records measured again in a fresh process: a suspect that is again beyond its band
/// (suspect or regression in `again`) becomes a regression, any other is cleared (its note says
/// so). Rows are matched by name, method, dtype and params.
Comparison confirm_suspects(Comparison first, const Comparison& again);

/// Key that matches a record across files: name, method, dtype and the canonical JSON of params.
std::string record_match_key(const Record& r);

/// Compares `next` against `base` record by record. Throws UsageError on an invalid option.
Comparison compare_results(const ResultSet& base, const ResultSet& next, const CompareOptions& options = {});

/// Compares `next` against several baselines: repeated runs of the same code (asv's and conbench's
/// history). Rows follow the first baseline; each record's samples from every baseline holding it
/// are pooled for the rank test, its base median is the median of their medians, and the spread of
/// those medians widens its noise band (RecordComparison::noise_band). With one baseline this is
/// compare_results(base, next). Throws UsageError when there is no baseline or the baselines are
/// not runs of the same code: different GPUs, different ridge builds (git sha), or a baseline
/// sharing no record with the first. `labels` (one per baseline, e.g. file names) name them in
/// those errors.
Comparison compare_results(std::span<const ResultSet> baselines, const ResultSet& next,
                           const CompareOptions& options = {}, std::span<const std::string> labels = {});

/// A relative threshold from "5%", "5 %" or "0.05". Throws UsageError otherwise or when negative.
double parse_threshold(const std::string& text);

/// A row's noise band in words, e.g. "5.0% (threshold)", "12.0% (3x run-to-run 4.0%)"; "-" when never judged.
std::string noise_band_text(const RecordComparison& r);
/// Markdown: a summary line, warnings, and one table row per record.
std::string to_markdown(const Comparison& c);
/// Plain-text table for a terminal.
std::string to_text(const Comparison& c);
nlohmann::json to_json(const Comparison& c);

}  // namespace ridge
