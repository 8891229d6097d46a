#include "ridge/plot.hpp"

#include <algorithm>
#include <cmath>
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

// A rectangle of pixels, for keeping labels apart.
struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// Approximate width of 11-pixel sans-serif text.
double text_width(const std::string& s) { return 6.8 * static_cast<double>(s.size()); }

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

// Warning lines drawn under the title: the first few, then one saying how many more.
constexpr std::size_t max_warning_lines = 3;
std::size_t warning_lines(const Plot& plot) {
  return std::min(plot.warnings.size(), max_warning_lines) + (plot.warnings.size() > max_warning_lines ? 1 : 0);
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
  l.top = (plot.title.empty() ? 20 : 44) + 15.0 * double(warning_lines(plot));
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

/// The document's opening: size, background, the plot area's clip path, the title.
std::string svg_header(const Plot& plot, const Layout& l) {
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
      plot.width, plot.height);
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", plot.width, plot.height);
  svg += fmt::format("<defs><clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>\n",
                     l.clip_id, px(l.left), px(l.top), px(l.right - l.left), px(l.bottom - l.top));
  if (!plot.title.empty())
    svg += fmt::format("<text class=\"title\" x=\"{}\" y=\"26\" text-anchor=\"middle\" font-size=\"15\" "
                       "font-weight=\"bold\">{}</text>\n",
                       px((l.left + l.right) / 2), xml_escape(plot.title));
  const std::size_t lines = warning_lines(plot);
  // At most as many characters as fit the width (about 6.6 px each); the full text is the tooltip.
  const auto fit = static_cast<std::size_t>(std::max(20.0, (plot.width - l.left - 10) / 6.6));
  for (std::size_t i = 0; i < lines; ++i) {
    const bool more = i == max_warning_lines;
    const std::string& full = more ? std::string() : plot.warnings[i];
    std::string text = more ? fmt::format("... and {} more warning(s)", plot.warnings.size() - max_warning_lines)
                            : full.size() > fit ? full.substr(0, fit - 3) + "..." : full;
    svg += fmt::format("<text class=\"warning\" x=\"{}\" y=\"{}\" fill=\"#c00000\" font-size=\"11\">{}<title>{}</title></text>\n",
                       px(l.left), px((plot.title.empty() ? 20 : 44) + 15.0 * double(i + 1) - 4), xml_escape("warning: " + text),
                       xml_escape(more ? text : full));
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
    svg += fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
                       px((l.left + l.right) / 2), px(plot.height - 14), xml_escape(plot.x_label));
  if (!plot.y_label.empty())
    svg += fmt::format(
        "<text class=\"axis-title\" x=\"0\" y=\"0\" text-anchor=\"middle\" font-size=\"13\" "
        "transform=\"translate(18,{}) rotate(-90)\">{}</text>\n",
        px((l.top + l.bottom) / 2), xml_escape(plot.y_label));
  return svg + "</g>\n";
}

std::string series_color(const Plot& plot, std::size_t index) {
  const auto& s = plot.series[index];
  return s.color.empty() ? palette[index % std::size(palette)] : s.color;
}

/// A point label still to be placed, once every marker is known.
struct PendingLabel {
  double cx, cy;
  std::string text;
  bool below;
};

/// What the series leave for the label pass: the pixels taken, the labels drawn, those to place.
struct LabelState {
  std::vector<Box> taken;  ///< markers and labels
  std::string labels;      ///< drawn last, above every line
  std::vector<PendingLabel> pending;
};

/// One series: its line, its end label and its markers (with tooltips).
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
    if (end) {
      const double x = std::min(l.x.to_pixel(end->x), l.right) - 4, y = std::max(l.y.to_pixel(end->y) - 5, l.top + 11);
      state.taken.push_back({x - text_width(s.end_label), y - 10, x, y + 2});
      state.labels += fmt::format(
          "<text class=\"end-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{}\" font-size=\"11\">{}</text>\n",
          px(x), px(y), color, xml_escape(s.end_label));
    }
  }
  if (s.markers) {
    for (const auto& p : s.points) {
      if (!l.x.contains(p.x) || !l.y.contains(p.y)) continue;  // outside a fixed range
      const double cx = std::clamp(l.x.to_pixel(p.x), l.left, l.right);
      const double cy = std::clamp(l.y.to_pixel(p.y), l.top, l.bottom);
      const std::string tip = (p.label.empty() ? s.name : p.label) + fmt::format(" (x = {:.4g}, y = {:.4g})", p.x, p.y);
      const bool sized = p.area != 1;
      const double r = sized ? 4 * std::sqrt(std::clamp(p.area, 1.0 / 16, 50.0)) : 4;
      svg += fmt::format("<circle class=\"marker\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"{} stroke=\"white\" "
                         "stroke-width=\"1\"><title>{}</title></circle>\n",
                         px(cx), px(cy), sized ? px(r) : std::string("4"), color, sized ? " fill-opacity=\"0.55\"" : "",
                         xml_escape(tip));
      state.taken.push_back({cx - r, cy - r, cx + r, cy + r});
      if (!p.label.empty() && s.draw_labels) state.pending.push_back({cx, cy, p.label, s.labels_below});
    }
  }
  return svg + "</g>\n";
}

/// Point labels go where they overlap no marker, line-end label or earlier label, trying the
/// four sides of the point in turn (text boxes are estimated from the character count). Later
/// series are drawn on top, so their labels are placed first.
void place_point_labels(const Layout& l, LabelState& state) {
  std::reverse(state.pending.begin(), state.pending.end());
  for (const auto& p : state.pending) {
    const double w = text_width(p.text);
    struct Spot {
      double x, y;
      bool start;
    };
    // Only the four places next to the point: a label further away reads as another point's.
    const double up = p.cy - 7, down = p.cy + 15;
    const Spot spots[] = {{p.cx + 7, p.below ? down : up, true}, {p.cx + 7, p.below ? up : down, true},
                          {p.cx - 7, p.below ? down : up, false}, {p.cx - 7, p.below ? up : down, false}};
    const Spot* chosen = nullptr;
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (const auto& sp : spots) {
      const Box b{sp.start ? sp.x : sp.x - w, sp.y - 10, sp.start ? sp.x + w : sp.x, sp.y + 2};
      if (b.x0 < l.left || b.x1 > l.right || b.y0 < l.top || b.y1 > l.bottom) continue;
      const auto hits = static_cast<std::size_t>(
          std::count_if(state.taken.begin(), state.taken.end(), [&](const Box& t) { return t.overlaps(b); }));
      if (hits < fewest) {
        fewest = hits;
        chosen = &sp;
      }
      if (hits == 0) break;
    }
    if (!chosen) chosen = &spots[p.cx > (l.left + l.right) / 2 ? 2 : 0];
    state.taken.push_back({chosen->start ? chosen->x : chosen->x - w, chosen->y - 10,
                           chosen->start ? chosen->x + w : chosen->x, chosen->y + 2});
    state.labels += fmt::format("<text class=\"point-label\" x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"11\">{}</text>\n",
                                px(chosen->x), px(chosen->y), chosen->start ? "start" : "end", xml_escape(p.text));
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
  std::string svg = svg_header(plot, l) + grid_and_axes(plot, l);
  LabelState labels;
  for (std::size_t si = 0; si < plot.series.size(); ++si) svg += series_svg(plot, si, l, labels);
  place_point_labels(l, labels);
  svg += "<g class=\"labels\">\n" + labels.labels + "</g>\n";
  if (l.legend) svg += legend_svg(plot, l);
  return svg + "</svg>\n";
}

}  // namespace ridge
