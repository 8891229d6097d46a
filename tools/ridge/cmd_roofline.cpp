// `ridge roofline`: the device's datasheet and measured ceilings side by side, the ridge point
// per dtype, and a log-log roofline plot with measured operations placed on it. Model-only for
// any catalog device (`--device h100-sxm`), with no GPU needed.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/roofline.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

const char* const dtype_order[] = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3"};

std::string dtype_title(const std::string& dtype) {
  if (dtype == "fp8_e4m3") return "FP8";
  std::string s = dtype;
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string roof_color(const std::string& dtype) {
  if (dtype == "fp64") return "#7f7f7f";
  if (dtype == "fp32") return "#2ca02c";
  if (dtype == "tf32") return "#9467bd";
  if (dtype == "fp16") return "#ff7f0e";
  if (dtype == "bf16") return "#d62728";
  if (dtype == "fp8_e4m3") return "#8c564b";
  return "#333333";
}

/// One set of ceilings: the datasheet's or the measured ones.
struct Ceiling {
  double hbm = 0, l2 = 0;                 // bytes/s; 0 = unknown
  std::map<std::string, double> roofs;    // dtype -> FLOP/s
  double roof(const std::string& dtype) const {
    auto it = roofs.find(dtype);
    return it == roofs.end() ? 0 : it->second;
  }
};

Ceiling datasheet_ceiling(const CatalogEntry& e) {
  Ceiling c;
  c.hbm = e.bandwidth_bytes_per_s;
  for (const char* d : dtype_order)
    if (auto it = e.peak_flops.find(d); it != e.peak_flops.end()) c.roofs[d] = it->second;
  return c;
}

Ceiling measured_ceiling(const MeasuredCeilings& m) {
  Ceiling c;
  c.hbm = m.hbm_bytes_per_s;
  c.l2 = m.l2_bytes_per_s;
  if (m.fp32_flops_per_s > 0) c.roofs["fp32"] = m.fp32_flops_per_s;
  for (const auto& [dtype, rate] : m.tensor_flops_per_s)
    if (rate > 0) c.roofs[dtype] = rate;
  return c;
}

std::string percent(double part, double whole) {
  return part > 0 && whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : "";
}

std::string flops_or_dash(double v) { return v > 0 ? format_flops(v) : "-"; }
std::string bw_or_dash(double v) { return v > 0 ? format_bytes_per_s(v) : "-"; }

/// A measured operation placed on the roofline.
struct Point {
  std::string label, dtype, file;
  double intensity = 0, flops_per_s = 0;
};

std::string point_label(const Record& r) {
  std::string shape;
  const auto& p = r.params;
  if (p.contains("m") && p.contains("n") && p.contains("k") && p["m"].is_number() && p["n"].is_number() &&
      p["k"].is_number()) {
    if (p["m"] == p["n"] && p["n"] == p["k"])
      shape = fmt::format(" n={}", p["n"].dump());
    else
      shape = fmt::format(" {}x{}x{}", p["m"].dump(), p["n"].dump(), p["k"].dump());
  } else if (p.contains("n") && p["n"].is_number()) {
    shape = fmt::format(" n={}", p["n"].dump());
  } else if (p.contains("elements") && p["elements"].is_number_integer()) {
    const auto n = p["elements"].get<std::int64_t>();
    const bool power_of_two = n >= 1024 && (n & (n - 1)) == 0;
    shape = power_of_two ? fmt::format(" 2^{} elements", std::countr_zero(static_cast<std::uint64_t>(n)))
                         : fmt::format(" {} elements", n);
  }
  return r.name + (r.dtype.empty() ? "" : " " + r.dtype) + shape;
}

std::vector<Point> load_points(const std::vector<std::string>& files) {
  std::vector<Point> out;
  for (const auto& f : files) {
    const ResultSet set = load_result_file(f);
    for (const auto& r : set.records)
      if (r.flops > 0 && r.bytes > 0 && r.summary.median > 0)
        out.push_back({point_label(r), r.dtype, f, r.intensity_flop_per_byte(), r.flops_per_s()});
  }
  return out;
}

/// The roof a point's dtype runs under (its own, else FP32's, else the highest one known).
double roof_for(const Ceiling& c, const std::string& dtype) {
  if (double r = c.roof(dtype); r > 0) return r;
  if (dtype == "fp8") return c.roof("fp8_e4m3");
  if (double r = c.roof("fp32"); r > 0) return r;
  double best = 0;
  for (const auto& [d, r] : c.roofs) best = std::max(best, r);
  return best;
}

/// The log-log roofline: memory slopes up to the highest roof, one flat roof per dtype from its
/// own ridge point, and the points.
Plot roofline_plot(const std::string& title, const Ceiling& main, const std::string& main_kind,
                   const std::optional<Ceiling>& datasheet_overlay, const std::vector<Point>& points) {
  Plot plot;
  plot.title = title;
  plot.x_label = "arithmetic intensity (FLOP/byte)";
  plot.y_label = "attainable rate (FLOP/s)";
  plot.width = 900;
  plot.height = 560;

  double x_lo = 0.01, x_hi = 1e4;
  for (const auto& p : points) {
    x_lo = std::min(x_lo, std::pow(10.0, std::floor(std::log10(p.intensity))));
    x_hi = std::max(x_hi, std::pow(10.0, std::ceil(std::log10(p.intensity))));
  }
  plot.x_min = x_lo;
  plot.x_max = x_hi;
  double top = 0;
  for (const auto& [d, r] : main.roofs) top = std::max(top, r);
  if (datasheet_overlay)
    for (const auto& [d, r] : datasheet_overlay->roofs) top = std::max(top, r);

  auto slope = [&](const std::string& name, double bw, const std::string& color, bool dashed) {
    PlotSeries s{name, {{x_lo, x_lo * bw}, {top / bw, top}}, true, false, dashed, color};
    if (top / bw > x_hi) s.points.back() = {x_hi, x_hi * bw};
    plot.series.push_back(s);
  };
  slope(fmt::format("{} memory {}", main_kind, format_bytes_per_s(main.hbm)), main.hbm, "#1f77b4", false);
  if (main.l2 > 0) slope(fmt::format("{} L2 {}", main_kind, format_bytes_per_s(main.l2)), main.l2, "#17becf", true);

  // Roofs whose rates are within 8% share one label, so the labels at the right edge stay legible.
  std::vector<std::pair<std::string, double>> roofs;
  for (const char* d : dtype_order)
    if (double r = main.roof(d); r > 0) roofs.emplace_back(d, r);
  std::vector<std::string> labels(roofs.size());
  std::vector<std::string> legend_names(roofs.size());  // empty: folded into an earlier entry
  std::vector<bool> labelled(roofs.size(), false);
  for (std::size_t i = 0; i < roofs.size(); ++i) {
    if (labelled[i]) continue;
    std::vector<std::size_t> group{i};
    for (std::size_t j = i + 1; j < roofs.size(); ++j)
      if (!labelled[j] && std::abs(std::log(roofs[j].second / roofs[i].second)) < std::log(1.08)) group.push_back(j);
    bool same_rate = true;
    for (auto j : group) {
      labelled[j] = true;
      same_rate = same_rate && format_flops(roofs[j].second) == format_flops(roofs[i].second);
    }
    std::string text;
    for (auto j : group) {
      if (!text.empty()) text += same_rate ? "/" : ", ";
      text += dtype_title(roofs[j].first);
      if (!same_rate) text += " " + format_flops(roofs[j].second);
    }
    labels[i] = same_rate ? text + " " + format_flops(roofs[i].second) : text;
    const double ridge = roofs[i].second / main.hbm;
    const std::string ridge_text = fmt::format(", I*={:.3g}", ridge);
    if (same_rate) {
      legend_names[i] = fmt::format("{} {}", main_kind, labels[i]);
    } else {
      for (auto j : group)
        legend_names[j] =
            fmt::format("{} {} {}", main_kind, dtype_title(roofs[j].first), format_flops(roofs[j].second));
    }
    if (ridge <= x_hi) labels[i] += ridge_text;
  }
  for (std::size_t i = 0; i < roofs.size(); ++i) {
    const auto& [dtype, rate] = roofs[i];
    PlotSeries s{legend_names[i], {{std::min(rate / main.hbm, x_hi), rate}, {x_hi, rate}}, true, false, false,
                 roof_color(dtype)};
    s.in_legend = !legend_names[i].empty();
    s.end_label = labels[i];
    plot.series.push_back(s);
  }
  if (datasheet_overlay) {
    const auto& d = *datasheet_overlay;
    if (d.hbm > 0) slope(fmt::format("datasheet memory {}", format_bytes_per_s(d.hbm)), d.hbm, "#9a9a9a", true);
    // The datasheet's highest 16-bit roof, for scale.
    for (const char* dt : {"bf16", "fp16"})
      if (double r = d.roof(dt); r > 0 && d.hbm > 0) {
        PlotSeries s{fmt::format("datasheet {} {}", dtype_title(dt), format_flops(r)),
                     {{std::min(r / d.hbm, x_hi), r}, {x_hi, r}}, true, false, true, "#9a9a9a"};
        plot.series.push_back(s);
        break;
      }
  }
  // Ridge points: where each roof meets the memory slope (one marker per distinct intensity).
  PlotSeries knees{"ridge points I* (FLOP/byte)", {}, false, true, false, "#444444"};
  knees.draw_labels = false;  // the roof labels carry I*; the markers' tooltips too
  for (const auto& [dtype, rate] : roofs) {
    const double x = rate / main.hbm;
    if (x > x_hi || x < x_lo) continue;
    bool seen = false;
    for (const auto& k : knees.points) seen = seen || std::abs(std::log(k.x / x)) < 0.01;
    if (!seen) knees.points.push_back({x, rate, fmt::format("ridge point I* = {:.3g} FLOP/byte", x)});
  }
  if (!knees.points.empty()) plot.series.push_back(knees);
  if (!points.empty()) {
    PlotSeries s{"measured operations", {}, false, true, false, "#111111"};
    for (const auto& p : points) s.points.push_back({p.intensity, p.flops_per_s, p.label});
    plot.series.push_back(s);
  }
  return plot;
}

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

void print_points(std::FILE* out, const std::vector<Point>& points, const Ceiling& c, const std::string& kind) {
  if (points.empty()) return;
  fmt::print(out, "\nOperations on the {} roofline (attainable = min(roof, intensity x memory bandwidth)):\n", kind);
  fmt::print(out, "  {:<40} {:>11} {:>14} {:>14} {:>7}  {}\n", "operation", "FLOP/byte", "measured", "attainable",
             "of it", "bound");
  for (const auto& p : points) {
    const double roof = roof_for(c, p.dtype);
    if (!(roof > 0) || !(c.hbm > 0)) continue;
    const double attainable = attainable_flops(p.intensity, roof, c.hbm);
    const double eff = roofline_efficiency(p.flops_per_s, p.intensity, roof, c.hbm);
    fmt::print(out, "  {:<40} {:>11.3g} {:>14} {:>14} {:>6.0f}%  {}{}\n", p.label.substr(0, 40), p.intensity,
               format_flops(p.flops_per_s), format_flops(attainable), eff * 100,
               to_string(classify(p.intensity, roof, c.hbm)),
               eff > 1.05 ? "  (above the roof: check the measurement)" : "");
  }
}

}  // namespace

ResultSet run_roofline(const RooflineOptions& o, std::FILE* out) {
  if (!o.catalog.empty()) load_catalog_file(o.catalog);
  const bool model_only = !is_index(o.device);
  if (model_only && o.refresh)
    throw UsageError(fmt::format("--refresh re-measures a GPU; '{}' is a catalog device (model only). "
                                 "Give a GPU index (--device 0) to measure",
                                 o.device));
  if (o.svg.empty()) throw UsageError("--svg needs a file name");
  // Points are read first: a bad file is a usage error before any GPU work.
  const std::vector<Point> points = load_points(o.points);

  std::optional<CatalogEntry> entry;
  std::optional<MeasuredCeilings> measured;
  int index = -1;
  if (model_only) {
    entry = catalog_entry(o.device);
  } else {
    if (o.device.size() > 4) throw UsageError(fmt::format("--device {}: no such GPU index", o.device));
    index = std::stoi(o.device);
    require_gpu(index);
  }
  ResultSet set = new_result_set(index);
  std::string title;
  if (!model_only) {
    auto& d = *set.context.device;
    entry = match_device(d);
    if (entry) d.catalog_key = entry->key;
    progress(o.refresh ? "roofline: measuring ceilings" : "roofline: ceilings (cached or measured)");
    measured = measured_ceilings(index, o.refresh);
    progress_done();
    fmt::print(out, "device {}: {} ({} SMs, {} memory, {} L2)\n", d.index, d.name, d.sm_count,
               format_bytes(double(d.memory_bytes)), format_bytes(double(d.l2_bytes)));
    if (entry)
      fmt::print(out, "datasheet: {} [{}]\n  source: {}\n", entry->name, entry->key, entry->source);
    else
      fmt::print(out, "datasheet: none (this device is not in the catalog; add it with --catalog FILE). "
                      "Measured ceilings only.\n");
    title = fmt::format("Roofline: {} (measured{})", d.name, entry ? ", datasheet dashed" : "");
  } else {
    fmt::print(out, "device: {} [{}] (model only: datasheet figures, nothing measured)\n  source: {}\n", entry->name,
               entry->key, entry->source);
    title = fmt::format("Roofline: {} (datasheet)", entry->name);
  }
  if (entry && !entry->notes.empty()) fmt::print(out, "  notes: {}\n", entry->notes);

  const std::optional<Ceiling> sheet = entry ? std::optional<Ceiling>(datasheet_ceiling(*entry)) : std::nullopt;
  const std::optional<Ceiling> meas = measured ? std::optional<Ceiling>(measured_ceiling(*measured)) : std::nullopt;

  // --- the ceilings table ----------------------------------------------------------------------
  // Model-only output has one column (the datasheet); measured output has three.
  auto row = [&](const std::string& what, const std::string& s, const std::string& m, const std::string& pct,
                 const std::string& note) {
    if (meas)
      fmt::print(out, "  {:<20} {:>16} {:>16} {:>9}  {}\n", what, s, m, pct, note);
    else
      fmt::print(out, "  {:<20} {:>16}  {}\n", what, s, note);
  };
  fmt::print(out, "\n");
  row("ceiling", "datasheet", "measured", "of sheet", "");
  auto bw_row = [&](const char* what, double s, double m, const std::string& note) {
    row(what, bw_or_dash(s), bw_or_dash(m), percent(m, s), note);
  };
  bw_row("memory bandwidth", sheet ? sheet->hbm : 0, meas ? meas->hbm : 0,
         measured ? fmt::format("best of copy/read/triad: {}, bytes = reads + writes", measured->hbm_kernel) : "");
  if (meas) bw_row("L2 bandwidth", 0, meas->l2, "working set about 1/4 of the L2");
  for (const char* d : dtype_order) {
    const double s = sheet ? sheet->roof(d) : 0, m = meas ? meas->roof(d) : 0;
    if (s <= 0 && m <= 0) continue;
    std::string note;
    if (measured && std::string(d) == "fp32" && measured->fp32_observed_sm_mhz > 0 && measured->max_sm_clock_mhz > 0 && s > 0) {
      const double at_clock = s * measured->fp32_observed_sm_mhz / measured->max_sm_clock_mhz;
      note = fmt::format("FMA chains; SM clock {:.0f} of {:.0f} MHz: {:.0f}% of the datasheet at that clock",
                         measured->fp32_observed_sm_mhz, measured->max_sm_clock_mhz, 100 * m / at_clock);
    } else if (measured && std::string(d) != "fp32" && std::string(d) != "fp64" && m > 0) {
      note = "cuBLASLt GEMM 8192^3";
    } else if (measured && m <= 0 && std::string(d) != "fp64") {
      note = "not measured";
    }
    row(fmt::format("{} peak", dtype_title(d)), flops_or_dash(s), flops_or_dash(m), percent(m, s), note);
  }
  if (measured) {
    row("empty kernel launch", "", fmt::format("{:.2f} us", measured->empty_launch_us), "",
        fmt::format("per launch, stream held by a spin kernel; {:.2f} us per CUDA-graph node",
                    measured->empty_launch_graph_us));
    for (const auto& n : measured->notes) fmt::print(out, "  note: {}\n", n);
  }

  // --- ridge points ----------------------------------------------------------------------------
  fmt::print(out, "\nRidge points I* = peak / memory bandwidth (FLOP/byte): below it an operation is memory-bound.\n");
  fmt::print(out, "  {:<8} {:>10} {:>10}\n", "dtype", sheet ? "datasheet" : "", meas ? "measured" : "");
  for (const char* d : dtype_order) {
    const double s = sheet && sheet->roof(d) > 0 ? ridge_point(sheet->roof(d), sheet->hbm) : 0;
    const double m = meas && meas->roof(d) > 0 && meas->hbm > 0 ? ridge_point(meas->roof(d), meas->hbm) : 0;
    if (s <= 0 && m <= 0) continue;
    fmt::print(out, "  {:<8} {:>10} {:>10}\n", dtype_title(d), s > 0 ? fmt::format("{:.1f}", s) : "-",
               m > 0 ? fmt::format("{:.1f}", m) : (meas ? "-" : ""));
  }

  const Ceiling& main = meas ? *meas : *sheet;
  print_points(out, points, main, meas ? "measured" : "datasheet");

  // --- the plot --------------------------------------------------------------------------------
  const Plot plot = roofline_plot(title, main, meas ? "measured" : "datasheet", meas ? sheet : std::nullopt, points);
  write_text(o.svg, render_svg(plot));
  fmt::print(out, "\nroofline plot: {}\n", o.svg);
  if (measured)
    fmt::print(out, "ceilings {} {} ({}){}\n", measured->from_cache ? "cached" : "measured now,",
               measured->measured_at_utc, measured->cache_file,
               measured->from_cache ? "; --refresh measures again"
                                    : fmt::format(" in {:.1f} s", measured->measure_seconds));

  if (measured) {
    for (Record r : measured->records) {
      if (sheet) {
        if (r.name.rfind("ceiling.hbm.", 0) == 0) r.extra["datasheet_bytes_per_s"] = sheet->hbm;
        if (r.name == "ceiling.fp32_fma" || r.name == "ceiling.tensor")
          if (double s = sheet->roof(r.dtype); s > 0) r.extra["datasheet_flops_per_s"] = s;
      }
      set.records.push_back(r);
    }
  }
  finish_result_set(set, index);
  return set;
}

namespace {

struct RooflineCommand {
  RooflineOptions options;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "roofline",
    "datasheet and measured ceilings, ridge points per dtype, and an SVG roofline with your results on it", 40,
    [](CLI::App& app) {
      auto c = std::make_shared<RooflineCommand>();
      auto& o = c->options;
      app.add_option("--device", o.device,
                     "GPU index to measure, or a catalog key for a model-only roofline with no GPU (e.g. h100-sxm, "
                     "h200-sxm, rtx-4090; see data/catalog.json)")
          ->default_val("0")
          ->type_name("N|KEY");
      app.add_flag("--refresh", o.refresh,
                   "measure the ceilings again instead of using the cache ($RIDGE_CACHE_DIR or ~/.cache/ridge); "
                   "a measurement takes seconds");
      app.add_option("--points", o.points,
                     "ridge result JSON files whose records with FLOPs and bytes are placed on the plot")
          ->type_name("FILE");
      app.add_option("--svg", o.svg, "where to write the roofline plot (SVG)")
          ->default_val("runs/roofline.svg")
          ->type_name("FILE");
      app.add_option("--catalog", o.catalog, "device catalog JSON to use instead of the built-in one")
          ->type_name("FILE");
      c->exports.add_to(app);
      return run_and_export(c, run_roofline);
    }});

}  // namespace
}  // namespace ridge::cli
