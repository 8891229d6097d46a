#include "ridge/compare.hpp"

#include <optional>
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/carried_over.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/resolution.hpp"
#include "ridge/stats.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

std::string device_label(const DeviceDescription& d) {
  return d.uuid.empty() ? d.name : fmt::format("{} ({})", d.name, d.uuid);
}

// Largest SM clock difference between two runs' (or records') start and end readings, relative;
// -1 when unknown.
template <typename A, typename B>
double relative_clock_difference(const A& a, const B& b) {
  double worst = -1;
  for (const ClockReading* x : {&a.clocks_start, &a.clocks_end})
    for (const ClockReading* y : {&b.clocks_start, &b.clocks_end})
      if (x->sm_mhz > 0 && y->sm_mhz > 0)
        worst = std::max(worst, std::abs(x->sm_mhz - y->sm_mhz) / std::max(x->sm_mhz, y->sm_mhz));
  return worst;
}

// The median SM clock a record's samples ran at (extra.sample_sm_mhz); -1 when not recorded.
double sample_clock_median(const Record& r) {
  const std::vector<double> sampled = extra_key::sample_sm_mhz.get(r);
  std::vector<double> mhz;
  for (double v : sampled)
    if (v > 0) mhz.push_back(v);  // NaN (a sample whose clock was not read) is not
  return !mhz.empty() && mhz.size() == sampled.size() ? median_in_place(mhz) : -1;
}

// A record's SM clock difference between runs: the clocks its samples ran at where both sides
// recorded them (the start and end readings of a short record may catch the GPU idle), else the
// start and end readings; -1 when unknown.
double record_clock_difference(const Record& base, const Record& next) {
  const double b = sample_clock_median(base), n = sample_clock_median(next);
  if (b > 0 && n > 0) return std::abs(b - n) / std::max(b, n);
  return relative_clock_difference(base, next);
}

// The factor that brings the new run's samples of a compute-bound record to the base's SM clock
// (CompareOptions::scale_compute_bound_by_clock); 1 when it does not apply or the clocks agree.
double equal_clock_scale(const Record& base, const Record& next, const CompareOptions& options) {
  if (!options.scale_compute_bound_by_clock) return 1;
  const auto compute_bound = [](const Record& r) { return extra_key::bound.get(r) == "compute"; };
  if (!compute_bound(base) || !compute_bound(next)) return 1;
  const double b = sample_clock_median(base), n = sample_clock_median(next);
  if (!(b > 0 && n > 0) || std::abs(b - n) / std::max(b, n) < 0.01) return 1;
  return n / b;
}

// The SM clocks a record ran at: its samples' median where recorded, else its start and end
// readings (those known).
std::vector<double> record_clocks_mhz(const Record& r) {
  if (const double m = sample_clock_median(r); m > 0) return {m};
  std::vector<double> mhz;
  for (const ClockReading* x : {&r.clocks_start, &r.clocks_end})
    if (x->sm_mhz > 0) mhz.push_back(x->sm_mhz);
  return mhz;
}

// Whether every clock the new record ran at lies within the range its baselines ran at.
bool clocks_within(std::span<const Record* const> runs, const Record& next) {
  double low = std::numeric_limits<double>::infinity(), high = 0;
  for (const Record* r : runs)
    for (double mhz : record_clocks_mhz(*r)) {
      low = std::min(low, mhz);
      high = std::max(high, mhz);
    }
  const std::vector<double> mine = record_clocks_mhz(next);
  if (mine.empty() || !(high > 0)) return false;
  return std::all_of(mine.begin(), mine.end(), [&](double mhz) { return mhz >= low && mhz <= high; });
}

std::string format_ratio(double r) { return r > 0 ? fmt::format("{:.3f}", r) : std::string("-"); }

std::string format_change(double r) {
  if (r <= 0) return "-";
  return fmt::format("{:+.1f}%", (r - 1) * 100);
}

std::string format_p(const RankTest& t) {
  if (t.p_value < 1e-4) return fmt::format("{:.1e}", t.p_value);
  return fmt::format("{:.4f}", t.p_value);
}

}  // namespace

std::pair<double, double> bootstrap_median_ratio_ci(std::span<const double> a, std::span<const double> b,
                                                    double confidence, int resamples, unsigned seed) {
  if (a.empty() || b.empty()) throw UsageError("bootstrap: both samples must be non-empty");
  if (!(confidence > 0 && confidence < 1)) throw UsageError("bootstrap: confidence must be in (0, 1)");
  if (resamples < 10) throw UsageError("bootstrap: at least 10 resamples");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  std::vector<double> ra(a.size()), rb(b.size()), ratios;
  ratios.reserve(resamples);
  for (int r = 0; r < resamples; ++r) {
    for (auto& v : ra) v = a[pick_a(rng)];
    for (auto& v : rb) v = b[pick_b(rng)];
    const double base = median_in_place(ra);
    if (base > 0) ratios.push_back(median_in_place(rb) / base);
  }
  if (ratios.empty()) return {0, 0};
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - confidence) / 2;
  return {quantile_sorted(ratios, tail), quantile_sorted(ratios, 1 - tail)};
}

std::pair<double, double> order_statistic_ratio_ci(const Summary& a, const Summary& b) {
  if (!(a.median > 0 && b.median > 0 && a.median_ci_low > 0 && b.median_ci_low > 0)) return {0, 0};
  // Half-widths in log space, combined as independent errors (each interval is ~95%).
  const double half_a = std::log(a.median_ci_high / a.median_ci_low) / 2;
  const double half_b = std::log(b.median_ci_high / b.median_ci_low) / 2;
  const double half = std::sqrt(half_a * half_a + half_b * half_b);
  const double ratio = b.median / a.median;
  return {ratio * std::exp(-half), ratio * std::exp(half)};
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::regression: return "REGRESSION";
    case Verdict::improvement: return "improvement";
    case Verdict::within_threshold: return "within threshold";
    case Verdict::no_significant_change: return "no significant change";
    case Verdict::informational: return "informational";
    case Verdict::suspect: return "suspect: re-measure";
    case Verdict::missing_in_base: return "only in new";
    case Verdict::missing_in_new: return "missing in new";
  }
  return "?";
}

std::string record_match_key(const Record& r) {
  // nlohmann's object keys are sorted, so dump() is canonical.
  return r.name + "\x1f" + to_string(r.method) + "\x1f" + to_string(r.dtype) + "\x1f" + r.params.dump();
}

double parse_threshold(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  const bool percent = !s.empty() && s.back() == '%';
  if (percent) s.pop_back();
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || !std::isfinite(value))
    throw UsageError(fmt::format("threshold: cannot read '{}'; give a percentage like 5% or a fraction like 0.05", text));
  if (percent) value /= 100;
  if (value < 0) throw UsageError(fmt::format("threshold must be >= 0, got '{}'", text));
  return value;
}

namespace {

// Warnings about what differs between the two runs' contexts: devices, clocks, builds.
void compare_contexts(const RunContext& base, const RunContext& next, const CompareOptions& options, Comparison& c) {
  const auto& bd = base.device;
  const auto& nd = next.device;
  if (bd && nd) {
    if (bd->name != nd->name) {
      c.different_devices = true;
      c.warnings.push_back(fmt::format("different GPUs: base ran on {}, new on {}; ratios compare hardware, not code",
                                       device_label(*bd), device_label(*nd)));
    } else if (!bd->uuid.empty() && !nd->uuid.empty() && bd->uuid != nd->uuid) {
      c.different_devices = true;
      c.warnings.push_back(fmt::format("same model ({}) but different physical GPUs ({} vs {}); parts of one model differ by a few percent",
                                       bd->name, bd->uuid, nd->uuid));
    }
  } else if (bd.has_value() != nd.has_value()) {
    c.different_devices = true;
    c.warnings.push_back(fmt::format("only the {} file names its GPU; cannot tell whether both ran on the same device",
                                     bd ? "base" : "new"));
  }
  const double clock_diff = relative_clock_difference(base, next);
  if (clock_diff > options.clock_tolerance) {
    c.different_clocks = true;
    c.warnings.push_back(fmt::format(
        "SM clocks differ by {:.0f}% between the runs (base {:.0f} MHz, new {:.0f} MHz at start); lock clocks "
        "(nvidia-smi -lgc) or compare runs taken under the same conditions",
        clock_diff * 100, base.clocks_start.sm_mhz, next.clocks_start.sm_mhz));
  }
  if (!base.tool_version.empty() && !next.tool_version.empty() && base.git_sha != next.git_sha)
    c.warnings.push_back(fmt::format("different ridge builds: base {} ({}), new {} ({})", base.tool_version,
                                     base.git_sha, next.tool_version, next.git_sha));
}

// The bootstrap costs resamples x (m + n) draws per record: fine for a report (hundreds of
// records), hours for 330,000. Above the budget every row gets the interval combined from the
// two medians' order-statistic intervals instead (O(1) per record), and the output says so.
void choose_ratio_ci_method(std::span<const ResultSet> baselines, const ResultSet& next, const CompareOptions& options,
                            Comparison& c) {
  std::size_t all_samples = 0;
  for (const ResultSet& base : baselines)
    for (const Record& r : base.records) all_samples += r.samples_ms.size();
  for (const Record& r : next.records) all_samples += r.samples_ms.size();
  c.ratio_ci_method = double(all_samples) * options.bootstrap_resamples <= options.bootstrap_budget ? "bootstrap"
                                                                                                   : "order_statistics";
  if (c.ratio_ci_method != "bootstrap")
    c.warnings.push_back(fmt::format(
        "{} samples in all: the ratio intervals combine the two medians' order-statistic intervals instead of "
        "bootstrapping ({} resamples would take too long); the verdicts do not depend on them",
        all_samples, options.bootstrap_resamples));
}

RecordComparison row_for(const Record& r) {
  RecordComparison row;
  row.name = r.name;
  row.method = to_string(r.method);
  row.dtype = to_string(r.dtype);
  row.params = r.params;
  return row;
}

// Record indices by match key, in file order (hashed: n log n overall).
using KeyIndex = std::unordered_map<std::string, std::vector<std::size_t>>;
KeyIndex index_by_key(const ResultSet& s) {
  KeyIndex index;
  index.reserve(s.records.size());
  for (std::size_t i = 0; i < s.records.size(); ++i) index[record_match_key(s.records[i])].push_back(i);
  return index;
}

// The occurrence-th record with this key, or -1.
std::ptrdiff_t find_in(const KeyIndex& index, const std::string& key, std::size_t occurrence) {
  const auto found = index.find(key);
  if (found == index.end() || occurrence >= found->second.size()) return -1;
  return static_cast<std::ptrdiff_t>(found->second[occurrence]);
}

std::string baseline_name(std::span<const std::string> labels, std::size_t i, std::size_t count) {
  if (i < labels.size() && !labels[i].empty()) return fmt::format("baseline {} ({})", i + 1, labels[i]);
  return fmt::format("baseline {} of {}", i + 1, count);
}

// Several baselines must be repeated runs of the same code: otherwise their spread measures the
// difference between builds or GPUs and would hide a real regression.
void require_runs_of_the_same_code(std::span<const ResultSet> baselines, std::span<const std::string> labels,
                                   const std::vector<KeyIndex>& indices) {
  const ResultSet& first = baselines[0];
  for (std::size_t i = 1; i < baselines.size(); ++i) {
    const ResultSet& other = baselines[i];
    const auto name = [&](std::size_t k) { return baseline_name(labels, k, baselines.size()); };
    if (first.context.device && other.context.device && first.context.device->name != other.context.device->name)
      throw UsageError(fmt::format("{} ran on {} but {} on {}: baselines must be repeated runs on one kind of GPU",
                                   name(i), other.context.device->name, name(0), first.context.device->name));
    if (!first.context.git_sha.empty() && !other.context.git_sha.empty() && first.context.git_sha != other.context.git_sha)
      throw UsageError(fmt::format("{} is ridge build {} but {} is {}: baselines must be repeated runs of the same "
                                   "code; compare different builds one pair at a time",
                                   name(i), other.context.git_sha, name(0), first.context.git_sha));
    bool shares = false;
    for (const auto& entry : indices[i])
      if (indices[0].count(entry.first)) {
        shares = true;
        break;
      }
    if (!shares)
      throw UsageError(fmt::format("{} shares no record (name, method, dtype, params) with {}: baselines must be "
                                   "repeated runs of the same commands",
                                   name(i), name(0)));
  }
}

// A band widened by a clock change lets a slowdown of that size through: never silent. Names the
// records (the first few) whose band the clock set; "" when none.
std::string clock_widened_rows(const Comparison& c) {
  std::vector<std::string> names;
  double widest = 0;
  for (const auto& r : c.rows)
    if (r.noise_band_source == "clock") {
      names.push_back(fmt::format("{} {} {}", r.name, r.method, params_text(r.params)));
      widest = std::max(widest, r.noise_band);
    }
  if (names.empty()) return "";
  constexpr std::size_t shown = 5;
  const std::size_t more = names.size() > shown ? names.size() - shown : 0;
  if (more) names.resize(shown);
  return fmt::format(
      "{} record(s) ran at different SM clocks in the two runs, so their noise band was widened by the clock change "
      "(up to {:.0f}%): a slowdown that small passes for them. {}{}. Compare runs taken at the same clocks",
      names.size() + more, widest * 100, fmt::join(names, "; "), more ? fmt::format(" and {} more", more) : "");
}

// The compute-bound records compared at equal clocks (scaled), named; "" when none.
std::string clock_scaled_rows(const Comparison& c) {
  std::vector<std::string> names;
  for (const auto& r : c.rows)
    if (r.clock_scale != 1) names.push_back(fmt::format("{} {} {} (x {:.3f})", r.name, r.method, params_text(r.params), r.clock_scale));
  if (names.empty()) return "";
  return fmt::format("{} compute-bound record(s) ran at another SM clock and were compared at equal clocks, the new "
                     "time scaled by new clock / base clock: {}",
                     names.size(), fmt::join(names, "; "));
}

// A carried-over record on either side: shown, never judged; the note names where it came from.
bool judge_carried_over(RecordComparison& row, const std::vector<const Record*>& runs, const Record& n) {
  std::vector<const Record*> sides(runs.begin(), runs.end());
  sides.push_back(&n);
  for (const Record* r : sides)
    if (const auto from = carried_over(*r)) {
      row.verdict = Verdict::informational;
      row.note = fmt::format("carried over from {}{}: not measured in {} run, shown, never judged",
                             from->source.empty() ? "a cache" : from->source,
                             from->measured_at_utc.empty() ? "" : " (measured " + from->measured_at_utc + ")",
                             r == &n ? "the new" : "the base");
      return true;
    }
  return false;
}

// The row's band and verdict from its detector's judgement, counted into `c`.
void set_verdict(RecordComparison& row, const LevelJudgement& level, const CompareOptions& options, Comparison& c) {
  row.run_to_run_spread = level.run_to_run_spread;
  row.noise_band = level.band.relative;
  row.noise_band_source = level.band.source;
  row.resolution_us = level.resolution_us;
  row.resolution_basis = level.resolution_basis;
  row.smallest_flagged_slowdown =
      std::max(row.noise_band, row.ratio > 0 ? (row.ratio_ci_high - row.ratio_ci_low) / (2 * row.ratio) : 0.0);
  if (row.noise_band_source == "producer" && row.note.empty()) row.note = row.gate_reason;
  const bool significant = level.significant;
  // A band narrower than the most one process was seen to jump (min_change_us): a change beyond it
  // but within that jump is confirmed in a fresh process before it is called.
  const double one_off_jump = options.min_change_us * 1e-3 / row.base_median_ms;
  if (significant && row.ratio > 1 + row.noise_band && row.noise_band < one_off_jump && row.ratio <= 1 + one_off_jump) {
    row.verdict = Verdict::suspect;
    // No resolution term, a measured spread: the baselines' spread set the band.
    const bool spread_set_band = row.resolution_basis.empty() && row.run_to_run_spread >= 0;
    row.note = fmt::format("beyond its band{}, within the {:g} us one process can jump: re-measure in a fresh "
                           "process to confirm",
                           spread_set_band ? fmt::format(" from {} baselines' spread", row.baseline_runs) : "",
                           options.min_change_us);
    ++c.suspects;
  } else if (significant && row.ratio > 1 + row.noise_band) {
    row.verdict = Verdict::regression;
    ++c.regressions;
  } else if (significant && row.ratio < 1 - row.noise_band) {
    row.verdict = Verdict::improvement;
    ++c.improvements;
  } else if (significant) {
    row.verdict = Verdict::within_threshold;
    ++c.within_threshold;
  } else {
    row.verdict = Verdict::no_significant_change;
    ++c.unchanged;
    if (row.note.empty() && !level.can_be_significant)
      row.note = fmt::format("too few samples ({} vs {}) to reach significance at alpha {}", row.base_count,
                             row.new_count, options.alpha);
  }
}

// Judges one record of the new run against the baselines that hold it (`runs`, first baseline
// first): ratio, interval and notes here, the test and the noise band by options.level_detector,
// then the verdict, counted into `c`. Returns log(ratio) when the pair enters the geometric mean.
std::optional<double> judge(RecordComparison& row, const std::vector<const Record*>& runs, const Record& n,
                            const CompareOptions& options, Comparison& c) {
  const Record& b = *runs.front();
  LevelEvidence base, next;
  // Baselines whose work per call differs from the first's are brought to it (their rate is compared).
  for (const Record* r : runs) {
    const double scale = work_scale(b, *r);
    for (double s : r->samples_ms) base.samples_ms.push_back(s * scale);
    base.run_medians_ms.push_back(r->summary.median * scale);
  }
  row.baseline_runs = runs.size();
  row.base_count = base.samples_ms.size();
  row.base_median_ms = runs.size() == 1 ? b.summary.median : median_of_copy(base.run_medians_ms);
  row.new_count = n.samples_ms.size();
  row.new_median_ms = n.summary.median;
  if (judge_carried_over(row, runs, n)) return std::nullopt;
  if (b.samples_ms.empty() || n.samples_ms.empty() || row.base_median_ms <= 0 || b.method == Method::none) {
    row.verdict = Verdict::informational;
    row.note = b.method == Method::none ? "a check, not a timing: shown, never judged" : "no samples to compare";
    return std::nullopt;
  }
  double record_clocks = record_clock_difference(b, n);
  row.clock_difference = record_clocks;
  row.clock_scale = equal_clock_scale(b, n, options);
  row.work_scale = work_scale(b, n);
  next.samples_ms = n.samples_ms;
  for (double& s : next.samples_ms) s *= row.clock_scale * row.work_scale;
  const Summary new_summary = row.clock_scale == 1 && row.work_scale == 1 ? n.summary : summarize(next.samples_ms);
  next.run_medians_ms = {new_summary.median};
  // Each run's log median too, so a detector of run medians (history's) can judge a comparison.
  for (LevelEvidence* side : {&base, &next})
    for (double m : side->run_medians_ms)
      if (m > 0) side->run_log_medians.push_back(std::log(m));
  if (c.ratio_ci_method == "bootstrap") {
    std::tie(row.ratio_ci_low, row.ratio_ci_high) =
        bootstrap_median_ratio_ci(base.samples_ms, next.samples_ms, 0.95, options.bootstrap_resamples);
  } else {
    // The order-statistic interval of each side's median: the first baseline's stands for all.
    std::tie(row.ratio_ci_low, row.ratio_ci_high) = order_statistic_ratio_ci(b.summary, new_summary);
    const double shift = row.base_median_ms / b.summary.median;
    row.ratio_ci_low /= shift;
    row.ratio_ci_high /= shift;
  }
  if (row.clock_scale != 1) {
    row.note = fmt::format("compute-bound, sampled at {:.0f}% of the base's SM clock: compared at equal clocks "
                           "(new time x {:.3f})",
                           100 * row.clock_scale, row.clock_scale);
    record_clocks = 0;  // explained by the scaling: the band is not widened
  } else if (runs.size() >= options.spread_sets_band_from && record_clocks > 0 && clocks_within(runs, n)) {
    row.clock_within_baselines = true;
    record_clocks = 0;  // the baselines' spread was measured across this clock: it sets the band
  } else if (record_clocks > options.clock_tolerance) {
    row.note = fmt::format("SM clocks differ by {:.0f}% for this record", record_clocks * 100);
  }
  if (row.work_scale != 1) {
    const std::string work = fmt::format("work per call differs from the base's (another launch shape): compared "
                                         "per unit of work (new time x {:.3f})",
                                         row.work_scale);
    row.note = row.note.empty() ? work : row.note + "; " + work;
  }
  // The producers' gates: informational if either file says so, the larger minimum threshold.
  const bool wall_naive = b.method == Method::wall_naive;
  const RecordGate* informational = nullptr;
  std::vector<const Record*> sides(runs.begin(), runs.end());
  sides.push_back(&n);
  for (const Record* r : sides) {
    if (wall_naive || informational) break;
    if (!r->gate) continue;
    if (r->gate->informational) {
      informational = &*r->gate;
    } else if (r->gate->min_threshold > row.min_threshold) {
      row.min_threshold = r->gate->min_threshold;
      row.gate_reason = r->gate->reason;
    }
  }
  // Informational rows show the ratio and the test too; their band is never built into the row.
  LevelTerms terms;
  terms.band = NoiseBand::from_threshold(options.threshold, row.min_threshold);
  terms.clock_difference = options.widen_by_clock ? record_clocks : 0;
  terms.method = b.method;
  terms.gpu_family = c.gpu_family;
  const LevelJudgement level = options.level_detector->judge(base, next, terms, options);
  row.ratio = level.ratio;
  if (level.rank_test) {
    row.test = *level.rank_test;
  } else {
    row.test.p_value = level.p_value;
  }
  if (wall_naive) {
    row.verdict = Verdict::informational;
    row.note = "wall_naive times the launch queue, not the work: shown, never judged";
    return std::nullopt;
  }
  if (informational) {
    row.verdict = Verdict::informational;
    row.gate_reason = informational->reason;
    row.note = "informational: " + informational->reason;
    return std::nullopt;
  }
  set_verdict(row, level, options, c);
  return std::log(row.ratio);
}

}  // namespace

double median_sample_clock_mhz(const Record& r) { return sample_clock_median(r); }

double work_scale(const Record& reference, const Record& r) {
  // A record's work per call: its FLOPs where counted, else its bytes.
  const auto work = [](const Record& x) { return x.flops > 0 ? x.flops : x.bytes; };
  const double want = work(reference), have = work(r);
  if (!(want > 0 && have > 0) || std::abs(want - have) <= 1e-9 * want) return 1;
  return want / have;
}

bool is_judged(const Record& r) {
  return r.method != Method::none && r.method != Method::wall_naive && !(r.gate && r.gate->informational) &&
         !carried_over(r);
}

Comparison compare_results(const ResultSet& base, const ResultSet& next, const CompareOptions& options) {
  return compare_results(std::span<const ResultSet>(&base, 1), next, options);
}

Comparison compare_results(std::span<const ResultSet> baselines, const ResultSet& next, const CompareOptions& options,
                           std::span<const std::string> labels) {
  if (!(options.threshold >= 0)) throw UsageError("compare: the threshold must be >= 0");
  if (!(options.alpha > 0 && options.alpha < 1)) throw UsageError("compare: alpha must be in (0, 1)");
  if (options.bootstrap_resamples < 10) throw UsageError("compare: bootstrap_resamples must be >= 10");
  if (!(options.spread_factor >= 0) || !std::isfinite(options.spread_factor))
    throw UsageError("compare: the spread factor must be a finite number >= 0");
  if (baselines.empty()) throw UsageError("compare: no baseline; give at least one result file to compare against");
  if (!options.level_detector)
    throw UsageError(fmt::format("compare: no level detector; choose one of: {}", fmt::join(level_detector_names(), ", ")));
  std::vector<KeyIndex> base_indices;
  for (const ResultSet& b : baselines) base_indices.push_back(index_by_key(b));
  require_runs_of_the_same_code(baselines, labels, base_indices);

  const ResultSet& base = baselines[0];
  Comparison c;
  c.options = options;
  c.baselines = baselines.size();
  if (base.context.device)
    c.gpu_family = gpu_family(base.context.device->compute_capability_major, base.context.device->compute_capability_minor);
  compare_contexts(base.context, next.context, options, c);
  choose_ratio_ci_method(baselines, next, options, c);

  // Match records by key plus occurrence number, so duplicates pair up in order.
  const KeyIndex new_by_key = index_by_key(next);
  std::unordered_map<std::string, std::size_t> base_seen;
  base_seen.reserve(base.records.size());
  std::vector<bool> new_used(next.records.size(), false);
  bool duplicates = false;
  double log_sum = 0;
  for (const Record& b : base.records) {
    RecordComparison row = row_for(b);
    row.base_count = b.samples_ms.size();
    row.base_median_ms = b.summary.median;
    row.baseline_runs = 1;
    const std::string key = record_match_key(b);
    const std::size_t occurrence = base_seen[key]++;
    if (occurrence > 0) duplicates = true;
    const std::ptrdiff_t ni = find_in(new_by_key, key, occurrence);
    if (ni < 0) {
      row.verdict = Verdict::missing_in_new;
      row.note = "no record with this name, method, dtype and params in the new file";
      if (is_judged(b) && !b.samples_ms.empty()) {
        row.missing_judged = true;
        ++c.missing_judged;
        row.note += options.allow_missing ? " (allowed)" : "; the base judges it, so the gate fails (exit 9)";
      }
      ++c.missing;
      c.rows.push_back(std::move(row));
      continue;
    }
    new_used[std::size_t(ni)] = true;
    ++c.matched;
    std::vector<const Record*> runs{&b};
    for (std::size_t k = 1; k < baselines.size(); ++k)
      if (const std::ptrdiff_t bi = find_in(base_indices[k], key, occurrence); bi >= 0)
        runs.push_back(&baselines[k].records[std::size_t(bi)]);
    if (const auto log_ratio = judge(row, runs, next.records[std::size_t(ni)], options, c)) {
      log_sum += *log_ratio;
      ++c.geomean_count;
    }
    c.rows.push_back(std::move(row));
  }
  for (std::size_t i = 0; i < next.records.size(); ++i) {
    if (new_used[i]) continue;
    const Record& n = next.records[i];
    RecordComparison row = row_for(n);
    row.new_count = n.samples_ms.size();
    row.new_median_ms = n.summary.median;
    row.verdict = Verdict::missing_in_base;
    row.note = baselines.size() > 1 ? "no record with this name, method, dtype and params in the first baseline"
                                    : "no record with this name, method, dtype and params in the base file";
    ++c.missing;
    c.rows.push_back(std::move(row));
  }
  if (duplicates)
    c.warnings.push_back("some records share name, method, dtype and params; they were matched in file order");
  if (const std::string widened = clock_widened_rows(c); !widened.empty()) c.warnings.push_back(widened);
  if (const std::string scaled = clock_scaled_rows(c); !scaled.empty()) c.warnings.push_back(scaled);
  if (c.geomean_count > 0) c.geomean_ratio = std::exp(log_sum / double(c.geomean_count));
  return c;
}

Comparison confirm_suspects(Comparison first, const Comparison& again) {
  std::unordered_map<std::string, const RecordComparison*> again_rows;
  for (const auto& r : again.rows) again_rows.emplace(r.name + "\x1f" + r.method + "\x1f" + r.dtype + "\x1f" + r.params.dump(), &r);
  for (auto& row : first.rows) {
    if (row.verdict != Verdict::suspect) continue;
    const auto it = again_rows.find(row.name + "\x1f" + row.method + "\x1f" + row.dtype + "\x1f" + row.params.dump());
    const bool confirmed =
        it != again_rows.end() && (it->second->verdict == Verdict::suspect || it->second->verdict == Verdict::regression);
    --first.suspects;
    if (confirmed) {
      row.verdict = Verdict::regression;
      ++first.regressions;
      row.note = fmt::format("confirmed: {:+.1f}% again when measured in a fresh process", (it->second->ratio - 1) * 100);
    } else {
      row.verdict = Verdict::within_threshold;
      ++first.within_threshold;
      row.note = it == again_rows.end() ? "suspect, and missing when measured again: not confirmed"
                                        : fmt::format("not confirmed: {:+.1f}% when measured in a fresh process",
                                                      (it->second->ratio - 1) * 100);
    }
  }
  return first;
}

std::string nothing_compared_reason(const Comparison& c) {
  if (!c.nothing_compared()) return "";
  std::size_t base = 0, next = 0;
  for (const auto& r : c.rows) {
    if (r.verdict != Verdict::missing_in_base) ++base;
    if (r.verdict != Verdict::missing_in_new) ++next;
  }
  return fmt::format(
      "no record was compared ({} matched of {} base and {} new record(s), and only records that are judged count; "
      "records match by name, method, dtype and params): are these runs of the same commands?",
      c.matched, base, next);
}

namespace {

std::string summary_line(const Comparison& c) {
  return fmt::format(
      "{} matched, {} regression(s), {} suspect(s) to re-measure, {} improvement(s), {} within the {:.1f}% threshold, {} without significant change, "
      "{} missing on one side ({} judged in the base and missing from the new run{}); geometric mean of time ratios {} over {} record(s) (new/base, > 1 is slower)",
      c.geomean_count, c.regressions, c.suspects, c.improvements, c.within_threshold, c.options.threshold * 100, c.unchanged,
      c.missing, c.missing_judged, c.missing_judged && c.options.allow_missing ? ", allowed" : "",
      c.geomean_count ? fmt::format("{:.3f}", c.geomean_ratio) : std::string("n/a"), c.geomean_count);
}

// The resolution terms the rows used, in words: "0.10 us for Hopper graph_replay, 0.5 us otherwise".
std::string resolution_rule(const Comparison& c) {
  std::map<std::string, double> measured;
  for (const auto& r : c.rows)
    if (r.noise_band_source == "resolution" && r.resolution_basis != "fixed") measured[r.resolution_basis] = r.resolution_us;
  std::vector<std::string> parts;
  for (const auto& [basis, us] : measured) parts.push_back(fmt::format("{:.2f} us for {}", us, basis));
  parts.push_back(fmt::format("{:g} us{}", c.options.min_change_us, parts.empty() ? "" : " otherwise"));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// How the baselines and noise bands were used, one sentence.
std::string band_rule(const Comparison& c) {
  std::string rule = fmt::format(
      "A significant change counts when it exceeds the record's noise band: the {:.1f}% threshold, or the producer's "
      "minimum for that record{}, or the resolution between processes: {}",
      c.options.threshold * 100,
      c.options.widen_by_clock ? ", widened by the record's SM clock change between the runs" : "",
      resolution_rule(c));
  if (c.baselines > 1)
    rule += fmt::format(", or {}x its run-to-run spread (the spread of the medians of the {} "
                        "baselines, whose samples are pooled)",
                        c.options.spread_factor, c.baselines);
  if (c.baselines >= c.options.spread_sets_band_from)
    rule += fmt::format("; with {} or more baselines that spread replaces the resolution", c.options.spread_sets_band_from);
  rule += fmt::format(". A change beyond a band narrower than {:g} us but within it (the most one process was seen to "
                      "jump) is a suspect to re-measure in a fresh process",
                      c.options.min_change_us);
  return rule + ".";
}

}  // namespace

std::string noise_band_text(const RecordComparison& r) {
  if (r.noise_band <= 0 && r.noise_band_source.empty()) return "-";
  if (r.noise_band_source == "run-to-run")
    return fmt::format("{:.1f}% ({:g}x run-to-run {:.1f}%)", r.noise_band * 100, r.noise_band / r.run_to_run_spread,
                       r.run_to_run_spread * 100);
  if (r.noise_band_source == "producer") return fmt::format("{:.1f}% (producer)", r.noise_band * 100);
  if (r.noise_band_source == "resolution")
    return fmt::format("{:.1f}% (resolution {:.2f} us{})", r.noise_band * 100, r.resolution_us,
                       r.resolution_basis == "fixed" || r.resolution_basis.empty() ? "" : ", " + r.resolution_basis);
  if (r.noise_band_source == "clock") return fmt::format("{:.1f}% (threshold + SM clock change)", r.noise_band * 100);
  return fmt::format("{:.1f}% ({})", r.noise_band * 100, r.noise_band_source);
}

namespace {

std::string flagged_text(const RecordComparison& r) {
  return r.smallest_flagged_slowdown > 0 ? fmt::format("{:.1f}%", r.smallest_flagged_slowdown * 100) : "-";
}

std::string ci_text(const RecordComparison& r) {
  if (r.ratio <= 0) return "-";
  return fmt::format("{:.3f}-{:.3f}", r.ratio_ci_low, r.ratio_ci_high);
}

}  // namespace

std::string to_markdown(const Comparison& c) {
  std::ostringstream out;
  out << "# ridge compare\n\n";
  if (!c.base_label.empty()) out << fmt::format("base: `{}` · new: `{}`\n\n", c.base_label, c.new_label);
  out << fmt::format("Test: two-sided Mann-Whitney U on raw samples, alpha {}; threshold {:.1f}% on the ratio of medians.\n\n",
                     c.options.alpha, c.options.threshold * 100);
  out << band_rule(c) << "\n\n";
  out << summary_line(c) << ".\n\n";
  for (const auto& w : c.warnings) out << "> **warning:** " << w << "\n\n";
  out << "| name | method | dtype | params | base median | new median | ratio | change | 95% CI | p | noise band | "
         "flags a slowdown of | verdict | note |\n";
  out << "|---|---|---|---|---:|---:|---:|---:|---|---:|---|---:|---|---|\n";
  for (const auto& r : c.rows) {
    const bool has_base = r.verdict != Verdict::missing_in_base, has_new = r.verdict != Verdict::missing_in_new;
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.name, r.method,
                       r.dtype, params_text(r.params), has_base ? format_ms(r.base_median_ms) : "-",
                       has_new ? format_ms(r.new_median_ms) : "-", format_ratio(r.ratio), format_change(r.ratio),
                       ci_text(r), r.ratio > 0 ? format_p(r.test) : "-", noise_band_text(r), flagged_text(r),
                       r.verdict == Verdict::regression ? "**REGRESSION**" : to_string(r.verdict), r.note);
  }
  return out.str();
}

std::string to_text(const Comparison& c) {
  std::ostringstream out;
  if (!c.base_label.empty()) out << fmt::format("base: {}\nnew:  {}\n", c.base_label, c.new_label);
  for (const auto& w : c.warnings) out << "warning: " << w << "\n";
  std::size_t name_w = 4, params_w = 6;
  for (const auto& r : c.rows) {
    name_w = std::max(name_w, (r.name + " " + r.method + " " + r.dtype).size());
    params_w = std::max(params_w, params_text(r.params).size());
  }
  params_w = std::min<std::size_t>(params_w, 40);
  std::size_t band_w = 10;
  for (const auto& r : c.rows) band_w = std::max(band_w, noise_band_text(r).size());
  out << fmt::format("{:<{}}  {:<{}}  {:>10} {:>10} {:>7} {:>8} {:>13} {:>9}  {:<{}}  {:>7}  {}\n", "record", name_w,
                     "params", params_w, "base", "new", "ratio", "change", "95% CI", "p", "noise band", band_w, "flags",
                     "verdict");
  for (const auto& r : c.rows) {
    std::string params = params_text(r.params);
    if (params.size() > params_w) params = params.substr(0, params_w - 1) + "~";
    const bool has_base = r.verdict != Verdict::missing_in_base, has_new = r.verdict != Verdict::missing_in_new;
    out << fmt::format("{:<{}}  {:<{}}  {:>10} {:>10} {:>7} {:>8} {:>13} {:>9}  {:<{}}  {:>7}  {}{}\n",
                       r.name + " " + r.method + " " + r.dtype, name_w, params, params_w,
                       has_base ? format_ms(r.base_median_ms) : "-", has_new ? format_ms(r.new_median_ms) : "-",
                       format_ratio(r.ratio), format_change(r.ratio), ci_text(r), r.ratio > 0 ? format_p(r.test) : "-",
                       noise_band_text(r), band_w, flagged_text(r), to_string(r.verdict),
                       r.note.empty() ? "" : " (" + r.note + ")");
  }
  out << "\n" << band_rule(c) << "\n" << summary_line(c) << "\n";
  return out.str();
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"name", r.name},
                    {"method", r.method},
                    {"dtype", r.dtype},
                    {"params", r.params},
                    {"base_count", r.base_count},
                    {"new_count", r.new_count},
                    {"base_median_ms", r.base_median_ms},
                    {"new_median_ms", r.new_median_ms},
                    {"ratio", r.ratio},
                    {"ratio_ci_low", r.ratio_ci_low},
                    {"ratio_ci_high", r.ratio_ci_high},
                    {"u", r.test.u},
                    {"z", r.test.z},
                    {"p_value", r.test.p_value},
                    {"exact_test", r.test.exact},
                    {"verdict", to_string(r.verdict)},
                    {"note", r.note},
                    {"baseline_runs", r.baseline_runs},
                    {"run_to_run_spread", r.run_to_run_spread},
                    {"min_threshold", r.min_threshold},
                    {"noise_band", r.noise_band},
                    {"noise_band_source", r.noise_band_source},
                    {"resolution_us", r.resolution_us},
                    {"resolution_basis", r.resolution_basis},
                    {"gate_reason", r.gate_reason},
                    {"smallest_flagged_slowdown", r.smallest_flagged_slowdown},
                    {"clock_difference", r.clock_difference},
                    {"clock_scale", r.clock_scale},
                    {"work_scale", r.work_scale},
                    {"clock_within_baselines", r.clock_within_baselines},
                    {"missing_judged", r.missing_judged}});
  }
  return {{"schema", "ridge.compare"},
          {"schema_version", 1},
          {"base", c.base_label},
          {"new", c.new_label},
          {"threshold", c.options.threshold},
          {"alpha", c.options.alpha},
          {"clock_tolerance", c.options.clock_tolerance},
          {"min_change_us", c.options.min_change_us},
          {"per_method_resolution", c.options.per_method_resolution},
          {"gpu_family", c.gpu_family},
          {"widen_by_clock", c.options.widen_by_clock},
          {"scale_compute_bound_by_clock", c.options.scale_compute_bound_by_clock},
          {"baselines", c.baselines},
          {"spread_factor", c.options.spread_factor},
          {"geomean_ratio", c.nothing_compared() ? nlohmann::json(nullptr) : nlohmann::json(c.geomean_ratio)},
          {"geomean_count", c.geomean_count},
          {"nothing_compared", c.nothing_compared()},
          {"ratio_ci_method", c.ratio_ci_method},
          {"matched", c.matched},
          {"regressions", c.regressions},
          {"suspects", c.suspects},
          {"spread_sets_band_from", c.options.spread_sets_band_from},
          {"improvements", c.improvements},
          {"within_threshold", c.within_threshold},
          {"unchanged", c.unchanged},
          {"missing", c.missing},
          {"missing_judged", c.missing_judged},
          {"allow_missing", c.options.allow_missing},
          {"fails_on_missing", c.fails_on_missing()},
          {"different_devices", c.different_devices},
          {"different_clocks", c.different_clocks},
          {"warnings", c.warnings},
          {"rows", rows}};
}

}  // namespace ridge
