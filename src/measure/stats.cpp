#include "ridge/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge {

namespace {

void require_valid(std::span<const double> values) {
  if (values.empty()) throw UsageError("statistics need at least one sample, got none");
  for (double v : values)
    if (!std::isfinite(v)) throw UsageError("statistics got a non-finite sample (NaN or inf)");
}

}  // namespace

double Summary::median_ci_relative() const {
  if (median == 0) return 0;
  return (median_ci_high - median_ci_low) / 2.0 / std::abs(median);
}

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw UsageError("quantile of an empty sample");
  if (q < 0 || q > 1) throw UsageError("quantile must be within [0, 1]");
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double median(std::span<const double> values) {
  require_valid(values);
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return quantile_sorted(sorted, 0.5);
}

std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n, double confidence) {
  if (n == 0) throw UsageError("confidence interval of an empty sample");
  const double alpha = 1.0 - confidence;
  // Largest k with P(X <= k) <= alpha/2 for X ~ Binomial(n, 1/2) gives the interval
  // [x_(k+1), x_(n-k)] (1-based). The CDF is accumulated term by term, each probability from the
  // previous one (P(X = j) = P(X = j-1) (n-j+1)/j), in logs. For large n the sum starts 12
  // standard deviations below the mean, where the mass left out is below 1e-30: the work is
  // O(sqrt(n)), so 10 million samples take microseconds (the sort dominates).
  const double nd = static_cast<double>(n);
  const double skip = nd / 2 - 12 * std::sqrt(nd) / 2;
  const std::size_t first = n > 1000 && skip > 0 ? static_cast<std::size_t>(skip) : 0;
  const double fd = static_cast<double>(first);
  double log_pmf = std::lgamma(nd + 1) - std::lgamma(fd + 1) - std::lgamma(nd - fd + 1) + nd * std::log(0.5);
  double cdf = 0;
  std::size_t k = 0;
  bool found = false;
  for (std::size_t j = first; j < n / 2; ++j) {
    if (j > first) log_pmf += std::log((nd - static_cast<double>(j) + 1) / static_cast<double>(j));
    cdf += std::exp(log_pmf);
    if (cdf > alpha / 2) break;
    k = j;
    found = true;
  }
  if (!found) return {0, n - 1};
  return {k, n - 1 - k};
}

Summary summarize(std::span<const double> samples, double confidence) {
  require_valid(samples);
  if (!(confidence > 0 && confidence < 1))
    throw UsageError(fmt::format("confidence must be within (0, 1), got {}", confidence));
  std::vector<double> s(samples.begin(), samples.end());
  std::sort(s.begin(), s.end());
  Summary r;
  r.count = s.size();
  r.confidence = confidence;
  r.min = s.front();
  r.max = s.back();
  r.median = quantile_sorted(s, 0.5);
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  if (s.size() > 1) {
    double ss = 0;
    for (double v : s) ss += (v - r.mean) * (v - r.mean);
    r.stddev = std::sqrt(ss / static_cast<double>(s.size() - 1));
  }
  r.cv = r.mean != 0 ? r.stddev / std::abs(r.mean) : 0;
  r.p10 = quantile_sorted(s, 0.10);
  r.p25 = quantile_sorted(s, 0.25);
  r.p75 = quantile_sorted(s, 0.75);
  r.p90 = quantile_sorted(s, 0.90);
  r.iqr = r.p75 - r.p25;
  auto [lo, hi] = median_ci_ranks(s.size(), confidence);
  r.median_ci_low = s[lo];
  r.median_ci_high = s[hi];
  return r;
}

}  // namespace ridge
