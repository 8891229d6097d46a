#include "ridge/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge {

namespace {

const char* const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};


// One axis: its data range after rounding, and how values map onto pixels.
struct Axis {
  bool log = true;
  double lo = 0, hi = 1;         // in data units
  double pixel_lo = 0, pixel_hi = 1;  // pixels of lo and hi (hi may be smaller: the y axis)

  double to_pixel(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return pixel_lo + t * (pixel_hi - pixel_lo);
  }
  bool contains(double v) const {
    const double eps = (log ? 1e-9 * v : 1e-9 * (hi - lo));
    return v >= lo - eps && v <= hi + eps;
  }
};

double nice_step(double span, int target_ticks) {
  const double raw = span / std::max(1, target_ticks);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

// Range of an axis: the fixed one when given, else the data's, widened to decades (log) or
// nice steps (linear).
void choose_range(Axis& a, double data_min, double data_max, double fixed_min, double fixed_max) {
  if (a.log) {
    double lo = fixed_min > 0 ? fixed_min : std::pow(10.0, std::floor(std::log10(data_min) + 1e-9));
    // The top stops at twice the data (or the next decade, if nearer): no empty decade above it.
    double hi = fixed_max > 0 ? fixed_max
                              : std::min(std::pow(10.0, std::ceil(std::log10(data_max) - 1e-9)), 2 * data_max);
    if (!(hi > lo)) {
      lo /= 10;
      hi = lo * 100;
    }
    a.lo = lo;
    a.hi = hi;
    return;
  }
  const bool fixed = fixed_min != 0 || fixed_max != 0;
  double lo = fixed ? fixed_min : data_min, hi = fixed ? fixed_max : data_max;
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  if (!fixed) {
    const double step = nice_step(hi - lo, 5);
    lo = std::floor(lo / step + 1e-9) * step;
    hi = std::ceil(hi / step - 1e-9) * step;
  }
  a.lo = lo;
  a.hi = hi;
}

struct Tick {
  double value;
  bool major;  // labelled, with a darker grid line
};

std::vector<Tick> ticks(const Axis& a) {
  std::vector<Tick> out;
  if (a.log) {
    const int first = static_cast<int>(std::ceil(std::log10(a.lo) - 1e-9));
    const int last = static_cast<int>(std::floor(std::log10(a.hi) + 1e-9));
    const int decades = last - first + 1;
    const int label_every = decades > 12 ? (decades + 11) / 12 : 1;
    for (int e = first - 1; e <= last; ++e) {
      const double decade = std::pow(10.0, e);
      if (e >= first && a.contains(decade)) out.push_back({decade, (e - first) % label_every == 0});
      if (decades <= 8)
        for (int m = 2; m <= 9; ++m)
          if (a.contains(m * decade) && m * decade > a.lo) out.push_back({m * decade, false});
    }
    if (out.empty() || std::none_of(out.begin(), out.end(), [](const Tick& t) { return t.major; })) {
      // A range inside one decade: label its ends.
      out.push_back({a.lo, true});
      out.push_back({a.hi, true});
    }
    return out;
  }
  const double step = nice_step(a.hi - a.lo, 5);
  for (double v = std::ceil(a.lo / step - 1e-9) * step; v <= a.hi + step * 1e-9; v += step)
    out.push_back({std::abs(v) < step * 1e-9 ? 0.0 : v, true});
  return out;
}

std::string px(double v) { return fmt::format("{:.2f}", v); }

// Font sizes in pixels: the document's default, labels and warnings, axis titles, the title.
constexpr double font_default = 12, font_label = 11, font_axis_title = 13, font_title = 15;
// A text's box above and below its baseline, in ems: DejaVu Sans's ascent and descent, as a
// browser's text box spans them.
constexpr double text_ascent = 0.93, text_descent = 0.24;
// Below the plot: one line per warning.
constexpr double warning_line_height = 16;

void require_finite(double v, const std::string& series, std::size_t index, const char* axis) {
  if (!std::isfinite(v))
    throw UsageError(fmt::format("plot: series '{}' point {} has a non-finite {} value", series, index, axis));
}

/// The data's extent over every series.
struct DataRange {
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_min = x_min, y_max = -x_min;
  std::size_t points = 0;
};

/// The data's extent; throws UsageError for what cannot be drawn (no points, non-finite values,
/// values <= 0 on a log axis, a bad fixed range).
DataRange checked_data_range(const Plot& plot) {
  if (plot.width < 200 || plot.height < 150)
    throw UsageError(fmt::format("plot: size {}x{} is too small (at least 200x150 pixels)", plot.width, plot.height));
  DataRange r;
  for (const auto& s : plot.series) {
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      require_finite(p.x, s.name, i, "x");
      require_finite(p.y, s.name, i, "y");
      if (plot.log_x && p.x <= 0)
        throw UsageError(fmt::format("plot: series '{}' point {} has x = {} on a log axis (must be > 0)", s.name, i, p.x));
      if (plot.log_y && p.y <= 0)
        throw UsageError(fmt::format("plot: series '{}' point {} has y = {} on a log axis (must be > 0)", s.name, i, p.y));
      r.x_min = std::min(r.x_min, p.x);
      r.x_max = std::max(r.x_max, p.x);
      r.y_min = std::min(r.y_min, p.y);
      r.y_max = std::max(r.y_max, p.y);
      ++r.points;
    }
  }
  if (r.points == 0) throw UsageError(fmt::format("plot '{}' has no points to draw", plot.title));
  if ((plot.log_x && (plot.x_min < 0 || plot.x_max < 0)) || (plot.log_y && (plot.y_min < 0 || plot.y_max < 0)))
    throw UsageError("plot: a fixed range on a log axis must be > 0");
  if ((plot.x_max != 0 && plot.x_min >= plot.x_max && plot.x_min != 0) ||
      (plot.y_max != 0 && plot.y_min >= plot.y_max && plot.y_min != 0))
    throw UsageError("plot: a fixed axis range needs min < max");
  return r;
}

/// The warning lines drawn below the plot: identical warnings once, counted; the first few,
/// then one saying how many more.
constexpr std::size_t max_warning_lines = 4;
std::vector<std::string> warning_lines(const Plot& plot) {
  std::vector<std::pair<std::string, std::size_t>> distinct;
  for (const auto& w : plot.warnings) {
    auto it = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) { return d.first == w; });
    if (it == distinct.end()) distinct.push_back({w, 1});
    else ++it->second;
  }
  std::vector<std::string> lines;
  for (const auto& [text, count] : distinct) {
    if (lines.size() == max_warning_lines) {
      lines.push_back(fmt::format("... and {} more warning(s)", distinct.size() - max_warning_lines));
      break;
    }
    lines.push_back(count > 1 ? fmt::format("{} ({} times)", text, count) : text);
  }
  return lines;
}

/// Where things go: the plot area in pixels (the legend takes the right margin) and both axes.
struct Layout {
  double left = 78, top = 0, right = 0, bottom = 0;
  bool legend = false;
  Axis x, y;
  std::string clip_id;  ///< document-unique, so several plots can share one HTML page
};

Layout layout(const Plot& plot, const DataRange& data) {
  std::size_t legend_chars = 0;
  int legend_entries = 0;
  for (const auto& s : plot.series)
    if (s.in_legend && !s.name.empty()) {
      legend_chars = std::max(legend_chars, s.name.size());
      ++legend_entries;
    }
  const double legend_width = legend_entries ? std::min(260.0, 34.0 + 6.6 * double(legend_chars)) : 0;
  Layout l;
  l.legend = legend_entries > 0;
  l.top = plot.title.empty() ? 20 : 44;
  l.right = plot.width - 18 - legend_width;
  l.bottom = plot.height - 54;
  if (l.right - l.left < 80 || l.bottom - l.top < 60)
    throw UsageError(fmt::format("plot: {}x{} leaves no room for the plot area; make it larger", plot.width, plot.height));
  l.x = Axis{plot.log_x};
  l.y = Axis{plot.log_y};
  choose_range(l.x, data.x_min, data.x_max, plot.x_min, plot.x_max);
  choose_range(l.y, data.y_min, data.y_max, plot.y_min, plot.y_max);
  l.x.pixel_lo = l.left;
  l.x.pixel_hi = l.right;
  l.y.pixel_lo = l.bottom;
  l.y.pixel_hi = l.top;
  const std::size_t id_hash = std::hash<std::string>{}(plot.title + plot.x_label + plot.y_label +
                                                      std::to_string(data.points) + std::to_string(data.x_min + data.y_max));
  l.clip_id = fmt::format("ridge-plot-area-{:x}", id_hash & 0xffffffffu);
  return l;
}

/// The document's opening: size (the plot's, plus a line per warning), background, the plot
/// area's clip path, the title.
std::string svg_header(const Plot& plot, const Layout& l, std::size_t warning_count) {
  const double height = plot.height + warning_line_height * double(warning_count);
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"{2}\">\n",
      plot.width, height, font_default);
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", plot.width, height);
  svg += fmt::format("<defs><clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>\n",
                     l.clip_id, px(l.left), px(l.top), px(l.right - l.left), px(l.bottom - l.top));
  if (!plot.title.empty())
    svg += fmt::format("<text class=\"title\" x=\"{}\" y=\"26\" text-anchor=\"middle\" font-size=\"{}\" "
                       "font-weight=\"bold\">{}</text>\n",
                       px((l.left + l.right) / 2), font_title, xml_escape(plot.title));
  return svg;
}

/// The warnings, in red below the x-axis title, each cut to the width (the full text is its tooltip).
std::string warnings_svg(const Plot& plot, const Layout& l, const std::vector<std::string>& lines) {
  std::string svg;
  const double char_width = estimated_text_width("0", font_label);
  const auto fit = static_cast<std::size_t>(std::max(20.0, (plot.width - l.left - 10) / char_width));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& full = lines[i];
    const std::string text = "warning: " + full;
    const std::string shown = text.size() > fit ? text.substr(0, fit - 3) + "..." : text;
    svg += fmt::format("<text class=\"warning\" x=\"{}\" y=\"{}\" fill=\"#c00000\" font-size=\"{}\">{}<title>{}</title></text>\n",
                       px(l.left), px(plot.height + 2 + warning_line_height * double(i)), font_label, xml_escape(shown),
                       xml_escape(full));
  }
  return svg;
}

/// Grid lines, the frame, tick marks with their labels, and the axis titles.
std::string grid_and_axes(const Plot& plot, const Layout& l) {
  std::string svg = "<g class=\"grid\">\n";
  for (const auto& t : ticks(l.x)) {
    const double x = l.x.to_pixel(t.value);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1\"/>\n", px(x),
                       px(l.top), px(l.bottom), t.major ? "#d0d0d0" : "#efefef");
  }
  for (const auto& t : ticks(l.y)) {
    const double y = l.y.to_pixel(t.value);
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"{3}\" stroke-width=\"1\"/>\n", px(y),
                       px(l.left), px(l.right), t.major ? "#d0d0d0" : "#efefef");
  }
  svg += "</g>\n<g class=\"axes\">\n";
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", px(l.left),
                     px(l.top), px(l.right - l.left), px(l.bottom - l.top));
  for (const auto& t : ticks(l.x)) {
    const double x = l.x.to_pixel(t.value);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", px(x), px(l.bottom),
                       px(l.bottom + (t.major ? 6 : 3)));
    if (t.major)
      svg += fmt::format("<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(x),
                         px(l.bottom + 19), xml_escape(format_axis_value(t.value)));
  }
  for (const auto& t : ticks(l.y)) {
    const double y = l.y.to_pixel(t.value);
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#333\"/>\n", px(y),
                       px(l.left - (t.major ? 6 : 3)), px(l.left));
    if (t.major)
      svg += fmt::format("<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(l.left - 9),
                         px(y + 4), xml_escape(format_axis_value(t.value)));
  }
  if (!plot.x_label.empty())
    svg += fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{}\">{}</text>\n",
                       px((l.left + l.right) / 2), px(plot.height - 14), font_axis_title, xml_escape(plot.x_label));
  if (!plot.y_label.empty())
    svg += fmt::format(
        "<text class=\"axis-title\" x=\"0\" y=\"0\" text-anchor=\"middle\" font-size=\"{}\" "
        "transform=\"translate(18,{}) rotate(-90)\">{}</text>\n",
        font_axis_title, px((l.top + l.bottom) / 2), xml_escape(plot.y_label));
  return svg + "</g>\n";
}

std::string series_color(const Plot& plot, std::size_t index) {
  const auto& s = plot.series[index];
  return s.color.empty() ? palette[index % std::size(palette)] : s.color;
}

/// A label still to be placed, once every marker is known.
struct PendingLabel {
  double cx, cy;
  double radius;  ///< of the point's marker: the label keeps clear of it
  std::string text;
  bool below;
  int priority;  ///< 0 = key point, 1 = a series' end or highest point, 2 = any other
  std::string color;  ///< end labels: the line's colour
};

/// What the series leave for the label pass: the pixels taken, the labels drawn, those to place.
struct LabelState {
  std::vector<SvgBox> taken;  ///< markers and labels
  std::string labels;         ///< drawn last, above every line
  std::vector<PendingLabel> pending;
  std::vector<PendingLabel> end_labels;
};

/// Which of a series' drawn points get a label candidate, and at what priority (-1 = tooltip only).
std::vector<int> label_priorities(const PlotSeries& s, const std::vector<std::size_t>& drawn) {
  std::vector<int> priority(s.points.size(), -1);
  std::size_t labelled = 0;
  for (std::size_t i : drawn) labelled += s.points[i].label.empty() ? 0 : 1;
  std::size_t first = drawn.empty() ? 0 : drawn.front(), last = first, highest = first;
  for (std::size_t i : drawn) {
    if (s.points[i].x < s.points[first].x) first = i;
    if (s.points[i].x > s.points[last].x) last = i;
    if (s.points[i].y > s.points[highest].y) highest = i;
  }
  for (std::size_t i : drawn) {
    if (s.points[i].label.empty() || !s.draw_labels) continue;
    if (s.points[i].key) priority[i] = 0;
    else if (i == first || i == last || i == highest) priority[i] = 1;
    else if (labelled <= max_point_labels) priority[i] = 2;
  }
  return priority;
}

/// One series: its line and its markers (with tooltips); its end label and point labels are
/// left in `state` for the label pass.
std::string series_svg(const Plot& plot, std::size_t index, const Layout& l, LabelState& state) {
  const auto& s = plot.series[index];
  const std::string color = series_color(plot, index);
  std::string svg = fmt::format("<g class=\"series\" data-name=\"{}\">\n", xml_escape(s.name));
  if (s.line && s.points.size() >= 2) {
    std::string pts;
    for (const auto& p : s.points) pts += fmt::format("{},{} ", px(l.x.to_pixel(p.x)), px(l.y.to_pixel(p.y)));
    pts.pop_back();
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} clip-path=\"url(#{})\"/>\n",
                       pts, color, s.dashed ? " stroke-dasharray=\"6 4\"" : "", l.clip_id);
  }
  if (!s.end_label.empty() && !s.points.empty()) {
    // At the rightmost point of the line that lies inside the plot.
    const PlotPoint* end = nullptr;
    for (const auto& p : s.points)
      if (l.x.contains(p.x) && l.y.contains(p.y) && (!end || p.x > end->x)) end = &p;
    if (end)
      state.end_labels.push_back({std::min(l.x.to_pixel(end->x), l.right), l.y.to_pixel(end->y), 0, s.end_label, false, 0, color});
  }
  if (s.markers) {
    std::vector<std::size_t> drawn;
    for (std::size_t i = 0; i < s.points.size(); ++i)
      if (l.x.contains(s.points[i].x) && l.y.contains(s.points[i].y)) drawn.push_back(i);  // else outside a fixed range
    const std::vector<int> priority = label_priorities(s, drawn);
    for (std::size_t i : drawn) {
      const auto& p = s.points[i];
      const double cx = std::clamp(l.x.to_pixel(p.x), l.left, l.right);
      const double cy = std::clamp(l.y.to_pixel(p.y), l.top, l.bottom);
      const std::string tip = (p.label.empty() ? s.name : p.label) + fmt::format(" (x = {:.4g}, y = {:.4g})", p.x, p.y);
      const bool sized = p.area != 1;
      const double r = sized ? 4 * std::sqrt(std::clamp(p.area, 1.0 / 16, 50.0)) : 4;
      svg += fmt::format("<circle class=\"marker\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"{} stroke=\"white\" "
                         "stroke-width=\"1\"><title>{}</title></circle>\n",
                         px(cx), px(cy), sized ? px(r) : std::string("4"), color, sized ? " fill-opacity=\"0.55\"" : "",
                         xml_escape(tip));
      state.taken.push_back({cx - r, cy - r, cx + r, cy + r, true, ""});
      if (priority[i] >= 0) state.pending.push_back({cx, cy, r, p.label, s.labels_below, priority[i], ""});
    }
  }
  return svg + "</g>\n";
}

bool inside(const Layout& l, const SvgBox& b) {
  return b.x0 >= l.left && b.x1 <= l.right && b.y0 >= l.top && b.y1 <= l.bottom;
}

std::size_t hits(const std::vector<SvgBox>& taken, const SvgBox& b) {
  return static_cast<std::size_t>(std::count_if(taken.begin(), taken.end(), [&](const SvgBox& t) { return t.overlaps(b); }));
}

/// Line-end labels, right-aligned at the line's end: just above it, else just below, else
/// stepped further up or down (never left out: a reader needs to know which line is which).
void place_end_labels(const Layout& l, LabelState& state) {
  for (const auto& e : state.end_labels) {
    const double x = e.cx - 4;
    SvgBox best{};
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (int step = 0; step < 12 && fewest > 0; ++step) {
      const double offset = step % 2 == 0 ? -5 - 12.0 * (step / 2) : 15 + 12.0 * (step / 2);
      const double y = std::clamp(e.cy + offset, l.top + 11, l.bottom - 3);
      const SvgBox b = estimated_text_box(e.text, x, y, font_label, "end");
      const std::size_t n = hits(state.taken, b) + (inside(l, b) ? 0 : 1000);
      if (n < fewest) {
        fewest = n;
        best = b;
      }
    }
    state.taken.push_back(best);
    state.labels += fmt::format(
        "<text class=\"end-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{}\" font-size=\"{}\">{}</text>\n",
        px(best.x1), px(best.y1 - text_descent * font_label), e.color, font_label, xml_escape(e.text));
  }
}

/// Point labels, most needed first (key points, then ends and highest points, then the rest;
/// later series, drawn on top, before earlier ones), each in the first of eight places around
/// its marker where it overlaps nothing already placed and stays inside the plot area. A label
/// with no such place is left out: its marker's tooltip still holds it.
void place_point_labels(const Layout& l, LabelState& state) {
  std::reverse(state.pending.begin(), state.pending.end());
  std::stable_sort(state.pending.begin(), state.pending.end(),
                   [](const PendingLabel& a, const PendingLabel& b) { return a.priority < b.priority; });
  for (const auto& p : state.pending) {
    const double gap = p.radius + 3;
    const double up = p.cy - gap - text_descent * font_label, down = p.cy + gap + text_ascent * font_label;
    struct Spot {
      double x, y;
      const char* anchor;
    };
    // Only places next to the point: a label further away reads as another point's.
    const Spot spots[] = {{p.cx + gap, p.below ? down : up, "start"}, {p.cx + gap, p.below ? up : down, "start"},
                          {p.cx - gap, p.below ? down : up, "end"},   {p.cx - gap, p.below ? up : down, "end"},
                          {p.cx, p.below ? down : up, "middle"},      {p.cx, p.below ? up : down, "middle"},
                          {p.cx + gap, p.cy + 0.3 * font_label, "start"}, {p.cx - gap, p.cy + 0.3 * font_label, "end"}};
    for (const auto& sp : spots) {
      const SvgBox b = estimated_text_box(p.text, sp.x, sp.y, font_label, sp.anchor);
      if (!inside(l, b) || hits(state.taken, b) > 0) continue;
      state.taken.push_back(b);
      state.labels += fmt::format("<text class=\"point-label\" x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\">{}</text>\n",
                                  px(sp.x), px(sp.y), sp.anchor, font_label, xml_escape(p.text));
      break;
    }
  }
}

std::string legend_svg(const Plot& plot, const Layout& l) {
  const double lx = l.right + 14;
  double ly = l.top + 4;
  std::string svg = "<g class=\"legend\">\n";
  for (std::size_t si = 0; si < plot.series.size(); ++si) {
    const auto& s = plot.series[si];
    if (!s.in_legend || s.name.empty()) continue;
    const std::string color = series_color(plot, si);
    if (s.line)
      svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", px(lx),
                         px(ly + 6), px(lx + 22), px(ly + 6), color, s.dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (s.markers) svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/>\n", px(lx + 11), px(ly + 6), color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", px(lx + 28), px(ly + 10), xml_escape(s.name));
    ly += 18;
  }
  return svg + "</g>\n";
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab/newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') break;
        out += c;
    }
  }
  return out;
}

std::string format_axis_value(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1000) {
    static const char* suffix[] = {"k", "M", "G", "T", "P", "E"};
    int i = 0;
    double s = v / 1000;
    while (std::abs(s) >= 1000 && i < 5) {
      s /= 1000;
      ++i;
    }
    return fmt::format("{:g}{}", std::round(s * 100) / 100, suffix[i]);
  }
  if (a >= 1e-3) return fmt::format("{:g}", std::stod(fmt::format("{:.3g}", v)));
  return fmt::format("{:.0e}", v);
}

std::string render_svg(const Plot& plot) {
  const DataRange data = checked_data_range(plot);
  const Layout l = layout(plot, data);
  const std::vector<std::string> warnings = warning_lines(plot);
  std::string svg = svg_header(plot, l, warnings.size()) + grid_and_axes(plot, l);
  LabelState labels;
  for (std::size_t si = 0; si < plot.series.size(); ++si) svg += series_svg(plot, si, l, labels);
  place_end_labels(l, labels);
  place_point_labels(l, labels);
  svg += "<g class=\"labels\">\n" + labels.labels + "</g>\n";
  if (l.legend) svg += legend_svg(plot, l);
  svg += warnings_svg(plot, l, warnings);
  return svg + "</svg>\n";
}

// ---- measuring what an SVG draws ---------------------------------------------------------------

bool SvgBox::overlaps(const SvgBox& o, double tolerance) const {
  return std::min(x1, o.x1) - std::max(x0, o.x0) > tolerance && std::min(y1, o.y1) - std::max(y0, o.y0) > tolerance;
}

namespace {
/// Advance widths of DejaVu Sans (the first font the SVGs ask for; Debian's default) in ems, for
/// printable ASCII from ' ' (units per em 2048, rounded); other characters count 0.65 em.
constexpr double ascii_width_em[95] = {
    0.318, 0.401, 0.460, 0.838, 0.636, 0.950, 0.780, 0.275, 0.390, 0.390, 0.500, 0.838, 0.318, 0.361, 0.318, 0.337,
    0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.337, 0.337, 0.838, 0.838, 0.838, 0.531,
    1.000, 0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787,
    0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.390, 0.337, 0.390, 0.838, 0.500,
    0.500, 0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612,
    0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337, 0.636, 0.838};
}  // namespace

double estimated_text_width(const std::string& text, double font_size, bool bold) {
  double ems = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: part of the character before
    ems += c >= 0x20 && c < 0x7F ? ascii_width_em[c - 0x20] : 0.65;
  }
  // DejaVu Sans Bold is about 10% wider.
  return ems * font_size * (bold ? 1.1 : 1.0);
}

SvgBox estimated_text_box(const std::string& text, double x, double y, double font_size, const std::string& anchor,
                          bool bold) {
  const double w = estimated_text_width(text, font_size, bold);
  const double x0 = anchor == "end" ? x - w : anchor == "middle" ? x - w / 2 : x;
  return {x0, y - text_ascent * font_size, x0 + w, y + text_descent * font_size, false, text};
}

namespace {

/// The value of attribute `name` in the tag text `tag` ("" when absent).
std::string attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const auto at = tag.find(key);
  if (at == std::string::npos) return "";
  const auto start = at + key.size();
  return tag.substr(start, tag.find('"', start) - start);
}

double number_attribute(const std::string& tag, const std::string& name, double fallback) {
  const std::string v = attribute(tag, name);
  return v.empty() ? fallback : std::strtod(v.c_str(), nullptr);
}

/// Character data without tags, with <title> (a tooltip: not drawn) left out and the entities
/// xml_escape writes decoded.
std::string visible_text(const std::string& inner) {
  std::string out;
  for (std::size_t i = 0; i < inner.size();) {
    if (inner.compare(i, 7, "<title>") == 0) {
      const auto end = inner.find("</title>", i);
      i = end == std::string::npos ? inner.size() : end + 8;
    } else if (inner[i] == '<') {
      const auto end = inner.find('>', i);
      i = end == std::string::npos ? inner.size() : end + 1;
    } else if (inner[i] == '&') {
      const auto end = inner.find(';', i);
      const std::string entity = inner.substr(i, end == std::string::npos ? std::string::npos : end + 1 - i);
      out += entity == "&amp;" ? '&' : entity == "&lt;" ? '<' : entity == "&gt;" ? '>' : entity == "&quot;" ? '"' : '\'';
      i = end == std::string::npos ? inner.size() : end + 1;
    } else {
      out += inner[i++];
    }
  }
  return out;
}

SvgBox text_element_box(const std::string& tag, const std::string& text, double default_font_size) {
  const double size = number_attribute(tag, "font-size", default_font_size);
  const bool bold = attribute(tag, "font-weight") == "bold";
  std::string anchor = attribute(tag, "text-anchor");
  const std::string transform = attribute(tag, "transform");
  if (transform.rfind("translate(", 0) == 0 && transform.find("rotate(-90)") != std::string::npos) {
    // A y-axis title: drawn at (0, 0) in a frame turned a quarter left around the translation.
    double tx = 0, ty = 0;
    std::sscanf(transform.c_str(), "translate(%lf,%lf)", &tx, &ty);
    const SvgBox flat = estimated_text_box(text, 0, 0, size, anchor, bold);
    return {tx + flat.y0, ty - flat.x1, tx + flat.y1, ty - flat.x0, false, text};
  }
  return estimated_text_box(text, number_attribute(tag, "x", 0), number_attribute(tag, "y", 0), size, anchor, bold);
}

}  // namespace

std::vector<SvgBox> svg_boxes(const std::string& svg) {
  std::vector<SvgBox> boxes;
  double default_font_size = font_default;
  if (const auto root = svg.find("<svg"); root != std::string::npos)
    default_font_size = number_attribute(svg.substr(root, svg.find('>', root) - root), "font-size", font_default);
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    const bool text = svg.compare(at, 6, "<text ") == 0, circle = svg.compare(at, 8, "<circle ") == 0;
    if (!text && !circle) continue;
    const auto tag_end = svg.find('>', at);
    if (tag_end == std::string::npos) break;
    const std::string tag = svg.substr(at, tag_end - at);
    if (circle) {
      if (attribute(tag, "class") != "marker") continue;  // legend swatches are not data
      const double cx = number_attribute(tag, "cx", 0), cy = number_attribute(tag, "cy", 0), r = number_attribute(tag, "r", 0);
      boxes.push_back({cx - r, cy - r, cx + r, cy + r, true, ""});
      continue;
    }
    const auto close = svg.find("</text>", tag_end);
    if (close == std::string::npos) break;
    const std::string shown = visible_text(svg.substr(tag_end + 1, close - tag_end - 1));
    if (!shown.empty()) boxes.push_back(text_element_box(tag, shown, default_font_size));
    at = close;
  }
  return boxes;
}

std::vector<std::pair<std::size_t, std::size_t>> overlapping_boxes(const std::vector<SvgBox>& boxes) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j)
      if (!(boxes[i].marker && boxes[j].marker) && boxes[i].overlaps(boxes[j])) pairs.push_back({i, j});
  return pairs;
}

std::string short_kernel_name(const std::string& name, std::size_t max_chars) {
  // Cut the argument list: the first '(' at template depth 0 that does not open "(anonymous namespace)".
  std::string s;
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (c == '(' && depth == 0) {
      if (name.compare(i, 21, "(anonymous namespace)") == 0) {
        s += "(anonymous namespace)";
        i += 20;
        continue;
      }
      break;
    }
    s += c;
  }
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  // Drop namespaces and classes: the last "::" outside template arguments.
  depth = 0;
  std::size_t base = 0;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (depth == 0 && s[i] == ':' && s[i + 1] == ':') base = i + 2;
  }
  s = s.substr(base);
  for (const auto& [long_name, short_name] : {std::pair{"__nv_bfloat16", "bf16"}, {"__half", "fp16"},
                                              {"__nv_fp8_e4m3", "fp8_e4m3"}, {"unsigned int", "uint"}}) {
    for (auto at = s.find(long_name); at != std::string::npos; at = s.find(long_name, at))
      s.replace(at, std::string(long_name).size(), short_name);
  }
  if (s.empty()) s = name;
  return s.size() > max_chars && max_chars > 3 ? s.substr(0, max_chars - 3) + "..." : s;
}

}  // namespace ridge
