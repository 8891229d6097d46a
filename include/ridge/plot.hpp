#pragma once
// SVG plots with no dependencies: log or linear axes, lines and labelled points. Used by the
// roofline, the size sweeps and the report. (Implementation: src/report/plot.cpp.)
#include <string>
#include <vector>

namespace ridge {

struct PlotPoint {
  double x = 0, y = 0;
  std::string label;  ///< drawn beside the point when non-empty; also its tooltip
  /// The marker's area relative to the default marker (e.g. a kernel's share of the time); drawn
  /// translucent when not 1, between 1/16 and 50 times the default.
  double area = 1;
};

struct PlotSeries {
  std::string name;  ///< legend entry
  std::vector<PlotPoint> points;
  bool line = true;     ///< connect points with a line
  bool markers = true;  ///< draw a marker at each point
  bool dashed = false;
  std::string color;  ///< CSS color; empty = from the palette
  /// Text drawn at the right end of the line (e.g. "HBM 4.4 TB/s" on a roof); empty = none.
  std::string end_label;
  bool in_legend = true;  ///< list the series in the legend
  bool labels_below = false;  ///< try point labels below the points first (default: above)
  bool draw_labels = true;    ///< false: point labels only in the markers' tooltips
};

struct Plot {
  std::string title;
  std::string x_label, y_label;  ///< with units, e.g. "arithmetic intensity (FLOP/byte)"
  bool log_x = true, log_y = true;
  std::vector<PlotSeries> series;
  int width = 800, height = 520;
  /// Optional fixed axis ranges (0 = from the data).
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  /// Findings about the data drawn (e.g. a point above the roofline: impossible), drawn in red
  /// under the title (the first few; then how many more).
  std::vector<std::string> warnings;
};

/// Escapes &, <, >, " and ' for XML/HTML text and attributes (drops disallowed control characters).
std::string xml_escape(const std::string& text);

/// Renders a self-contained SVG document (no scripts, no external fonts). Throws UsageError for
/// non-positive values on a log axis or a plot with no points. Points outside fixed axis ranges
/// are left out (lines are clipped to the plot area), so every drawn marker lies inside it.
std::string render_svg(const Plot& plot);

/// Compact axis label for a value: 1e12 -> "1T", 2.5e-3 -> "2.5m", 0.1 -> "0.1".
std::string format_axis_value(double value);

}  // namespace ridge
