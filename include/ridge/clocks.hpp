#pragma once
// What the SM clock did while the rows of one table were sampled: each row's median clock, the
// samples taken at reduced clocks, and whether the rows ran at comparable clocks at all. CPU only:
// the GPU side only reads clocks (measure_interleaved's read_sm_mhz), the decisions are here.
#include <optional>
#include <string>
#include <vector>

#include "ridge/result.hpp"

namespace ridge {

/// Thresholds of the clock analysis.
struct ClockDropOptions {
  /// A sample ran at reduced clocks when its SM clock is more than this fraction below the row's
  /// highest (a drop during sampling, e.g. a power cap reached mid-row)...
  double drop_fraction = 0.05;
  /// ... or below this fraction of the device's rated SM clock (nvbench's throttle threshold, 0.75).
  double rated_fraction = 0.75;
  /// Rows of one table whose median SM clocks differ by more than this fraction are flagged.
  double table_spread_fraction = 0.03;
};

/// One row's SM clocks, per sample and summarized. Empty (known() false) without clock readings.
struct RowClocks {
  std::vector<double> sample_sm_mhz;  ///< as recorded, one per sample
  double median_sm_mhz = 0, min_sm_mhz = 0, max_sm_mhz = 0;
  double reduced_below_mhz = 0;  ///< samples under this clock count as reduced
  std::vector<bool> reduced;     ///< per sample: ran at reduced clocks
  int reduced_count = 0;
  bool known() const { return !sample_sm_mhz.empty(); }
};

/// Analyzes one row's per-sample SM clocks (MHz; values <= 0 mean unknown and make the row unknown).
/// `rated_sm_mhz`: the device's rated clock (DeviceDescription::max_sm_clock_mhz), 0 if unknown.
RowClocks analyze_row_clocks(const std::vector<double>& sample_sm_mhz, double rated_sm_mhz,
                             const ClockDropOptions& options = {});

/// The clocks of a record's samples (extra.sample_sm_mhz, written by to_record from a Measurement
/// with clocks), analyzed as analyze_row_clocks does. Unknown when the record has none.
RowClocks record_clocks(const Record& record, double rated_sm_mhz, const ClockDropOptions& options = {});

/// The median over its samples of a record that excludes the reduced-clock samples; nullopt when
/// no sample was reduced or every one was.
std::optional<double> median_at_full_clocks(const Record& record, const RowClocks& clocks);

/// Writes a row's clocks into its record (extra.sm_mhz_median, extra.reduced_clock_samples) and,
/// when some samples ran at reduced clocks, a warning saying how many, below which clock, and the
/// median without them. Returns that warning, or nullopt.
std::optional<std::string> annotate_clocks(Record& record, const RowClocks& clocks);

/// A finding for a table whose rows ran at SM clocks more than options.table_spread_fraction apart
/// (highest median over lowest, minus 1), naming the slowest- and fastest-clocked rows; nullopt when
/// they agree or fewer than two rows have clocks. `labels` name the rows, same order as `rows`.
std::optional<std::string> clock_spread_finding(const std::vector<std::string>& labels,
                                                const std::vector<RowClocks>& rows,
                                                const ClockDropOptions& options = {});

}  // namespace ridge
