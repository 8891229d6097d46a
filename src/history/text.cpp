// The history's tables and change reports as text and JSON.
#include <algorithm>

#include <fmt/format.h>

#include "ridge/history_check.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

std::string short_commit(const std::string& commit) { return commit.substr(0, 12); }

std::string change_percent(double ratio) { return fmt::format("{:+.1f}%", (ratio - 1) * 100); }

std::string evidence_notes(const HistoryChange& c) {
  std::string notes;
  if (c.clock_changed) notes += fmt::format("; SM clock changed by {:.0f}% here", c.clock_difference * 100);
  if (c.driver_changed) notes += fmt::format("; driver changed ({} -> {})", c.driver_before, c.driver_after);
  return notes;
}

}  // namespace

namespace {

// Series whose noise hides a threshold-sized step at the window: the noisiest few, in words.
std::string noisy_series_text(const HistoryCheck& check) {
  if (check.noisy_series.empty()) return "";
  std::vector<const NoisySeries*> noisiest;
  for (const NoisySeries& n : check.noisy_series) noisiest.push_back(&n);
  std::sort(noisiest.begin(), noisiest.end(),
            [](const NoisySeries* a, const NoisySeries* b) { return a->smallest_step > b->smallest_step; });
  std::string out = fmt::format(
      "{} series scatter too much between runs to see a {:.1f}% step with windows of up to {} runs; the noisiest:\n",
      noisiest.size(), check.options.compare.threshold * 100, check.options.max_window_runs);
  for (std::size_t i = 0; i < std::min<std::size_t>(noisiest.size(), 5); ++i) {
    const NoisySeries& n = *noisiest[i];
    out += fmt::format("  {} {} {} {}  run-to-run {:.2f}%: sees {:.1f}% steps; {:.1f}% needs {} runs a side\n", n.name,
                       n.method, n.dtype, params_text(n.params), n.run_to_run_noise * 100, n.smallest_step * 100,
                       check.options.compare.threshold * 100,
                       n.runs_for_threshold ? fmt::format("{}", n.runs_for_threshold) : std::string("over 1,000"));
  }
  return out;
}

nlohmann::json noisy_series_json(const HistoryCheck& check) {
  nlohmann::json out = nlohmann::json::array();
  for (const NoisySeries& n : check.noisy_series)
    out.push_back({{"name", n.name}, {"method", n.method}, {"dtype", n.dtype}, {"params", n.params},
                   {"machine", n.machine}, {"gpu", n.gpu}, {"run_to_run_noise", n.run_to_run_noise},
                   {"smallest_step", n.smallest_step}, {"runs_for_threshold", n.runs_for_threshold}});
  return out;
}

}  // namespace

std::string to_text(const HistoryCheck& check) {
  std::size_t regressions = 0;
  for (const auto& c : check.changes) regressions += c.regression ? 1 : 0;
  std::string out = fmt::format(
      "{} run(s), {} series ({} judged), {} candidate commit(s) tested: {} change(s), {} regression(s){}\n", check.runs,
      check.series, check.series_judged, check.candidates, check.changes.size(), regressions,
      check.regression_at_newest() ? fmt::format(", a regression at the newest commit {}", short_commit(check.newest_commit))
                                   : std::string());
  for (const HistoryChange& c : check.changes)
    out += fmt::format(
        "{:<11} {} {} {} {}  at {} (after {})  {} [{}, {}]  {:.3f} -> {:.3f} ms  p={:.1e} < {:.1e}  band {:.1f}% ({})  "
        "{} runs before, {} after  {} / {}{}\n",
        c.regression ? "REGRESSION" : "improvement", c.name, c.method, c.dtype, params_text(c.params),
        short_commit(c.commit), short_commit(c.previous_commit), change_percent(c.ratio),
        change_percent(c.ratio_ci_low), change_percent(c.ratio_ci_high), c.median_before_ms, c.median_after_ms,
        c.p_value, c.alpha, c.noise_band * 100, c.noise_band_source, c.runs_before, c.runs_after,
        c.machine.empty() ? "?" : c.machine, c.gpu.empty() ? "?" : c.gpu, evidence_notes(c));
  return out + noisy_series_text(check);
}

std::string to_text(std::span<const HistoryRun> runs) {
  std::string out = fmt::format("{:>5}  {:<20}  {:<12}  {:<16}  {:<16}  {:<22}  {:>7}  {:>7}  {}\n", "id", "run time (UTC)",
                                "commit", "branch", "machine", "GPU", "driver", "records", "source");
  for (const HistoryRun& r : runs)
    out += fmt::format("{:>5}  {:<20}  {:<12}  {:<16}  {:<16}  {:<22}  {:>7}  {:>7}  {}\n", r.id, r.run_time_utc,
                       short_commit(r.commit), r.branch, r.machine, r.gpu, r.driver_version, r.records, r.source);
  return out;
}

nlohmann::json to_json(const HistoryRun& r) {
  return {{"id", r.id},
          {"commit", r.commit},
          {"branch", r.branch},
          {"run_time_utc", r.run_time_utc},
          {"added_utc", r.added_utc},
          {"machine", r.machine},
          {"gpu", r.gpu},
          {"gpu_uuid", r.gpu_uuid},
          {"driver_version", r.driver_version},
          {"ridge_version", r.ridge_version},
          {"ridge_build", r.ridge_build},
          {"records", r.records},
          {"source", r.source},
          {"content_hash", r.content_hash}};
}

nlohmann::json to_json(const HistoryCheck& check) {
  nlohmann::json changes = nlohmann::json::array();
  for (const HistoryChange& c : check.changes)
    changes.push_back({{"commit", c.commit},
                       {"previous_commit", c.previous_commit},
                       {"run_time_utc", c.run_time_utc},
                       {"name", c.name},
                       {"method", c.method},
                       {"dtype", c.dtype},
                       {"params", c.params},
                       {"machine", c.machine},
                       {"gpu", c.gpu},
                       {"runs_before", c.runs_before},
                       {"runs_after", c.runs_after},
                       {"median_before_ms", c.median_before_ms},
                       {"median_after_ms", c.median_after_ms},
                       {"ratio", c.ratio},
                       {"ratio_ci_low", c.ratio_ci_low},
                       {"ratio_ci_high", c.ratio_ci_high},
                       {"p_value", c.p_value},
                       {"alpha", c.alpha},
                       {"run_to_run_noise", c.run_to_run_noise},
                       {"noise_band", c.noise_band},
                       {"noise_band_source", c.noise_band_source},
                       {"regression", c.regression},
                       {"clock_difference", c.clock_difference},
                       {"clock_changed", c.clock_changed},
                       {"driver_changed", c.driver_changed},
                       {"driver_before", c.driver_before},
                       {"driver_after", c.driver_after},
                       {"at_newest_commit", c.at_newest_commit}});
  return {{"schema", "ridge.history_check"},
          {"runs", check.runs},
          {"series", check.series},
          {"series_judged", check.series_judged},
          {"candidates", check.candidates},
          {"newest_commit", check.newest_commit},
          {"since", check.options.since},
          {"window_runs", check.options.window_runs},
          {"threshold", check.options.compare.threshold},
          {"alpha", check.options.compare.alpha},
          {"regression_at_newest", check.regression_at_newest()},
          {"nothing_compared", check.nothing_compared()},
          {"changes", std::move(changes)},
          {"noisy_series", noisy_series_json(check)}};
}

}  // namespace ridge
