#pragma once
// SVG plots with no dependencies: log or linear axes, lines and labelled points. Used by the
// roofline, the size sweeps and the report. (Implementation: src/report/plot.cpp.)
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ridge {

struct PlotPoint {
  double x = 0, y = 0;
  std::string label;  ///< drawn beside the point when non-empty; also its tooltip
  /// The marker's area relative to the default marker (e.g. a kernel's share of the time); drawn
  /// translucent when not 1, between 1/16 and 50 times the default.
  double area = 1;
  /// Label this point whatever the series' label policy (a knee, the best point, a point a
  /// finding names). It is still left out, to its tooltip, where it would overlap another label.
  bool key = false;
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
  /// false: point labels only in the markers' tooltips. true: the series' key points are
  /// labelled, and when it has more than max_point_labels labels only its key points, its two
  /// ends and its highest point are; every other label stays in its marker's tooltip.
  bool draw_labels = true;
};

/// A series with more point labels than this labels only its key points, ends and highest point.
inline constexpr std::size_t max_point_labels = 8;

struct Plot {
  std::string title;
  std::string x_label, y_label;  ///< with units, e.g. "arithmetic intensity (FLOP/byte)"
  bool log_x = true, log_y = true;
  std::vector<PlotSeries> series;
  int width = 800, height = 520;
  /// Optional fixed axis ranges (0 = from the data).
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  /// Findings about the data drawn (e.g. "3 points above the roof: impossible"), drawn in red
  /// below the plot, one line each (identical lines once, counted; the first few, then how many
  /// more). Give counted lines, not one per point: the points keep their details in tooltips.
  std::vector<std::string> warnings;
};

/// A rectangle an SVG draws, in pixels (y grows down).
struct SvgBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool marker = false;  ///< a data marker (circle); else a text
  std::string text;     ///< the visible text (tooltips excluded); empty for a marker
  /// True when the two share more than `tolerance` pixels in both directions.
  bool overlaps(const SvgBox& other, double tolerance = 0.5) const;
};

/// Estimated width in pixels of `text` drawn at `font_size` pixels in the plots' sans-serif font
/// (UTF-8 characters counted, bold wider). The layout places labels by this estimate, and
/// svg_boxes measures with it, so the two agree by construction.
double estimated_text_width(const std::string& text, double font_size, bool bold = false);

/// The box of a text at (x, y) (its baseline) by the same estimate; `anchor` is SVG's
/// text-anchor ("start", "middle" or "end").
SvgBox estimated_text_box(const std::string& text, double x, double y, double font_size, const std::string& anchor,
                          bool bold = false);

/// Every <text> box (by the estimate above; tooltips are not drawn, so not counted; the
/// transform translate(..) rotate(-90) of a y-axis title is followed) and every data marker
/// (<circle class="marker">) of an SVG ridge wrote.
std::vector<SvgBox> svg_boxes(const std::string& svg);

/// Pairs of boxes in `boxes` that overlap: two texts, or a text and a marker (markers may
/// touch each other). Indices into `boxes`.
std::vector<std::pair<std::size_t, std::size_t>> overlapping_boxes(const std::vector<SvgBox>& boxes);

/// Shortens a demangled kernel name for a plot label, keeping what a reader recognises: the
/// return type, namespaces (also "(anonymous namespace)") and the argument list are dropped,
/// template arguments kept and shortened ("__nv_bfloat16" -> "bf16"), and what is still
/// longer than `max_chars` is cut with "...".
/// "void ridge::gpt2::(anonymous namespace)::fused_step_kernel<__nv_bfloat16>(int)" ->
/// "fused_step_kernel<bf16>".
std::string short_kernel_name(const std::string& name, std::size_t max_chars = 40);

/// Escapes &, <, >, " and ' for XML/HTML text and attributes (drops disallowed control characters).
std::string xml_escape(const std::string& text);

/// Renders a self-contained SVG document (no scripts, no external fonts). Throws UsageError for
/// non-positive values on a log axis or a plot with no points. Points outside fixed axis ranges
/// are left out (lines are clipped to the plot area), so every drawn marker lies inside it.
std::string render_svg(const Plot& plot);

/// Compact axis label for a value: 1e12 -> "1T", 2.5e-3 -> "2.5m", 0.1 -> "0.1".
std::string format_axis_value(double value);

}  // namespace ridge
