// The detectors behind LevelDetector: the rank test `ridge compare` judges a run with, and the
// run-median test `ridge history check` judges windows of runs with. Each builds its band on the
// terms its caller measured (threshold, producer, clock), in the order it always has.
#include "ridge/level_detector.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/compare.hpp"
#include "ridge/errors.hpp"
#include "ridge/resolution.hpp"

namespace ridge {

namespace {

void require_finite(std::span<const double> values, const char* side) {
  for (double v : values)
    if (!std::isfinite(v)) throw UsageError(fmt::format("rank test: {} samples contain NaN or infinity", side));
}

// Number of ways each U value arises under the null, for m values of `a` and n of `b` (no ties):
// build the sorted sequence by adding the largest element last; an `a` placed last beats all n
// values of `b` so far.
std::vector<double> compute_exact_u_counts(std::size_t m, std::size_t n) {
  // table[i][j] = counts of U for i a-values and j b-values, as a vector over u = 0..i*j.
  std::vector<std::vector<std::vector<double>>> table(m + 1, std::vector<std::vector<double>>(n + 1));
  for (std::size_t i = 0; i <= m; ++i)
    for (std::size_t j = 0; j <= n; ++j) {
      auto& cell = table[i][j];
      cell.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        cell[0] = 1;
        continue;
      }
      const auto& a_last = table[i - 1][j];  // shifted by j
      const auto& b_last = table[i][j - 1];
      for (std::size_t u = 0; u < a_last.size(); ++u) cell[u + j] += a_last[u];
      for (std::size_t u = 0; u < b_last.size(); ++u) cell[u] += b_last[u];
    }
  return table[m][n];
}

// The table depends only on the sample sizes, and a comparison's records mostly share them:
// computed once per (m, n) per thread (m + n <= 40, so at most a few hundred entries).
const std::vector<double>& exact_u_counts(std::size_t m, std::size_t n) {
  thread_local std::map<std::pair<std::size_t, std::size_t>, std::vector<double>> cache;
  auto it = cache.find({m, n});
  if (it == cache.end()) it = cache.emplace(std::pair{m, n}, compute_exact_u_counts(m, n)).first;
  return it->second;
}

}  // namespace

RankTest mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  require_finite(a, "first");
  require_finite(b, "second");
  RankTest result;
  const std::size_t m = a.size(), n = b.size();
  if (m == 0 || n == 0) return result;

  // Average ranks over the pooled samples (1-based), and the tie groups' sizes.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(m + n);
  for (double v : a) pooled.emplace_back(v, 0);
  for (double v : b) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double t = double(j - i);
    const double average_rank = (double(i + 1) + double(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rank_sum_a += average_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double md = double(m), nd = double(n), total = md + nd;
  result.u = rank_sum_a - md * (md + 1) / 2.0;
  const double mean_u = md * nd / 2.0;

  if (!ties && m + n <= 40) {
    const std::vector<double>& counts = exact_u_counts(m, n);
    double all = 0;
    for (double c : counts) all += c;
    const auto u = static_cast<std::size_t>(std::llround(result.u));
    double low = 0, high = 0;  // P(U <= u), P(U >= u)
    for (std::size_t k = 0; k < counts.size(); ++k) {
      if (k <= u) low += counts[k];
      if (k >= u) high += counts[k];
    }
    result.exact = true;
    result.p_value = std::min(1.0, 2.0 * std::min(low, high) / all);
    return result;
  }

  const double variance = md * nd / 12.0 * ((total + 1) - tie_term / (total * (total - 1)));
  if (variance <= 0) return result;  // every value equal: no evidence of a difference
  const double distance = std::max(0.0, std::abs(result.u - mean_u) - 0.5);  // continuity correction
  result.z = (result.u > mean_u ? 1 : -1) * distance / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(std::abs(result.z) / std::sqrt(2.0)));
  return result;
}

NoiseBand NoiseBand::from_threshold(double threshold, double producer_minimum) {
  NoiseBand band{threshold, "threshold"};
  band.widen(producer_minimum, "producer");
  return band;
}

void NoiseBand::widen(double band, std::string_view term) {
  if (band > relative) {
    relative = band;
    source = term;
  }
}

double median_in_place(std::span<double> v) {
  const std::size_t n = v.size();
  const std::size_t mid = n / 2;
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(mid);
  std::nth_element(v.begin(), middle, v.end());
  const double hi = *middle;
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), middle);
  return 0.5 * (lo + hi);
}

double median_of_copy(std::vector<double> values) { return median_in_place(values); }

double median_variance_factor(std::size_t runs) {
  return (runs >= 3 ? std::numbers::pi / 2 : 1.0) / double(runs);
}

LevelDetector::~LevelDetector() = default;

namespace {

void require(bool present, std::string_view detector, std::string_view what) {
  if (!present) throw UsageError(fmt::format("level detector {}: needs {} on both sides", detector, what));
}

// Smallest two-sided p-value any outcome can reach with these sample sizes (exact test).
double smallest_possible_p(std::size_t m, std::size_t n) {
  // 2 / C(m+n, m), computed in logs.
  const double log_c = std::lgamma(double(m + n + 1)) - std::lgamma(double(m + 1)) - std::lgamma(double(n + 1));
  return std::min(1.0, 2.0 * std::exp(-log_c));
}

// The runs' medians' spread relative to their median `center`: from five runs on robust, 1.4826 x
// their median absolute deviation (the standard deviation for normal noise), so one process in ten
// that jumped does not widen every record's band; below five the standard deviation. -1 below two.
double run_to_run_spread(const std::vector<double>& medians, double center) {
  if (medians.size() < 2 || !(center > 0)) return -1;
  if (medians.size() >= 5) {
    std::vector<double> deviations;
    for (double m : medians) deviations.push_back(std::abs(m - center));
    return 1.4826 * median_in_place(deviations) / center;
  }
  double mean = 0;
  for (double m : medians) mean += m;
  mean /= double(medians.size());
  double squares = 0;
  for (double m : medians) squares += (m - mean) * (m - mean);
  return std::sqrt(squares / double(medians.size() - 1)) / center;
}

// The resolution term of a record's band, microseconds, with what it rests on: its timing method's
// measured resolution on the GPU family where there is one (and it is finer), else the fixed one.
std::pair<double, std::string> resolution_term(Method method, const std::string& family, const CompareOptions& options) {
  if (options.per_method_resolution)
    if (const MethodResolution* measured = measured_resolution(method, family)) {
      const double us = options.spread_factor * measured->run_to_run_sd_us;
      if (us < options.min_change_us) return {us, fmt::format("{} {}", family, to_string(method))};
    }
  return {options.min_change_us, "fixed"};
}

// `ridge compare`: a new run against its baselines, by the rank test of the pooled raw samples.
class RankTestDetector final : public LevelDetector {
 public:
  std::string_view name() const override { return "rank_test"; }
  LevelJudgement judge(const LevelEvidence& before, const LevelEvidence& after, const LevelTerms& terms,
                       const CompareOptions& options) const override {
    require(!before.run_medians_ms.empty() && !after.run_medians_ms.empty(), name(), "each run's median");
    LevelJudgement j;
    j.before_ms = median_of_copy(before.run_medians_ms);
    j.after_ms = median_of_copy(after.run_medians_ms);
    j.ratio = j.after_ms / j.before_ms;
    j.log_ratio = std::log(j.ratio);
    j.rank_test = mann_whitney_u(before.samples_ms, after.samples_ms);
    j.p_value = j.rank_test->p_value;
    j.significant = j.p_value < options.alpha;
    j.can_be_significant = smallest_possible_p(before.samples_ms.size(), after.samples_ms.size()) < options.alpha;
    j.run_to_run_spread = run_to_run_spread(before.run_medians_ms, j.before_ms);
    NoiseBand band = terms.band;
    if (j.run_to_run_spread > 0) band.widen(options.spread_factor * j.run_to_run_spread, "run-to-run");
    // The clock scales the relative terms; the resolution is an absolute time between processes,
    // whatever the clock, so it stands beside them rather than being widened too.
    if (terms.clock_difference > 0) band.widen(band.relative + terms.clock_difference, "clock");
    // Enough baselines measure the record's own spread between processes: the resolution then only
    // marks a change inside min_change_us as suspect (compare's verdict), it does not hide it.
    const bool spread_sets_band =
        before.run_medians_ms.size() >= options.spread_sets_band_from && j.run_to_run_spread >= 0;
    if (j.before_ms > 0 && !spread_sets_band) {
      std::tie(j.resolution_us, j.resolution_basis) = resolution_term(terms.method, terms.gpu_family, options);
      band.widen(j.resolution_us * 1e-3 / j.before_ms, "resolution");
    }
    j.band = std::move(band);
    j.changed = j.significant && j.band.excludes(j.ratio);
    return j;
  }
};

// `ridge history check`: two windows of a series' runs, one number a run (its log median), against
// the series' own run-to-run noise.
class RunMediansDetector final : public LevelDetector {
 public:
  std::string_view name() const override { return "run_medians"; }
  LevelJudgement judge(const LevelEvidence& before, const LevelEvidence& after, const LevelTerms& terms,
                       const CompareOptions& options) const override {
    const std::vector<double>& b = before.run_log_medians;
    const std::vector<double>& a = after.run_log_medians;
    require(!b.empty() && !a.empty(), name(), "each run's log median");
    LevelJudgement j;
    const double level_before = median_of_copy(b), level_after = median_of_copy(a);
    j.log_ratio = level_after - level_before;
    j.ratio = std::exp(j.log_ratio);
    j.before_ms = std::exp(level_before);
    j.after_ms = std::exp(level_after);
    NoiseBand band = terms.band;
    if (terms.clock_difference > 0) band.widen(terms.clock_difference, "clock");
    if (terms.series_noise >= 0) {
      j.run_to_run_spread = terms.series_noise;
      j.standard_error = terms.series_noise * std::sqrt(median_variance_factor(b.size()) + median_variance_factor(a.size()));
      band.widen(std::exp(terms.series_z * j.standard_error) - 1, "run-to-run");
      j.p_value = j.standard_error > 0 ? std::erfc(std::abs(j.log_ratio) / j.standard_error / std::numbers::sqrt2)
                                       : (j.log_ratio != 0 ? 0 : 1);
    } else {
      // Too few runs to learn the series' noise: the resolution between processes (the timing
      // method's measured one on the GPU family, else the fixed one), which a window's median
      // averages down as 1/sqrt(runs).
      const double runs = double(std::min(b.size(), a.size()));
      const auto [resolution_us, basis] = resolution_term(terms.method, terms.gpu_family, options);
      j.resolution_us = resolution_us / std::sqrt(runs);
      j.resolution_basis = basis;
      band.widen(j.resolution_us * 1e-3 / j.before_ms, "resolution");
    }
    j.band = std::move(band);
    j.changed = j.band.excludes(j.ratio);
    j.significant = j.changed;  // the band holds the z x standard error term
    // Where the split is cleanest: the difference of the windows' means over its standard error's
    // shape. The medians decide; the means place the change (a median of five runs is the same one
    // or two runs either side of a step, the mean peaks at it).
    double sum_before = 0, sum_after = 0;
    for (double y : b) sum_before += y;
    for (double y : a) sum_after += y;
    j.split_score = std::abs(sum_after / double(a.size()) - sum_before / double(b.size())) /
                    std::sqrt(1 / double(b.size()) + 1 / double(a.size()));
    return j;
  }
};

template <typename Detector>
std::shared_ptr<const LevelDetector> make() {
  return std::make_shared<const Detector>();
}

// The registry: a next detector is one class above and one line here.
struct RegisteredDetector {
  std::string_view name;
  std::shared_ptr<const LevelDetector> (*make)();
};
constexpr RegisteredDetector registry[] = {
    {"rank_test", make<RankTestDetector>},
    {"run_medians", make<RunMediansDetector>},
};

}  // namespace

std::shared_ptr<const LevelDetector> make_level_detector(std::string_view name) {
  for (const RegisteredDetector& entry : registry)
    if (entry.name == name) return entry.make();
  throw UsageError(fmt::format("unknown level detector '{}'; choose one of: {}", name,
                               fmt::join(level_detector_names(), ", ")));
}

std::vector<std::string> level_detector_names() {
  std::vector<std::string> names;
  for (const RegisteredDetector& entry : registry) names.emplace_back(entry.name);
  return names;
}

}  // namespace ridge
