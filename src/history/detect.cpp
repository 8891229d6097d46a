// Change detection over a record's series of runs. The unit of evidence is the run: each run
// gives one number, its median, and the series' own run-to-run noise, learned from those medians,
// sets how far two windows of runs must differ before a level change is called.
//
// From asv (asv.step_detect): one value per run, and a penalty that comes from the series' own
// noise rather than from a fixed floor; the noise is estimated robustly from the data itself.
// From Apache Otava (e-divisive means): every commit is a candidate split, the strongest split is
// kept first, and the series is split again around it (here: windows never cross a kept change).
// Unlike either, a change must also exceed the relative threshold, the record's producer gate and
// its SM clock change (a change the clock alone can explain is not called code), and the
// significance level is divided by the candidates tested (Bonferroni).
#include "ridge/history_check.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <map>
#include <numbers>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "history/parallel.hpp"
#include "ridge/errors.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/stats.hpp"

namespace ridge {

namespace {

// The normal score z with P(|Z| > z) = p (two-sided), by bisection on erfc: called once a series.
double two_sided_normal_score(double p) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::numbers::sqrt2) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// The SM clock a run's record ran at: the median of its samples' clocks where recorded, else its
// start and end readings' mean; -1 unknown.
double run_clock_mhz(const Record& r) {
  if (const double sampled = median_sample_clock_mhz(r); sampled > 0) return sampled;
  const double start = r.clocks_start.sm_mhz, end = r.clocks_end.sm_mhz;
  if (start > 0 && end > 0) return (start + end) / 2;
  return start > 0 ? start : (end > 0 ? end : -1);
}

}  // namespace

double run_to_run_noise(std::span<const double> log_medians) {
  std::vector<double> steps;
  for (std::size_t i = 1; i < log_medians.size(); ++i)
    if (std::isfinite(log_medians[i]) && std::isfinite(log_medians[i - 1]))
      steps.push_back(std::abs(log_medians[i] - log_medians[i - 1]));
  if (steps.size() < 4) return -1;
  std::sort(steps.begin(), steps.end());
  // The difference of two runs has sqrt(2) times one run's deviation; for normal noise its 75th
  // percentile in absolute value is 1.1503 of that. A level step moves one difference of the
  // hundreds, and a quarter of the runs may be outliers, without moving this percentile.
  constexpr double q75_of_abs_normal = 1.1503493803760079;
  return quantile_sorted(steps, 0.75) / (q75_of_abs_normal * std::numbers::sqrt2);
}

SeriesNoise learn_series_noise(std::span<const SeriesPoint> points, std::size_t candidates,
                               const CheckOptions& options) {
  SeriesNoise noise;
  noise.log_medians.reserve(points.size());
  noise.clocks_mhz.reserve(points.size());
  for (const SeriesPoint& p : points) {
    // Runs whose work per call differs (a tuned launch shape) are brought to the newest run's work.
    const double median = p.record.summary.median * work_scale(points.back().record, p.record);
    noise.log_medians.push_back(median > 0 && !p.record.samples_ms.empty() ? std::log(median) : std::nan(""));
    noise.clocks_mhz.push_back(run_clock_mhz(p.record));
  }
  // Equal clocks (CompareOptions::scale_compute_bound_by_clock): each run of a compute-bound record
  // with per-sample clocks brought to the first such run's clock, so the clock's part is gone.
  if (options.compare.scale_compute_bound_by_clock) {
    double reference = -1;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Record& r = points[i].record;
      const double sampled = median_sample_clock_mhz(r);
      if (extra_key::bound.get(r) != "compute" || !(sampled > 0)) continue;
      if (reference < 0) reference = sampled;
      noise.log_medians[i] += std::log(sampled / reference);
      noise.clocks_mhz[i] = reference;
      noise.clock_scaled = true;
    }
  }
  noise.sigma = run_to_run_noise(noise.log_medians);
  noise.alpha = options.compare.alpha / double(std::max<std::size_t>(candidates, 1));
  noise.z = two_sided_normal_score(noise.alpha);
  return noise;
}

double smallest_visible_step(const SeriesNoise& noise, std::size_t window_runs) {
  if (noise.sigma < 0 || window_runs == 0) return 0;
  return std::exp(noise.z * noise.sigma * std::sqrt(2 * median_variance_factor(window_runs))) - 1;
}

std::size_t series_window_runs(const SeriesNoise& noise, const CheckOptions& options) {
  std::size_t runs = options.window_runs;
  while (runs < options.max_window_runs && smallest_visible_step(noise, runs) > options.compare.threshold) ++runs;
  return runs;
}

WindowJudgement judge_window(std::span<const SeriesPoint> points, const SeriesNoise& noise, std::size_t lo,
                             std::size_t k, std::size_t hi, const CheckOptions& options) {
  WindowJudgement w;
  LevelEvidence before, after;
  std::vector<double> clocks_before, clocks_after;
  for (std::size_t i = lo; i < hi; ++i) {
    const double y = noise.log_medians[i];
    if (!std::isfinite(y)) continue;
    (i < k ? before : after).run_log_medians.push_back(y);
    if (noise.clocks_mhz[i] > 0) (i < k ? clocks_before : clocks_after).push_back(noise.clocks_mhz[i]);
    if (const auto& gate = points[i].record.gate; gate && gate->min_threshold > w.min_threshold)
      w.min_threshold = gate->min_threshold;
  }
  w.runs_before = before.run_log_medians.size();
  w.runs_after = after.run_log_medians.size();
  if (before.run_log_medians.empty() || after.run_log_medians.empty()) return w;
  if (!clocks_before.empty() && !clocks_after.empty()) {
    const double b = median_of_copy(clocks_before), a = median_of_copy(clocks_after);
    w.clock_difference = std::abs(a - b) / std::max(a, b);
  }
  // The band starts as compare's does (NoiseBand), with the terms a window can measure; the
  // detector (CompareOptions::level_detector, run medians by default) adds the series' noise.
  LevelTerms terms;
  terms.band = NoiseBand::from_threshold(options.compare.threshold, w.min_threshold);
  if (options.compare.widen_by_clock && !noise.clock_scaled && w.clock_difference > 0)
    terms.clock_difference = w.clock_difference;
  terms.method = points[k].record.method;
  terms.gpu_family = points[k].gpu_family;
  terms.series_noise = noise.sigma;
  terms.series_z = noise.z;
  const LevelJudgement level = options.compare.level_detector->judge(before, after, terms, options.compare);
  w.log_ratio = level.log_ratio;
  w.median_before_ms = level.before_ms;
  w.median_after_ms = level.after_ms;
  w.standard_error = level.standard_error;
  w.p_value = level.p_value;
  w.noise_band = level.band.relative;
  w.noise_band_source = level.band.source;
  w.change = level.changed;
  w.split_score = level.split_score;
  return w;
}

namespace {

// The window around candidate k: up to window_runs runs each side, never across a kept change.
std::pair<std::size_t, std::size_t> window_of(std::size_t k, std::size_t n, const std::set<std::size_t>& kept,
                                              std::size_t window_runs) {
  std::size_t lo = k >= window_runs ? k - window_runs : 0;
  std::size_t hi = std::min(n, k + window_runs);
  if (auto it = kept.lower_bound(k); it != kept.begin()) lo = std::max(lo, *std::prev(it));
  if (auto it = kept.upper_bound(k); it != kept.end()) hi = std::min(hi, *it);
  return {lo, hi};
}

HistoryChange change_from(std::span<const SeriesPoint> points, std::size_t lo, std::size_t k, std::size_t hi,
                          const WindowJudgement& w, const SeriesNoise& noise, const CheckOptions& options) {
  HistoryChange c;
  const SeriesPoint& first = points[k];
  const Record& r = first.record;
  c.commit = first.commit;
  c.previous_commit = points[k - 1].commit;
  c.run_time_utc = first.run_time_utc;
  c.name = r.name;
  c.method = to_string(r.method);
  c.dtype = to_string(r.dtype);
  c.params = r.params;
  c.runs_before = w.runs_before;
  c.runs_after = w.runs_after;
  c.median_before_ms = w.median_before_ms;
  c.median_after_ms = w.median_after_ms;
  c.ratio = std::exp(w.log_ratio);
  if (noise.sigma >= 0) {  // a noise of 0 gives the interval [ratio, ratio]
    constexpr double z95 = 1.959963984540054;
    c.ratio_ci_low = std::exp(w.log_ratio - z95 * w.standard_error);
    c.ratio_ci_high = std::exp(w.log_ratio + z95 * w.standard_error);
  }
  c.p_value = w.p_value;
  c.alpha = noise.alpha;
  c.run_to_run_noise = noise.sigma;
  c.noise_band = w.noise_band;
  c.noise_band_source = w.noise_band_source;
  c.regression = c.ratio > 1;
  c.clock_difference = w.clock_difference;
  c.clock_changed = w.clock_difference > options.compare.clock_tolerance;
  std::set<int> drivers;
  for (std::size_t i = lo; i < hi; ++i)
    if (points[i].driver_version > 0) drivers.insert(points[i].driver_version);
  c.driver_changed = drivers.size() > 1;
  c.driver_before = points[k - 1].driver_version;
  c.driver_after = first.driver_version;
  return c;
}

}  // namespace

void validate(const CheckOptions& options) {
  if (options.window_runs < 1) throw UsageError("window_runs must be >= 1");
  if (options.min_runs_before < 1) throw UsageError("min_runs_before must be >= 1");
  if (options.max_window_runs < options.window_runs)
    throw UsageError(fmt::format("max_window_runs ({}) must be >= window_runs ({})", options.max_window_runs,
                                 options.window_runs));
  if (options.window_runs < options.min_runs_before)
    throw UsageError(fmt::format("window_runs ({}) must be >= min_runs_before ({})", options.window_runs,
                                 options.min_runs_before));
  if (!(options.compare.alpha > 0 && options.compare.alpha < 1)) throw UsageError("alpha must be in (0, 1)");
  if (!(options.compare.threshold >= 0)) throw UsageError("threshold must be >= 0");
  if (!options.compare.level_detector)
    throw UsageError(fmt::format("no level detector; choose one of: {}", fmt::join(level_detector_names(), ", ")));
}

std::vector<HistoryChange> detect_changes(std::span<const SeriesPoint> points, std::size_t first_candidate,
                                          const CheckOptions& options, std::size_t* candidates) {
  validate(options);
  const std::size_t n = points.size();
  // Candidates: the first run of each commit under review with enough runs before it.
  std::vector<std::size_t> positions;
  for (std::size_t k = std::max(first_candidate, options.min_runs_before); k < n; ++k)
    if (points[k].commit != points[k - 1].commit) positions.push_back(k);
  if (candidates) *candidates = positions.size();
  if (positions.empty() || !is_judged(points.back().record)) return {};
  const SeriesNoise noise = learn_series_noise(points, positions.size(), options);
  const std::size_t window = series_window_runs(noise, options);
  // Each window pair judged once: its split score when it is a change, none otherwise.
  std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::optional<double>> judged;
  std::set<std::size_t> kept;
  for (;;) {
    std::optional<std::size_t> best;
    double best_score = -1;
    for (std::size_t k : positions) {
      if (kept.count(k)) continue;
      const auto [lo, hi] = window_of(k, n, kept, window);
      if (k - lo < options.min_runs_before) continue;
      auto it = judged.find({lo, k, hi});
      if (it == judged.end()) {
        const WindowJudgement w = judge_window(points, noise, lo, k, hi, options);
        it = judged.emplace(std::tuple{lo, k, hi}, w.change ? std::optional<double>(w.split_score) : std::nullopt).first;
      }
      if (it->second && *it->second > best_score) {
        best = k;
        best_score = *it->second;
      }
    }
    if (!best) break;
    kept.insert(*best);
  }
  // Each kept change again over its final windows (a later kept change may have narrowed them).
  std::vector<HistoryChange> changes;
  for (std::size_t k : kept) {
    const auto [lo, hi] = window_of(k, n, kept, window);
    if (const WindowJudgement w = judge_window(points, noise, lo, k, hi, options); w.change)
      changes.push_back(change_from(points, lo, k, hi, w, noise, options));
  }
  return changes;
}

namespace {

// Index of the last run at commit `since` (or a unique prefix of one); throws when none matches.
std::size_t since_index(std::span<const HistoryRun> runs, const std::string& since) {
  std::optional<std::size_t> found;
  std::set<std::string> matches;
  const bool exact = std::any_of(runs.begin(), runs.end(), [&](const HistoryRun& r) { return r.commit == since; });
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (exact ? runs[i].commit == since : runs[i].commit.rfind(since, 0) == 0) {
      found = i;
      matches.insert(runs[i].commit);
    }
  if (!found)
    throw UsageError(fmt::format("since: commit '{}' is not in the history ({} runs); give the commit of a run in it",
                                 since, runs.size()));
  if (matches.size() > 1)
    throw UsageError(fmt::format("since: '{}' matches {} commits; give more of the commit", since, matches.size()));
  return *found;
}

}  // namespace

bool HistoryCheck::regression_at_newest() const {
  return std::any_of(changes.begin(), changes.end(), [](const HistoryChange& c) { return c.regression && c.at_newest_commit; });
}

namespace {

// Whether two JSON values print alike (record_match_key compares params by their dump): same types
// throughout (1 is not 1.0), numbers bit for bit (0.0 is not -0.0).
bool same_json(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case nlohmann::json::value_t::object: {
      if (a.size() != b.size()) return false;
      for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
        if (i.key() != j.key() || !same_json(*i, *j)) return false;
      return true;
    }
    case nlohmann::json::value_t::array: {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!same_json(a[i], b[i])) return false;
      return true;
    }
    case nlohmann::json::value_t::number_float:
      return std::bit_cast<std::uint64_t>(a.get<double>()) == std::bit_cast<std::uint64_t>(b.get<double>());
    default: return a == b;
  }
}

// Whether two records have one record_match_key.
bool same_identity(const Record& a, const Record& b) {
  return a.name == b.name && a.method == b.method && a.dtype == b.dtype && same_json(a.params, b.params);
}

}  // namespace

std::vector<RecordSeries> record_series(const History& history, std::span<const HistoryRun> runs) {
  std::map<std::string, std::size_t> series_of_key;
  std::vector<RecordSeries> series;
  // The columns detection reads, not each run's whole JSON (History::records_for_detection).
  std::unordered_map<std::int64_t, std::vector<Record>> records_of_run = history.records_for_detection();
  // The series of the last run placed, by position. A run on the same machine and GPU whose records
  // match its records one by one (the usual case: the same benchmarks again) has the same keys, so
  // takes the same series without building them.
  std::vector<std::size_t> previous;
  const HistoryRun* previous_run = nullptr;
  const std::vector<Record>* previous_records = nullptr;
  // First each record's series (placed, run by run), then the points moved in with each series'
  // room made once: 10,000 points of 600 bytes grown by doubling were moved twice over.
  std::vector<std::pair<std::size_t, std::vector<Record>*>> placed_runs;  // (run index, its records)
  std::vector<std::size_t> placed;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto run = records_of_run.find(runs[i].id);
    if (run == records_of_run.end()) continue;  // a run without records
    std::vector<Record>& records = run->second;
    const bool as_before = previous_run && previous_run->machine == runs[i].machine &&
                           previous_run->gpu == runs[i].gpu && previous.size() == records.size() &&
                           [&] {
                             for (std::size_t j = 0; j < records.size(); ++j)
                               if (!same_identity(records[j], (*previous_records)[j])) return false;
                             return true;
                           }();
    if (!as_before) {
      previous.clear();
      std::map<std::string, std::size_t> occurrences;
      for (const Record& r : records) {
        const std::string match = record_match_key(r);
        const std::string key =
            fmt::format("{}\x1f{}\x1f{}\x1f{}", match, occurrences[match]++, runs[i].machine, runs[i].gpu);
        const auto [it, is_new] = series_of_key.emplace(key, series.size());
        if (is_new) {
          series.push_back({runs[i].machine, runs[i].gpu, {}, {}});
          sizes.push_back(0);
        }
        previous.push_back(it->second);
      }
    }
    for (const std::size_t s : previous) ++sizes[s];
    placed.insert(placed.end(), previous.begin(), previous.end());
    placed_runs.emplace_back(i, &records);
    previous_run = &runs[i];
    previous_records = &records;
  }
  for (std::size_t s = 0; s < series.size(); ++s) {
    series[s].points.reserve(sizes[s]);
    series[s].run_positions.reserve(sizes[s]);
  }
  std::size_t next = 0;
  for (const auto& [i, records] : placed_runs)
    for (Record& r : *records) {
      RecordSeries& s = series[placed[next++]];
      s.points.push_back({runs[i].commit, runs[i].run_time_utc, runs[i].driver_version, std::move(r), runs[i].gpu_family});
      s.run_positions.push_back(i);
    }
  return series;
}

namespace {

// The series, when its own noise hides a step of the threshold's size at the window.
std::optional<NoisySeries> noisy_series(const RecordSeries& s, std::size_t candidates, const CheckOptions& options) {
  const SeriesNoise noise = learn_series_noise(s.points, candidates, options);
  const double threshold = options.compare.threshold;
  const double smallest = smallest_visible_step(noise, series_window_runs(noise, options));
  if (!(smallest > threshold)) return std::nullopt;
  const Record& r = s.points.back().record;
  NoisySeries n{r.name, to_string(r.method), to_string(r.dtype), r.params, s.machine, s.gpu, noise.sigma, smallest, 0};
  for (std::size_t runs = options.window_runs; runs <= 1000 && n.runs_for_threshold == 0; ++runs)
    if (smallest_visible_step(noise, runs) <= threshold) n.runs_for_threshold = runs;
  return n;
}

// check_series' work. With `release` (the same series, owned by the caller), each series' points
// are freed by the thread that judged it: freeing a million records is then done on every core,
// beside the detection, not on one core after it.
HistoryCheck judge_series(std::span<const HistoryRun> runs, std::span<const RecordSeries> series,
                          const CheckOptions& options, RecordSeries* release) {
  validate(options);
  HistoryCheck result;
  result.options = options;
  result.runs = runs.size();
  if (runs.empty()) return result;
  result.newest_commit = runs.back().commit;
  const std::size_t first_run = options.since.empty() ? 0 : since_index(runs, options.since) + 1;
  result.series = series.size();
  // Series are independent: detected on every core, gathered in series order (the same result).
  std::vector<std::vector<HistoryChange>> found(series.size());
  std::vector<std::size_t> tested_of(series.size(), 0);
  std::vector<char> judged(series.size(), 0);
  std::vector<std::optional<NoisySeries>> noisy(series.size());
  history_detail::for_each_on_every_core(series.size(), [&](std::size_t s) {
    const auto& positions = series[s].run_positions;
    const auto first = static_cast<std::size_t>(
        std::lower_bound(positions.begin(), positions.end(), first_run) - positions.begin());
    found[s] = detect_changes(series[s].points, first, options, &tested_of[s]);
    judged[s] = tested_of[s] > 0 && is_judged(series[s].points.back().record);
    if (judged[s]) noisy[s] = noisy_series(series[s], tested_of[s], options);
    if (release) std::vector<SeriesPoint>().swap(release[s].points);
  });
  for (std::size_t index = 0; index < series.size(); ++index) {
    const RecordSeries& s = series[index];
    std::vector<HistoryChange>& changes = found[index];
    result.candidates += tested_of[index];
    if (judged[index]) ++result.series_judged;
    if (noisy[index]) result.noisy_series.push_back(std::move(*noisy[index]));
    for (HistoryChange& c : changes) {
      c.machine = s.machine;
      c.gpu = s.gpu;
      c.at_newest_commit = c.commit == result.newest_commit;
      result.changes.push_back(std::move(c));
    }
  }
  return result;
}

}  // namespace

HistoryCheck check_series(std::span<const HistoryRun> runs, std::span<const RecordSeries> series,
                          const CheckOptions& options) {
  return judge_series(runs, series, options, nullptr);
}

HistoryCheck check_history(const History& history, const CheckOptions& options) {
  validate(options);
  const std::vector<HistoryRun> runs = history.runs();
  std::vector<RecordSeries> series = record_series(history, runs);
  return judge_series(runs, series, options, series.data());
}

}  // namespace ridge
