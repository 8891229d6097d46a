#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace ridge {

/// Distribution of raw samples (all in the samples' unit, e.g. milliseconds).
struct Summary {
  std::size_t count = 0;
  double median = 0, min = 0, max = 0, mean = 0;
  double stddev = 0;  ///< sample standard deviation (n-1); 0 for one sample
  double cv = 0;      ///< coefficient of variation: stddev / mean
  double p10 = 0, p25 = 0, p75 = 0, p90 = 0;
  double iqr = 0;  ///< p75 - p25
  /// Distribution-free confidence interval for the median (order statistics, binomial),
  /// at `confidence`; equals [min, max] when there are too few samples for that level.
  double median_ci_low = 0, median_ci_high = 0;
  double confidence = 0.95;
  /// Half-width of the median's confidence interval relative to the median.
  double median_ci_relative() const;
};

/// Quantile q in [0, 1] of *sorted* values, linear interpolation between order statistics
/// (the "type 7" definition numpy and R use by default).
double quantile_sorted(std::span<const double> sorted, double q);

/// Median of values (copy sorted internally). Throws UsageError on empty input or NaN.
double median(std::span<const double> values);

/// Full summary of raw samples. Throws UsageError on empty input or any NaN/inf.
Summary summarize(std::span<const double> samples, double confidence = 0.95);

/// Ranks (0-based, inclusive) of the order statistics bounding a `confidence` interval for the
/// median of n samples; {0, n-1} when n is too small for that level.
std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n, double confidence);

}  // namespace ridge
