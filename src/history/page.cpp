// The history page's data: the commits on the axis, each shown series' points, levels and noise
// band, and the changes check_history found. The HTML around it is in page_html.cpp.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/history_page.hpp"
#include "ridge/measure.hpp"
#include "ridge/dtype.hpp"
#include "ridge/stats.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

std::string series_label(const Record& r) {
  const std::string params = params_text(r.params);
  return fmt::format("{} {}{}{}{}{}", r.name, to_string(r.method), r.dtype ? " " : "", r.dtype ? to_string(*r.dtype) : "",
                     params.empty() ? "" : " ", params);
}

// The record's SM clock in MHz: its start and end readings' mean where both were read; -1 unknown.
double sm_clock_mhz(const Record& r) {
  const double start = r.clocks_start.sm_mhz, end = r.clocks_end.sm_mhz;
  if (start > 0 && end > 0) return (start + end) / 2;
  return start > 0 ? start : (end > 0 ? end : -1);
}

// The band the newest commit had to exceed: its runs against up to window_runs runs before it,
// never reaching back across the newest change, judged as check_history judges a commit.
std::pair<double, std::string> newest_noise_band(const RecordSeries& s, std::size_t first_at_level,
                                                 const CheckOptions& options) {
  const auto& points = s.points;
  std::size_t newest = points.size() - 1;
  while (newest > first_at_level && points[newest - 1].commit == points.back().commit) --newest;
  if (newest <= first_at_level) return {options.compare.threshold, "threshold"};
  const std::size_t lo = newest - std::min(options.window_runs, newest - first_at_level);
  std::size_t candidates = 0;
  for (std::size_t k = 1; k < points.size(); ++k) candidates += points[k].commit != points[k - 1].commit;
  const SeriesNoise noise = learn_series_noise(points, candidates, options);
  const WindowJudgement w = judge_window(points, noise, lo, newest, points.size(), options);
  return {w.noise_band, w.noise_band_source};
}

}  // namespace

void validate(const HistoryPageOptions& options) {
  validate(options.check);
  if (options.title.empty()) throw UsageError("title must not be empty");
  if (options.max_series < 1) throw UsageError("max_series must be >= 1");
  if (options.max_commits < 2) throw UsageError("max_commits must be >= 2 (a trend needs two commits)");
}

namespace {

/// One change as the page lists it: `x` its commit on the axis (-1: older), `series` the chart it
/// is drawn in (-1: none shown).
nlohmann::json change_json(const HistoryChange& h, long x, long series, const std::string& label) {
  return {{"commit", h.commit},
          {"previous_commit", h.previous_commit},
          {"x", x},
          {"series", series},
          {"label", label},
          {"machine", h.machine},
          {"gpu", h.gpu},
          {"run_time_utc", h.run_time_utc},
          {"median_before_ms", h.median_before_ms},
          {"median_after_ms", h.median_after_ms},
          {"ratio", h.ratio},
          {"ratio_ci_low", h.ratio_ci_low},
          {"ratio_ci_high", h.ratio_ci_high},
          {"p_value", h.p_value},
          {"noise_band", h.noise_band},
          {"noise_band_source", h.noise_band_source},
          {"regression", h.regression},
          {"clock_changed", h.clock_changed},
          {"clock_difference", h.clock_difference},
          {"driver_changed", h.driver_changed},
          {"at_newest_commit", h.at_newest_commit}};
}

/// Where each level of a series begins: its first point, and the first run of each change's commit.
std::vector<std::size_t> level_starts(const RecordSeries& rs, const std::vector<std::size_t>& changes,
                                      const HistoryCheck& check) {
  std::vector<std::size_t> starts{0};
  for (std::size_t c : changes)
    for (std::size_t i = 1; i < rs.points.size(); ++i)
      if (rs.points[i].commit == check.changes[c].commit && rs.points[i - 1].commit != rs.points[i].commit) {
        starts.push_back(i);
        break;
      }
  std::sort(starts.begin(), starts.end());
  return starts;
}

/// The GPUs of the series, sorted: the page's GPU filter.
std::vector<std::string> gpus_of(std::span<const RecordSeries> series) {
  std::vector<std::string> gpus;
  for (const RecordSeries& s : series)
    if (std::find(gpus.begin(), gpus.end(), s.gpu) == gpus.end()) gpus.push_back(s.gpu);
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

}  // namespace

nlohmann::json history_page_data(std::span<const HistoryRun> runs, std::span<const RecordSeries> series,
                                 const HistoryCheck& check, const HistoryPageOptions& options) {
  validate(options);
  // Commits in the order their first runs came (runs are oldest first); the axis shows the newest.
  std::vector<std::string> commits;
  std::map<std::string, std::size_t> commit_index;
  for (const HistoryRun& r : runs)
    if (commit_index.emplace(r.commit, commits.size()).second) commits.push_back(r.commit);
  const std::size_t first_shown = commits.size() > options.max_commits ? commits.size() - options.max_commits : 0;
  auto axis_position = [&](const std::string& commit) -> long {
    const auto it = commit_index.find(commit);
    return it == commit_index.end() || it->second < first_shown ? -1 : long(it->second - first_shown);
  };

  // Each change belongs to the series it was found in: same name, method, dtype, params, machine, GPU.
  auto same_series = [](const HistoryChange& c, const RecordSeries& s) {
    const Record& r = s.points.front().record;
    return c.name == r.name && c.method == to_string(r.method) && c.dtype == (r.dtype ? to_string(*r.dtype) : "") &&
           c.params == r.params && c.machine == s.machine && c.gpu == s.gpu;
  };
  std::vector<std::vector<std::size_t>> changes_of(series.size());
  std::vector<long> series_of_change(check.changes.size(), -1);
  for (std::size_t c = 0; c < check.changes.size(); ++c)
    for (std::size_t s = 0; s < series.size(); ++s)
      if (same_series(check.changes[c], series[s])) {
        changes_of[s].push_back(c);
        series_of_change[c] = long(s);
        break;
      }
  auto newest_change = [&](std::size_t s) {
    long newest = -1;
    for (std::size_t c : changes_of[s]) newest = std::max(newest, long(commit_index.at(check.changes[c].commit)));
    return newest;
  };

  // Series with a run on the axis: those with a change first (newest change first), then the rest
  // as they came.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < series.size(); ++i)
    if (std::any_of(series[i].points.begin(), series[i].points.end(),
                    [&](const SeriesPoint& p) { return axis_position(p.commit) >= 0; }))
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return newest_change(a) > newest_change(b); });
  if (order.size() > options.max_series) order.resize(options.max_series);
  std::vector<long> shown_as(series.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) shown_as[order[i]] = long(i);

  nlohmann::json shown = nlohmann::json::array();
  for (std::size_t s : order) {
    const RecordSeries& rs = series[s];
    const Record& first = rs.points.front().record;
    nlohmann::json points = nlohmann::json::array();
    for (const SeriesPoint& p : rs.points) {
      const long x = axis_position(p.commit);
      if (x < 0) continue;
      const Summary& m = p.record.summary;
      points.push_back({x, m.median, m.min, m.max, m.p25, m.p75, sm_clock_mhz(p.record), p.run_time_utc});
    }
    // Levels: the runs between changes, each at the median of its runs' medians.
    const std::vector<std::size_t> starts = level_starts(rs, changes_of[s], check);
    nlohmann::json levels = nlohmann::json::array();
    for (std::size_t k = 0; k < starts.size(); ++k) {
      const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : rs.points.size();
      std::vector<double> medians;
      for (std::size_t i = starts[k]; i < end; ++i) medians.push_back(rs.points[i].record.summary.median);
      const long from = axis_position(rs.points[starts[k]].commit), to = axis_position(rs.points[end - 1].commit);
      if (to < 0) continue;  // the whole level is older than the axis
      levels.push_back({std::max(from, 0L), to, median(medians)});
    }
    const auto [band, band_source] = newest_noise_band(rs, starts.back(), options.check);
    nlohmann::json change_ids = nlohmann::json::array();
    for (std::size_t c : changes_of[s]) change_ids.push_back(c);
    shown.push_back({{"label", series_label(first)},
                     {"name", first.name},
                     {"machine", rs.machine},
                     {"gpu", rs.gpu},
                     {"runs", rs.points.size()},
                     {"noise_band", band},
                     {"noise_band_source", band_source},
                     {"informational", first.gate && first.gate->informational},
                     {"points", std::move(points)},
                     {"levels", std::move(levels)},
                     {"changes", std::move(change_ids)}});
  }

  // Every change (charts point into this list); the summary lists the newest first.
  nlohmann::json changes = nlohmann::json::array();
  std::vector<std::size_t> by_recency(check.changes.size());
  for (std::size_t c = 0; c < check.changes.size(); ++c) {
    const HistoryChange& h = check.changes[c];
    const long s = series_of_change[c];
    changes.push_back(change_json(h, axis_position(h.commit), s >= 0 ? shown_as[std::size_t(s)] : -1,
                                  s >= 0 ? series_label(series[std::size_t(s)].points.front().record) : h.name));
    by_recency[c] = c;
  }
  std::stable_sort(by_recency.begin(), by_recency.end(), [&](std::size_t a, std::size_t b) {
    return commit_index.at(check.changes[a].commit) > commit_index.at(check.changes[b].commit);
  });
  if (by_recency.size() > options.recent_changes) by_recency.resize(options.recent_changes);

  std::vector<std::string> axis(commits.begin() + long(first_shown), commits.end());
  return {{"schema", "ridge.history_page"},
          {"schema_version", 1},
          {"title", options.title},
          {"runs", runs.size()},
          {"commits_total", commits.size()},
          {"newest_commit", check.newest_commit},
          {"series_total", series.size()},
          {"threshold", options.check.compare.threshold},
          {"commits", std::move(axis)},
          {"gpus", gpus_of(series)},
          {"point_fields", {"x", "median_ms", "min_ms", "max_ms", "p25_ms", "p75_ms", "sm_mhz", "run_time_utc"}},
          {"series", std::move(shown)},
          {"changes", std::move(changes)},
          {"recent_changes", by_recency}};
}

HistoryPage build_history_page(const History& history, const HistoryPageOptions& options) {
  validate(options);
  const std::vector<HistoryRun> runs = history.runs();
  const std::vector<RecordSeries> series = record_series(history, runs);
  const HistoryCheck check = check_series(runs, series, options.check);
  const nlohmann::json data = history_page_data(runs, series, check, options);
  HistoryPage page;
  page.runs = runs.size();
  page.commits = data.at("commits_total").get<std::size_t>();
  page.commits_shown = data.at("commits").size();
  page.series = series.size();
  page.series_shown = data.at("series").size();
  page.changes = check.changes.size();
  page.changes_listed = data.at("recent_changes").size();
  page.html = history_page_html(data, options.title);
  return page;
}

HistoryPage write_history_page(const History& history, const std::filesystem::path& folder,
                               const HistoryPageOptions& options) {
  validate(options);
  if (std::filesystem::exists(folder) && !std::filesystem::is_directory(folder))
    throw UsageError(fmt::format("{}: not a folder; the page is written to FOLDER/index.html", folder.string()));
  HistoryPage page = build_history_page(history, options);
  write_text((folder / "index.html").string(), page.html);
  return page;
}

}  // namespace ridge
