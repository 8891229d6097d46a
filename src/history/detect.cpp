// Change detection over a record's series of runs. At each commit under review the runs before
// and from it on are compared as `ridge compare` compares baselines with a new run: the same
// function (compare_results) gives the rank test, the ratio and its interval, and the noise band
// (threshold, the record's gate, its run-to-run spread, its clock change, the timer's resolution),
// so history and compare judge a record alike. Only the significance level differs: it is divided
// by the number of commits tested in the series (Bonferroni), since each is a test.
#include "ridge/history.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "history/parallel.hpp"
#include "ridge/errors.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/stats.hpp"

namespace ridge {

namespace {

// The after-window's runs as one record: their samples pooled, the strictest gate, clocks from
// the first start to the last end, per-sample clocks where every run has them.
Record pooled_record(std::span<const SeriesPoint> after) {
  Record pooled = after.front().record;
  pooled.samples_ms.clear();
  bool all_sample_clocks = true;
  nlohmann::json sample_clocks = nlohmann::json::array();
  for (const SeriesPoint& p : after) {
    const Record& r = p.record;
    pooled.samples_ms.insert(pooled.samples_ms.end(), r.samples_ms.begin(), r.samples_ms.end());
    if (r.gate && (!pooled.gate || r.gate->informational || r.gate->min_threshold > pooled.gate->min_threshold))
      pooled.gate = r.gate;
    const auto it = r.extra.find(extra_key::sample_sm_mhz);
    if (it == r.extra.end() || !it->is_array()) all_sample_clocks = false;
    else
      for (const auto& v : *it) sample_clocks.push_back(v);
  }
  pooled.clocks_end = after.back().record.clocks_end;
  if (all_sample_clocks) pooled.extra[extra_key::sample_sm_mhz] = std::move(sample_clocks);
  else pooled.extra.erase(extra_key::sample_sm_mhz);
  finalize(pooled);
  return pooled;
}

}  // namespace

CompareOptions window_compare_options(const CompareOptions& options, std::size_t runs_before, std::size_t runs_after) {
  CompareOptions scaled = options;
  const std::size_t smaller = std::min(runs_before, runs_after);
  if (smaller < 2) return scaled;
  const double shrink = 1 / std::sqrt(double(smaller));
  scaled.min_change_us *= shrink;
  scaled.spread_factor *= shrink;
  return scaled;
}

namespace {

// Runs [lo, k) against runs [k, hi), judged by compare_results (its resolution and run-to-run
// terms scaled to the windows when `scale_by_window`).
RecordComparison judge_window(std::span<const SeriesPoint> points, std::size_t lo, std::size_t k, std::size_t hi,
                              const CompareOptions& compare, bool scale_by_window) {
  std::vector<ResultSet> baselines(k - lo);
  for (std::size_t i = lo; i < k; ++i) baselines[i - lo].records.push_back(points[i].record);
  ResultSet next;
  next.records.push_back(pooled_record(points.subspan(k, hi - k)));
  const CompareOptions options = scale_by_window ? window_compare_options(compare, k - lo, hi - k) : compare;
  return compare_results(baselines, next, options).rows.front();
}

// Whether compare_results could call runs [lo, k) against runs [k, hi) a change: the ratio it
// judges (the pooled after-samples' median over the median of the before-runs' medians) lies
// outside the threshold. Its noise band is never narrower than the threshold, so a pair inside it
// is no change, and the rank test, the interval and the band are not computed (the medians here
// may differ from compare_results' in the last bit: the margin covers that). Exact only where
// compare_results does not rescale the new samples (scale_compute_bound_by_clock off); with it on,
// every pair is judged in full. A margin of 1e-9 keeps rounding on the side of judging.
// The median of `v`, reordering it (a partial sort: this runs for every candidate commit).
double median_in_place(std::vector<double>& v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  return 0.5 * (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + v[mid]);
}

// Each point's lower and upper middle samples (0-based (n - 1) / 2 and n / 2 of its sorted
// samples; NaN for a point without samples). The pooled median of several points' samples lies
// between the lowest lower middle and the highest upper middle among them: fewer than half of the
// pooled samples lie below the lowest lower middle (each point has fewer than half of its own
// below its lower middle), and likewise above the highest upper middle.
std::vector<std::pair<double, double>> middles_of(std::span<const SeriesPoint> points) {
  std::vector<std::pair<double, double>> middles(points.size());
  std::vector<double> sorted;
  for (std::size_t i = 0; i < points.size(); ++i) {
    sorted.assign(points[i].record.samples_ms.begin(), points[i].record.samples_ms.end());
    if (sorted.empty()) {
      middles[i] = {std::nan(""), std::nan("")};
      continue;
    }
    std::sort(sorted.begin(), sorted.end());
    middles[i] = {sorted[(sorted.size() - 1) / 2], sorted[sorted.size() / 2]};
  }
  return middles;
}

bool may_be_change(std::span<const SeriesPoint> points, std::span<const std::pair<double, double>> middles,
                   std::size_t lo, std::size_t k, std::size_t hi, const CompareOptions& options,
                   std::vector<double>& scratch) {
  if (options.scale_compute_bound_by_clock) return true;
  scratch.clear();
  for (std::size_t i = lo; i < k; ++i) scratch.push_back(points[i].record.summary.median);
  const double before = median_in_place(scratch);
  if (!(before > 0)) return true;
  constexpr double margin = 1e-9;
  const double lowest = 1 - options.threshold + margin, highest = 1 + options.threshold - margin;
  // Bounds of the after-median first (rounding keeps the order, so the ratio lies within them too):
  // a pair inside the threshold for both needs no pooling. In a quiet series that is almost every pair.
  double low = middles[k].first, high = middles[k].second;
  for (std::size_t i = k + 1; i < hi; ++i) {
    low = std::min(low, middles[i].first);
    high = std::max(high, middles[i].second);
  }
  bool bounded = true;
  for (std::size_t i = k; i < hi; ++i) bounded = bounded && !std::isnan(middles[i].first);
  if (bounded && low / before >= lowest && high / before <= highest) return false;
  scratch.clear();
  for (std::size_t i = k; i < hi; ++i)
    scratch.insert(scratch.end(), points[i].record.samples_ms.begin(), points[i].record.samples_ms.end());
  if (scratch.empty()) return true;
  const double ratio = median_in_place(scratch) / before;
  return ratio > highest || ratio < lowest;
}

bool is_change(const RecordComparison& row) {
  return row.verdict == Verdict::regression || row.verdict == Verdict::improvement;
}

// How cleanly the windows separate: |U / (m n) - 1/2|, 1/2 when every sample moved.
double rank_effect(const RecordComparison& row) {
  const double pairs = double(row.base_count) * double(row.new_count);
  return pairs > 0 ? std::abs(row.test.u / pairs - 0.5) : 0;
}


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
                          const RecordComparison& row, const CompareOptions& options) {
  HistoryChange c;
  const SeriesPoint& first = points[k];
  c.commit = first.commit;
  c.previous_commit = points[k - 1].commit;
  c.run_time_utc = first.run_time_utc;
  c.name = row.name;
  c.method = row.method;
  c.dtype = row.dtype;
  c.params = row.params;
  c.runs_before = k - lo;
  c.runs_after = hi - k;
  c.median_before_ms = row.base_median_ms;
  c.median_after_ms = row.new_median_ms;
  c.ratio = row.ratio;
  c.ratio_ci_low = row.ratio_ci_low;
  c.ratio_ci_high = row.ratio_ci_high;
  c.p_value = row.test.p_value;
  c.alpha = options.alpha;
  c.noise_band = row.noise_band;
  c.noise_band_source = row.noise_band_source;
  c.regression = row.verdict == Verdict::regression;
  c.clock_difference = row.clock_difference;
  c.clock_changed = row.clock_difference > options.clock_tolerance;
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
  if (options.window_runs < options.min_runs_before)
    throw UsageError(fmt::format("window_runs ({}) must be >= min_runs_before ({})", options.window_runs,
                                 options.min_runs_before));
  if (!(options.compare.alpha > 0 && options.compare.alpha < 1)) throw UsageError("alpha must be in (0, 1)");
  if (!(options.compare.threshold >= 0)) throw UsageError("threshold must be >= 0");
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
  if (positions.empty()) return {};
  CompareOptions scan = options.compare;
  scan.alpha = options.compare.alpha / double(positions.size());
  scan.bootstrap_budget = 0;  // the interval does not decide; order statistics are O(1)
  // Each window pair judged once: its rank effect when compare_results calls it a change, none otherwise.
  std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::optional<double>> judged;
  std::vector<double> scratch;
  const std::vector<std::pair<double, double>> middles =
      scan.scale_compute_bound_by_clock ? std::vector<std::pair<double, double>>() : middles_of(points);
  std::set<std::size_t> kept;
  for (;;) {
    std::optional<std::size_t> best;
    double best_effect = -1;
    for (std::size_t k : positions) {
      if (kept.count(k)) continue;
      const auto [lo, hi] = window_of(k, n, kept, options.window_runs);
      if (k - lo < options.min_runs_before) continue;
      auto it = judged.find({lo, k, hi});
      if (it == judged.end()) {
        std::optional<double> effect;
        if (may_be_change(points, middles, lo, k, hi, scan, scratch))
          if (const RecordComparison row = judge_window(points, lo, k, hi, scan, options.scale_floors_by_window);
              is_change(row)) effect = rank_effect(row);
        it = judged.emplace(std::tuple{lo, k, hi}, effect).first;
      }
      if (!it->second) continue;
      if (const double effect = *it->second; effect > best_effect) {
        best = k;
        best_effect = effect;
      }
    }
    if (!best) break;
    kept.insert(*best);
  }
  // Each kept change again over its final windows, with the caller's interval method.
  CompareOptions report = options.compare;
  report.alpha = scan.alpha;
  std::vector<HistoryChange> changes;
  for (std::size_t k : kept) {
    const auto [lo, hi] = window_of(k, n, kept, options.window_runs);
    const RecordComparison row = judge_window(points, lo, k, hi, report, options.scale_floors_by_window);
    if (is_change(row)) changes.push_back(change_from(points, lo, k, hi, row, report));
  }
  return changes;
}

namespace {

// Whether a series can be judged at all: a record some verdict can come from.
bool judgeable(const Record& r) {
  return r.method != Method::none && r.method != Method::wall_naive && !(r.gate && r.gate->informational);
}

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
      s.points.push_back({runs[i].commit, runs[i].run_time_utc, runs[i].driver_version, std::move(r)});
      s.run_positions.push_back(i);
    }
  return series;
}

namespace {

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
  history_detail::for_each_on_every_core(series.size(), [&](std::size_t s) {
    const auto& positions = series[s].run_positions;
    const auto first = static_cast<std::size_t>(
        std::lower_bound(positions.begin(), positions.end(), first_run) - positions.begin());
    found[s] = detect_changes(series[s].points, first, options, &tested_of[s]);
    judged[s] = tested_of[s] > 0 && judgeable(series[s].points.back().record);
    if (release) std::vector<SeriesPoint>().swap(release[s].points);
  });
  for (std::size_t index = 0; index < series.size(); ++index) {
    const RecordSeries& s = series[index];
    std::vector<HistoryChange>& changes = found[index];
    result.candidates += tested_of[index];
    if (judged[index]) ++result.series_judged;
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
