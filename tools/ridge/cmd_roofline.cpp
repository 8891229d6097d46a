// `ridge roofline`: the device's datasheet and measured ceilings side by side, the ridge point
// per dtype, and a log-log roofline plot with measured operations placed on it. Model-only for
// any catalog device (`--device h100-sxm`), with no GPU needed. The analysis is run_roofline
// (ridge/roofline.hpp); this file prints it.
#include <cmath>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/bandwidth.hpp"
#include "ridge/device.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/profile.hpp"
#include "ridge/matmul.hpp"
#include "ridge/result.hpp"
#include "ridge/roofline.hpp"
#include "ridge/timing.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/roofline.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

namespace {

/// `ridge roofline`'s options: the library's (ridge::RooflineOptions) plus where the plot goes.
struct RooflineCommandOptions {
  RooflineOptions roofline;
  std::string svg = "runs/roofline.svg";
};

std::string rate_or_dash(double v, bool bandwidth) {
  if (!(v > 0)) return "-";
  return bandwidth ? format_bytes_per_s(v) : format_flops(v);
}

void print_header(std::FILE* out, const RooflineAnalysis& a) {
  if (a.device) {
    const auto& d = *a.device;
    fmt::print(out, "device {}: {} ({} SMs, {} memory, {} L2)\n", d.index, d.name, d.sm_count,
               format_bytes(double(d.memory_bytes)), format_bytes(double(d.l2_bytes)));
    if (a.datasheet)
      fmt::print(out, "datasheet: {} [{}]\n  source: {}\n", a.datasheet->name, a.datasheet->key, a.datasheet->source);
    else
      fmt::print(out, "datasheet: none (this device is not in the catalog; add it with --catalog FILE). "
                      "Measured ceilings only.\n");
  } else {
    fmt::print(out, "device: {} [{}] (model only: datasheet figures, nothing measured)\n  source: {}\n",
               a.datasheet->name, a.datasheet->key, a.datasheet->source);
  }
  if (a.datasheet && !a.datasheet->notes.empty()) fmt::print(out, "  notes: {}\n", a.datasheet->notes);
}

// Model-only output has one column (the datasheet); measured output has three.
void print_ceilings(std::FILE* out, const RooflineAnalysis& a) {
  const bool measured = a.measured.has_value();
  auto row = [&](const std::string& what, const std::string& s, const std::string& m, const std::string& pct,
                 const std::string& note) {
    if (measured)
      fmt::print(out, "  {:<20} {:>16} {:>16} {:>9}  {}\n", what, s, m, pct, note);
    else
      fmt::print(out, "  {:<20} {:>16}  {}\n", what, s, note);
  };
  fmt::print(out, "\n");
  row("ceiling", "datasheet", "measured", "of sheet", "");
  for (const auto& c : a.ceilings)
    row(c.ceiling, rate_or_dash(c.datasheet, c.bandwidth), rate_or_dash(c.measured, c.bandwidth),
        format_percent(c.fraction_of_datasheet(), 0), c.note);
  if (measured) {
    const auto& m = *a.measured;
    row("empty kernel launch", "", fmt::format("{:.2f} us", m.ceilings.empty_launch_us), "",
        fmt::format("per launch, stream held by a spin kernel; {:.2f} us per CUDA-graph node", m.empty_launch_graph_us));
    for (const auto& n : m.notes) fmt::print(out, "  note: {}\n", n);
  }
}

void print_ridge_points(std::FILE* out, const RooflineAnalysis& a) {
  const bool sheet = a.datasheet.has_value(), meas = a.measured.has_value();
  fmt::print(out, "\nRidge points I* = peak / memory bandwidth (FLOP/byte): below it an operation is memory-bound.\n");
  fmt::print(out, "  {:<8} {:>10} {:>10}\n", "dtype", sheet ? "datasheet" : "", meas ? "measured" : "");
  for (const auto& p : a.ridge_points)
    fmt::print(out, "  {:<8} {:>10} {:>10}\n", dtype_title(p.dtype),
               p.datasheet > 0 ? fmt::format("{:.1f}", p.datasheet) : "-",
               p.measured > 0 ? fmt::format("{:.1f}", p.measured) : (meas ? "-" : ""));
}

void print_shapes(std::FILE* out, const RooflineAnalysis& a) {
  if (a.shapes.empty()) return;
  fmt::print(out, "\nShapes placed on the {} roofline, nothing run (A and B read once, C written once):\n", a.placed_on);
  for (const auto& p : a.shapes) fmt::print(out, "  {}\n", describe(p));
}

void print_placements(std::FILE* out, const RooflineAnalysis& a) {
  if (a.placements.empty()) return;
  fmt::print(out, "\nOperations on the {} roofline (attainable = min(roof, intensity x memory bandwidth)):\n",
             a.placed_on);
  fmt::print(out, "  {:<40} {:>11} {:>14} {:>14} {:>7}  {}\n", "operation", "FLOP/byte", "measured", "attainable",
             "of it", "bound");
  for (const auto& p : a.placements)
    fmt::print(out, "  {:<40} {:>11.3g} {:>14} {:>14} {:>7}  {}{}\n", p.operation.label.substr(0, 40),
               p.operation.intensity_flop_per_byte, format_flops(p.operation.flops_per_s),
               format_flops(p.attainable_flops_per_s), format_percent(p.efficiency, 0), to_string(p.bound),
               p.above_roof() ? "  (above the roof: check the measurement)" : "");
}

ResultSet run_roofline(const RooflineCommandOptions& o, std::FILE* out) {
  if (o.svg.empty()) throw UsageError("--svg needs a file name");
  const RooflineAnalysis a = run_roofline(o.roofline, [](const std::string& line) {
    if (line.empty())
      progress_done();
    else
      progress(line);
  });
  ResultSet set = new_result_set(a.device ? a.device->index : -1);
  if (set.context.device && a.datasheet) set.context.device->catalog_key = a.datasheet->key;

  print_header(out, a);
  print_ceilings(out, a);
  print_ridge_points(out, a);
  print_placements(out, a);
  print_shapes(out, a);

  for (const auto& w : a.warnings) fmt::print(out, "warning: {}\n", w);
  write_text(o.svg, render_svg(a.plot));
  fmt::print(out, "\nroofline plot: {}\n", o.svg);
  if (a.measured) {
    const auto& m = *a.measured;
    fmt::print(out, "ceilings {} {} ({}){}\n", m.from_cache ? "cached" : "measured now,", m.measured_at_utc,
               m.cache_file,
               m.from_cache ? "; --refresh measures again" : fmt::format(" in {:.1f} s", m.measure_seconds));
  }
  set.records = a.records;
  finish_result_set(set, a.device ? a.device->index : -1);
  return set;
}

struct RooflineCommand {
  RooflineCommandOptions options;
  ExportOptions exports;
};

RIDGE_REGISTER_COMMAND(Command{
    "roofline",
    "datasheet and measured ceilings, ridge points per dtype, and an SVG roofline with your results on it", 40,
    [](CLI::App& app) {
      auto c = std::make_shared<RooflineCommand>();
      auto& o = c->options.roofline;
      app.add_option("--device", o.device,
                     "GPU index to measure, or a catalog key for a model-only roofline with no GPU (e.g. h100-sxm, "
                     "h200-sxm, rtx-4090; see data/catalog.json)")
          ->default_val("0")
          ->type_name("N|KEY");
      app.add_flag("--refresh", o.refresh,
                   "measure the ceilings again instead of using the cache ($RIDGE_CACHE_DIR, $XDG_CACHE_HOME/ridge "
                   "or ~/.cache/ridge); a measurement takes seconds");
      app.add_option("--points", o.point_files,
                     "ridge result JSON files whose records with FLOPs and bytes are placed on the plot")
          ->type_name("FILE");
      app.add_option("--svg", c->options.svg, "where to write the roofline plot (SVG)")
          ->default_val("runs/roofline.svg")
          ->type_name("FILE");
      app.add_option("--catalog", o.catalog, "device catalog JSON to use instead of the built-in one")
          ->type_name("FILE");
      app.add_option("--matmul", o.matmul_shapes,
                     "GEMM shapes placed by shape alone, nothing run: M,N,K for [M,K] @ [K,N], several separated "
                     "by ';' (e.g. 16,4096,4096: a decode step's layer at batch 16)")
          ->type_name("M,N,K");
      app.add_option("--dtype", o.matmul_dtype, "dtype of the --matmul shapes: fp32, tf32, fp16, bf16, fp8")
          ->default_val(o.matmul_dtype);
      c->exports.add_to(app);
      return run_and_export(c, run_roofline);
    }});

}  // namespace
}  // namespace ridge::cli
