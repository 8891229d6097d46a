#pragma once
// Printing helpers the sweep commands (timing, bandwidth, matmul) share.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "ridge/plot.hpp"
#include "ridge/result.hpp"
#include "ridge/sweep.hpp"

namespace ridge::cli {

/// Callbacks that print each record with `print_record` on `out`, and show progress and status
/// on stderr when it is a terminal.
SweepCallbacks sweep_callbacks(const std::string& label, std::FILE* out,
                               std::function<void(std::FILE*, const Record&)> print_record);

/// The short tags of a record's serious warnings ("impossible", "high spread", "clocks moved"),
/// each followed by a space, for a table's notes column.
std::string warning_tags(const Record& record);

/// A fraction stored in record.extra[key]; NaN when absent (format_percent prints "-").
double extra_fraction(const Record& record, const std::string& key);

/// Findings, details indented under their headline.
void print_findings(std::FILE* out, const std::vector<Finding>& findings);

/// Renders `plot` as SVG and writes it to `path` (atomically), creating its folder.
void write_plot(const std::string& path, const Plot& plot);

}  // namespace ridge::cli
