// TEMPORARY stand-ins for modules other helpers are writing (catalog, plot, measured ceilings), so
// the report branch builds and its tests run on its own. Deleted before the branch is merged.
#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/errors.hpp"
#include "ridge/plot.hpp"

namespace ridge {

std::optional<double> CatalogEntry::peak(DType dtype) const {
  auto it = peak_flops.find(to_string(dtype));
  if (it == peak_flops.end()) return std::nullopt;
  return it->second;
}

const std::vector<CatalogEntry>& catalog() {
  static const std::vector<CatalogEntry> entries{
      {"h100-sxm", "NVIDIA H100 SXM", {"H100 80GB HBM3", "H100 SXM"}, 132, 80e9, 3.35e12, 50e6,
       {{"fp64", 67e12}, {"fp32", 67e12}, {"tf32", 494.7e12}, {"fp16", 989.4e12}, {"bf16", 989.4e12}, {"fp8_e4m3", 1978.9e12}},
       {}, "", "stub"},
      {"h200-sxm", "NVIDIA H200 SXM", {"H200"}, 132, 141e9, 4.8e12, 50e6,
       {{"fp64", 67e12}, {"fp32", 67e12}, {"tf32", 494.7e12}, {"fp16", 989.4e12}, {"bf16", 989.4e12}, {"fp8_e4m3", 1978.9e12}},
       {}, "", "stub"},
  };
  return entries;
}

const CatalogEntry& catalog_entry(const std::string& key) {
  for (const auto& e : catalog())
    if (e.key == key) return e;
  throw UsageError(fmt::format("unknown catalog device '{}': known: h100-sxm, h200-sxm", key));
}

std::optional<CatalogEntry> match_device(const DeviceDescription& device) {
  for (const auto& e : catalog())
    for (const auto& n : e.match_names)
      if (device.name.find(n) != std::string::npos) return e;
  return std::nullopt;
}

MeasuredCeilings measured_ceilings(int, bool) { throw Error("measured ceilings are not in this build yet"); }

std::string render_svg(const Plot& plot) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto& s : plot.series)
    for (const auto& p : s.points) {
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
    }
  if (x0 > x1) throw UsageError("plot has no points");
  if (plot.x_min > 0) x0 = plot.x_min;
  if (plot.x_max > 0) x1 = plot.x_max;
  if (plot.y_min > 0) y0 = plot.y_min;
  if (plot.y_max > 0) y1 = plot.y_max;
  auto tx = [&](double v) { return plot.log_x ? std::log10(v) : v; };
  auto ty = [&](double v) { return plot.log_y ? std::log10(v) : v; };
  double ax0 = tx(x0), ax1 = tx(x1), ay0 = ty(y0), ay1 = ty(y1);
  if (plot.log_x) ax0 = std::floor(ax0), ax1 = std::ceil(ax1);
  if (plot.log_y) ay0 = std::floor(ay0), ay1 = std::ceil(ay1);
  if (ax1 <= ax0) ax1 = ax0 + 1;
  if (ay1 <= ay0) ay1 = ay0 + 1;
  const double L = 70, R = plot.width - 20, T = 40, B = plot.height - 130;
  auto px = [&](double v) { return L + (tx(v) - ax0) / (ax1 - ax0) * (R - L); };
  auto py = [&](double v) { return B - (ty(v) - ay0) / (ay1 - ay0) * (B - T); };
  std::ostringstream o;
  o << fmt::format(R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif" font-size="12">)svg",
                   plot.width, plot.height);
  o << fmt::format(R"svg(<rect width="{}" height="{}" fill="white"/><text x="{}" y="24" font-size="15" text-anchor="middle">{}</text>)svg",
                   plot.width, plot.height, plot.width / 2, plot.title);
  for (int k = int(ax0); k <= int(ax1); ++k) {
    const double v = plot.log_x ? std::pow(10, k) : k;
    o << fmt::format(R"svg(<line x1="{0}" x2="{0}" y1="{1}" y2="{2}" stroke="#ddd"/><text x="{0}" y="{3}" text-anchor="middle">{4:g}</text>)svg",
                     px(v), T, B, B + 16, v);
  }
  const int ysteps = plot.log_y ? int(ay1 - ay0) : 5;
  for (int k = 0; k <= ysteps; ++k) {
    const double a = ay0 + (ay1 - ay0) * k / ysteps;
    const double v = plot.log_y ? std::pow(10, a) : a;
    o << fmt::format(R"svg(<line x1="{0}" x2="{1}" y1="{2}" y2="{2}" stroke="#ddd"/><text x="{3}" y="{4}" text-anchor="end">{5:g}</text>)svg",
                     L, R, py(v), L - 6, py(v) + 4, v);
  }
  o << fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)svg", L, T, R - L, B - T);
  o << fmt::format(R"svg(<text x="{}" y="{}" text-anchor="middle">{}</text>)svg", (L + R) / 2, B + 34, plot.x_label);
  o << fmt::format(R"svg(<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>)svg", (T + B) / 2, plot.y_label);
  static const char* palette[] = {"#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#be185d"};
  int i = 0;
  for (const auto& s : plot.series) {
    const std::string color = s.color.empty() ? std::string(palette[i % 7]) : s.color;
    if (s.line) {
      o << R"svg(<polyline fill="none" stroke=")svg" << color << R"svg(" stroke-width="2")svg" << (s.dashed ? R"svg( stroke-dasharray="6 4")svg" : "") << " points=\"";
      for (const auto& p : s.points) o << fmt::format("{:.1f},{:.1f} ", px(p.x), py(p.y));
      o << "\"/>";
    }
    for (const auto& p : s.points) {
      if (s.markers) o << fmt::format(R"svg(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"/>)svg", px(p.x), py(p.y), color);
      if (!p.label.empty()) o << fmt::format(R"svg(<text x="{:.1f}" y="{:.1f}">{}</text>)svg", px(p.x) + 6, py(p.y) - 6, p.label);
    }
    const double ly = B + 56 + 16 * (i / 2), lx = L + (i % 2) * (R - L) / 2;
    o << fmt::format(R"svg(<rect x="{}" y="{}" width="14" height="4" fill="{}"/><text x="{}" y="{}">{}</text>)svg", lx, ly - 4, color, lx + 20, ly, s.name);
    ++i;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace ridge
