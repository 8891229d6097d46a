// The clock analysis of a table's rows: reduced-clock samples and the spread of the rows' clocks.
#include "ridge/clocks.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ridge/format.hpp"
#include "ridge/stats.hpp"

namespace ridge {

RowClocks analyze_row_clocks(const std::vector<double>& sample_sm_mhz, double rated_sm_mhz,
                             const ClockDropOptions& o) {
  RowClocks c;
  if (sample_sm_mhz.empty() ||
      std::any_of(sample_sm_mhz.begin(), sample_sm_mhz.end(), [](double v) { return !(v > 0); }))
    return c;
  c.sample_sm_mhz = sample_sm_mhz;
  const auto [lo, hi] = std::minmax_element(sample_sm_mhz.begin(), sample_sm_mhz.end());
  c.min_sm_mhz = *lo;
  c.max_sm_mhz = *hi;
  c.median_sm_mhz = summarize(sample_sm_mhz).median;
  const double rated_floor = rated_sm_mhz > 0 ? o.rated_fraction * rated_sm_mhz : 0.0;
  c.reduced_below_mhz = std::max((1 - o.drop_fraction) * c.max_sm_mhz, rated_floor);
  for (double mhz : sample_sm_mhz) {
    c.reduced.push_back(mhz < c.reduced_below_mhz);
    c.reduced_count += c.reduced.back() ? 1 : 0;
  }
  return c;
}

RowClocks record_clocks(const Record& r, double rated_sm_mhz, const ClockDropOptions& o) {
  const std::vector<double> mhz = extra_key::sample_sm_mhz.get(r);  // a sample without a reading: NaN
  if (mhz.size() != r.samples_ms.size()) return {};  // not one per sample: cannot attribute them
  return analyze_row_clocks(mhz, rated_sm_mhz, o);
}

std::optional<double> median_at_full_clocks(const Record& r, const RowClocks& c) {
  if (c.reduced_count == 0 || c.reduced.size() != r.samples_ms.size()) return std::nullopt;
  std::vector<double> kept;
  for (std::size_t i = 0; i < r.samples_ms.size(); ++i)
    if (!c.reduced[i]) kept.push_back(r.samples_ms[i]);
  if (kept.empty()) return std::nullopt;
  return summarize(kept).median;
}

std::optional<std::string> annotate_clocks(Record& r, const RowClocks& c) {
  if (!c.known()) return std::nullopt;
  extra_key::sm_mhz_median.set(r, c.median_sm_mhz);
  extra_key::reduced_clock_samples.set(r, c.reduced_count);
  if (c.reduced_count == 0) return std::nullopt;
  std::string warning =
      fmt::format("measured at reduced clocks: {} of {} samples ran below {:.0f} MHz (SM clock {:.0f}-{:.0f} MHz)",
                  c.reduced_count, c.sample_sm_mhz.size(), c.reduced_below_mhz, c.min_sm_mhz, c.max_sm_mhz);
  if (const auto full = median_at_full_clocks(r, c)) {
    extra_key::median_ms_at_full_clocks.set(r, *full);
    warning += fmt::format("; the median without them is {}", format_ms(*full));
  } else {
    warning += "; every sample was, so the median is a reduced-clock number";
  }
  r.warnings.push_back(warning);
  return warning;
}

std::optional<std::string> clock_spread_finding(const std::vector<std::string>& labels,
                                                const std::vector<RowClocks>& rows, const ClockDropOptions& o) {
  int slowest = -1, fastest = -1;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    if (!rows[i].known()) continue;
    if (slowest < 0 || rows[i].median_sm_mhz < rows[slowest].median_sm_mhz) slowest = i;
    if (fastest < 0 || rows[i].median_sm_mhz > rows[fastest].median_sm_mhz) fastest = i;
  }
  if (slowest < 0 || slowest == fastest) return std::nullopt;
  const double spread = rows[fastest].median_sm_mhz / rows[slowest].median_sm_mhz - 1;
  if (spread <= o.table_spread_fraction) return std::nullopt;
  auto label = [&](int i) { return i < static_cast<int>(labels.size()) ? labels[i] : fmt::format("row {}", i + 1); };
  return fmt::format("the rows ran at different SM clocks: {} at a median {:.0f} MHz, {} at {:.0f} MHz ({:.1f}% apart, "
                     "more than {:.0f}%); their times differ partly because of the clock, not only the method",
                     label(slowest), rows[slowest].median_sm_mhz, label(fastest), rows[fastest].median_sm_mhz,
                     spread * 100, o.table_spread_fraction * 100);
}

}  // namespace ridge
