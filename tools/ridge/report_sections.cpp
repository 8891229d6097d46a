// The helpers report sections share (report_sections.hpp): records as Markdown, their warnings,
// rate-vs-size plots.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "report_sections.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

// One curve per kernel variant and dtype; the timing method may change along a sweep (graph
// replay for short ops, events for long ones) without splitting the curve.
std::string series_key(const Record& r) {
  std::string key = r.name;
  if (r.params.contains("variant") && r.params["variant"].is_string()) key += " " + r.params["variant"].get<std::string>();
  return key + (r.dtype.empty() ? "" : " " + r.dtype);
}

}  // namespace

std::string records_markdown(const std::vector<Record>& records) {
  std::string out =
      "| record | params | dtype | method | median | min | max | CV | GB/s | TFLOP/s | check |\n"
      "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& r : records) {
    const auto& s = r.summary;
    out += fmt::format("| {} | {} | {} | `{}` | {} | {} | {} | {:.1f}% | {} | {} | {} |\n", r.name,
                       params_text(r.params), r.dtype, r.method, format_ms(s.median), format_ms(s.min),
                       format_ms(s.max), s.cv * 100,
                       r.bytes > 0 ? fmt::format("{:.1f}", r.bytes_per_s() / 1e9) : "",
                       r.flops > 0 ? fmt::format("{:.2f}", r.flops_per_s() / 1e12) : "", r.verification);
  }
  return out + "\n";
}

std::string warnings_markdown(const std::vector<Record>& records) {
  std::string out;
  for (const auto& r : records)
    for (const auto& w : r.warnings)
      out += fmt::format("- **{} `{}`** ({}): {}\n", r.name, r.method, params_text(r.params), w);
  return out.empty() ? out : "Warnings:\n\n" + out + "\n";
}

ReportSvg rate_vs_size_svg(const std::string& file, const std::string& title, const std::vector<Record>& records,
                           const std::string& x_param, bool flops) {
  Plot plot;
  plot.title = title;
  plot.x_label = x_param;
  plot.y_label = flops ? "TFLOP/s" : "GB/s";
  std::map<std::string, std::size_t> index;
  for (const auto& r : records) {
    const double rate = flops ? r.flops_per_s() / 1e12 : r.bytes_per_s() / 1e9;
    if (rate <= 0 || !r.params.contains(x_param) || !r.params[x_param].is_number()) continue;
    const double x = r.params[x_param].get<double>();
    if (x <= 0) continue;
    const std::string key = series_key(r);
    if (!index.count(key)) {
      index[key] = plot.series.size();
      plot.series.push_back(PlotSeries{.name = key});
    }
    plot.series[index[key]].points.push_back({x, rate, ""});
  }
  for (auto& s : plot.series)
    std::sort(s.points.begin(), s.points.end(), [](const auto& a, const auto& b) { return a.x < b.x; });
  return ReportSvg{file, plot.series.empty() ? std::string() : render_svg(plot)};
}

}  // namespace ridge::cli
