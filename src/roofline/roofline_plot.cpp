// The one roofline plot builder: `ridge roofline`, the report's roofline sections and any user
// of the library draw their rooflines here.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "ridge/format.hpp"
#include "ridge/roofline.hpp"

namespace ridge {

namespace {

std::string roof_color(const std::string& dtype) {
  if (dtype == "fp64") return "#7f7f7f";
  if (dtype == "fp32") return "#2ca02c";
  if (dtype == "tf32") return "#9467bd";
  if (dtype == "fp16") return "#ff7f0e";
  if (dtype == "bf16") return "#d62728";
  if (dtype == "fp8_e4m3") return "#8c564b";
  return "#333333";
}

// A line without markers (a slope or a roof), appended to the plot.
PlotSeries& line_series(Plot& plot, const std::string& name, const std::string& color, bool dashed) {
  PlotSeries& s = plot.series.emplace_back();
  s.name = name;
  s.markers = false;
  s.dashed = dashed;
  s.color = color;
  return s;
}

// Markers without a line (ridge points, operations).
PlotSeries marker_series(const std::string& name, const std::string& color) {
  PlotSeries s;
  s.name = name;
  s.line = false;
  s.color = color;
  return s;
}

struct Roof {
  std::string dtype;
  double rate = 0;
};

// One flat roof per dtype. Roofs whose rates are within 8% share one end label (so the labels at
// the right edge stay legible) and one legend entry when they print the same rate.
void add_roofs(Plot& plot, const std::vector<Roof>& roofs, double bandwidth, const std::string& kind, double x_hi) {
  std::vector<std::string> labels(roofs.size()), legend_names(roofs.size());  // empty legend: folded
  std::vector<bool> labelled(roofs.size(), false);
  for (std::size_t i = 0; i < roofs.size(); ++i) {
    if (labelled[i]) continue;
    std::vector<std::size_t> group{i};
    for (std::size_t j = i + 1; j < roofs.size(); ++j)
      if (!labelled[j] && std::abs(std::log(roofs[j].rate / roofs[i].rate)) < std::log(1.08)) group.push_back(j);
    bool same_rate = true;
    for (auto j : group) {
      labelled[j] = true;
      same_rate = same_rate && format_flops(roofs[j].rate) == format_flops(roofs[i].rate);
    }
    std::string text;
    for (auto j : group) {
      if (!text.empty()) text += same_rate ? "/" : ", ";
      text += dtype_title(roofs[j].dtype);
      if (!same_rate) text += " " + format_flops(roofs[j].rate);
    }
    labels[i] = same_rate ? text + " " + format_flops(roofs[i].rate) : text;
    if (same_rate)
      legend_names[i] = fmt::format("{} {}", kind, labels[i]);
    else
      for (auto j : group)
        legend_names[j] = fmt::format("{} {} {}", kind, dtype_title(roofs[j].dtype), format_flops(roofs[j].rate));
    const double ridge = roofs[i].rate / bandwidth;
    if (ridge <= x_hi) labels[i] += fmt::format(", I*={:.3g}", ridge);
  }
  // A roof folded into another's legend entry takes that entry's colour: the lines coincide, and
  // the one drawn last (on top) must be the colour the legend shows.
  std::vector<std::string> colors(roofs.size());
  for (std::size_t i = 0; i < roofs.size(); ++i) {
    colors[i] = roof_color(roofs[i].dtype);
    if (legend_names[i].empty())
      for (std::size_t j = 0; j < i; ++j)
        if (!legend_names[j].empty() && format_flops(roofs[j].rate) == format_flops(roofs[i].rate)) colors[i] = colors[j];
  }
  for (std::size_t i = 0; i < roofs.size(); ++i) {
    const auto& [dtype, rate] = roofs[i];
    PlotSeries& s = line_series(plot, legend_names[i], colors[i], false);
    s.points = {{std::min(rate / bandwidth, x_hi), rate, ""}, {x_hi, rate, ""}};
    s.end_label = labels[i];
    s.in_legend = !legend_names[i].empty();
  }
}

// The operation's label, marked when it lies above its roof (impossible); a warning on the plot
// for that, and for an operation with no roof of its dtype in these ceilings.
std::string flag_operation(const DeviceCeilings& c, const RooflineOperation& op, Plot& plot) {
  const std::string name = op.label.empty() ? fmt::format("{} at {:.3g} FLOP/byte", op.dtype, op.intensity_flop_per_byte)
                                            : op.label;
  if (!(c.memory_bytes_per_s > 0)) return op.label;  // nothing to compare with, and the plot shows no slope
  if (!(c.peak_flops(op.dtype) > 0)) {
    plot.warnings.push_back(fmt::format("{}: {} has no {} roof; drawn, compared with nothing", name, c.source_text,
                                        op.dtype.empty() ? "dtype-less" : dtype_title(op.dtype)));
    return op.label;
  }
  const RooflinePlacement p = place_on_roofline(c, op);
  if (!p.above_roof()) return op.label;
  plot.warnings.push_back(fmt::format("{}: {} is {:.0f}% of the attainable {} ({} roof): above the roof, which is "
                                      "impossible; the measurement or the ceilings are wrong",
                                      name, format_flops(op.flops_per_s), 100 * p.efficiency,
                                      format_flops(p.attainable_flops_per_s), dtype_title(op.dtype)));
  return op.label.empty() ? "impossible: above the roof" : op.label + " (impossible: above the roof)";
}

/// Many points above the roof: one counted line instead of one per point (each point keeps
/// "(impossible: above the roof)" in its label and tooltip), so the one that differs stays visible.
void count_above_roof_warnings(Plot& plot, std::size_t first, std::size_t count) {
  std::vector<std::string> kept(plot.warnings.begin(), plot.warnings.begin() + std::ptrdiff_t(first));
  for (std::size_t i = first; i < plot.warnings.size(); ++i)
    if (plot.warnings[i].find("above the roof") == std::string::npos) kept.push_back(plot.warnings[i]);
  kept.push_back(fmt::format("{} points above the roof, which is impossible: the measurement or the ceilings are "
                             "wrong (each point's tooltip says by how much)",
                             count));
  plot.warnings = std::move(kept);
  for (auto& s : plot.series)
    for (auto& p : s.points) p.key = false;  // too many to name: the series' ends and highest point are labelled
}

}  // namespace

Plot roofline_plot(const DeviceCeilings& ceilings, const std::vector<RooflineOperation>& operations,
                   const RooflinePlotOptions& options) {
  Plot plot;
  plot.title = options.title;
  plot.x_label = "arithmetic intensity (FLOP/byte)";
  plot.y_label = "attainable rate (FLOP/s)";
  plot.width = options.width;
  plot.height = options.height;
  const std::string kind = to_string(ceilings.source);
  const std::vector<std::string>& dtypes = options.dtypes.empty() ? ceiling_dtypes() : options.dtypes;

  double x_lo = options.x_min > 0 ? options.x_min : 0.01, x_hi = options.x_max > 0 ? options.x_max : 1e4;
  for (const auto& op : operations) {
    op.validate();  // NaN, negative or zero: refused, never dropped unseen
    if (options.x_min <= 0) x_lo = std::min(x_lo, std::pow(10.0, std::floor(std::log10(op.intensity_flop_per_byte))));
    if (options.x_max <= 0) x_hi = std::max(x_hi, std::pow(10.0, std::ceil(std::log10(op.intensity_flop_per_byte))));
  }
  plot.x_min = x_lo;
  plot.x_max = x_hi;

  std::vector<Roof> roofs;
  for (const auto& d : dtypes)
    if (double r = ceilings.peak_flops(d); r > 0) roofs.push_back({d, r});
  double top = 0;
  for (const auto& roof : roofs) top = std::max(top, roof.rate);
  if (options.overlay)
    for (const auto& d : dtypes) top = std::max(top, options.overlay->peak_flops(d));

  auto slope = [&](const std::string& name, double bw, const std::string& color, bool dashed) {
    if (!(bw > 0) || !(top > 0)) return;
    PlotSeries& s = line_series(plot, name, color, dashed);
    s.points = {{x_lo, x_lo * bw, ""}, {top / bw, top, ""}};
    if (top / bw > x_hi) s.points.back() = {x_hi, x_hi * bw, ""};
  };
  const double bw = ceilings.memory_bytes_per_s;
  slope(fmt::format("{} memory {}", kind, format_bytes_per_s(bw)), bw, "#1f77b4", false);
  if (ceilings.l2_bytes_per_s > 0)
    slope(fmt::format("{} L2 {}", kind, format_bytes_per_s(ceilings.l2_bytes_per_s)), ceilings.l2_bytes_per_s,
          "#17becf", true);
  if (bw > 0) add_roofs(plot, roofs, bw, kind, x_hi);

  if (options.overlay) {
    const DeviceCeilings& o = *options.overlay;
    const std::string overlay_kind = to_string(o.source);
    slope(fmt::format("{} memory {}", overlay_kind, format_bytes_per_s(o.memory_bytes_per_s)), o.memory_bytes_per_s,
          "#9a9a9a", true);
    // The roofs asked for, else the highest 16-bit roof, for scale.
    std::vector<std::string> overlay_roofs = options.overlay_dtypes;
    if (overlay_roofs.empty())
      for (const char* d : {"bf16", "fp16"})
        if (o.peak_flops(d) > 0) {
          overlay_roofs = {d};
          break;
        }
    for (const auto& d : overlay_roofs)
      if (double r = o.peak_flops(d); r > 0 && o.memory_bytes_per_s > 0)
        line_series(plot, fmt::format("{} {} {}", overlay_kind, dtype_title(d), format_flops(r)), "#9a9a9a", true)
            .points = {{std::min(r / o.memory_bytes_per_s, x_hi), r, ""}, {x_hi, r, ""}};
  }

  // Ridge points: where each roof meets the memory slope (one marker per distinct intensity).
  // The roof labels carry I*; the markers' tooltips too.
  PlotSeries knees = marker_series("ridge points I* (FLOP/byte)", "#444444");
  knees.draw_labels = false;
  for (const auto& [dtype, rate] : roofs) {
    if (!(bw > 0)) break;
    const double x = rate / bw;
    if (x > x_hi || x < x_lo) continue;
    bool seen = false;
    for (const auto& k : knees.points) seen = seen || std::abs(std::log(k.x / x)) < 0.01;
    if (!seen) knees.points.push_back({x, rate, fmt::format("ridge point I* = {:.3g} FLOP/byte", x)});
  }
  if (!knees.points.empty()) plot.series.push_back(knees);

  // Operations: one series per name, in the order they first appear.
  std::map<std::string, std::size_t> index;
  const std::size_t warnings_before = plot.warnings.size();
  std::size_t above_roof = 0;
  for (const auto& op : operations) {
    const std::string name = op.series.empty() ? options.operations_name : op.series;
    if (!index.count(name)) {
      index[name] = plot.series.size();
      plot.series.push_back(marker_series(name, op.series.empty() ? "#111111" : ""));
    }
    const std::size_t warnings = plot.warnings.size();
    const std::string label = flag_operation(ceilings, op, plot);
    const bool impossible = label != op.label;
    above_roof += impossible ? 1 : 0;
    // An impossible point is named by a finding: it is labelled first.
    plot.series[index[name]].points.push_back(
        {op.intensity_flop_per_byte, op.flops_per_s, label, op.marker_area, impossible && warnings < plot.warnings.size()});
  }
  if (above_roof > 2) count_above_roof_warnings(plot, warnings_before, above_roof);
  return plot;
}

}  // namespace ridge
