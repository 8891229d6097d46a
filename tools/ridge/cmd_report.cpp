// `ridge report`: the main job. Runs the registered report sections (report_sections.hpp) in order
// on one GPU, or the model-only ones without a GPU, and writes one folder: report.md, report.html
// (self-contained), the SVG plots, results.json and trace.json (when a profile section ran).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "report_sections.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/report.hpp"
#include "ridge/tracer.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

// ---- section registry and shared helpers -------------------------------------------------------

std::vector<ReportSection>& report_sections() {
  static std::vector<ReportSection> all;
  return all;
}

bool register_report_section(ReportSection section) {
  report_sections().push_back(std::move(section));
  return true;
}

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

void use_datasheet_ceilings(ReportContext& ctx, const CatalogEntry& entry) {
  ctx.bandwidth_bytes_per_s = entry.bandwidth_bytes_per_s;
  ctx.peak_flops = entry.peak_flops;
  ctx.ceilings_source = "datasheet of " + entry.name;
  if (ctx.memory_bytes <= 0) ctx.memory_bytes = entry.memory_bytes;
}

// ---- the command -------------------------------------------------------------------------------

namespace {

struct ReportCommand {
  int device = 0;
  std::string out_dir;
  bool quick = false;
  bool verbose = false;
  std::string model = "h100-sxm";
  std::vector<std::string> predict;
  double inject_slowdown_us = 0;  ///< testing aid for `ridge compare` (see ReportContext)
};

std::string default_folder() {
  std::string ts = utc_timestamp_now();
  for (auto& c : ts)
    if (c == ':') c = '-';
  std::string folder = "runs/report-" + ts;
  for (int i = 2; std::filesystem::exists(folder); ++i) folder = fmt::format("runs/report-{}-{}", ts, i);
  return folder;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct NullFile {
  std::FILE* f = std::fopen("/dev/null", "w");
  ~NullFile() {
    if (f) std::fclose(f);
  }
};

int run_report(const ReportCommand& c) {
  const auto t0 = std::chrono::steady_clock::now();
  // Everything a user can get wrong is checked before any work starts.
  nlohmann::json predictions = nlohmann::json::object();
  for (const auto& p : c.predict) {
    const auto [key, value] = parse_prediction(p);
    predictions[key] = value;
  }
  const int count = device_count();
  const bool gpu = count > 0;
  // The profile section traces NVTX ranges; earlier sections already call NVTX, so route it to
  // CUPTI before the first call initialises it.
  if (gpu) enable_nvtx_capture();
  if (gpu && c.device >= count)
    throw UsageError(fmt::format("--device {}: this machine has {} usable GPU(s), numbered from 0", c.device, count));
  const CatalogEntry& model = catalog_entry(c.model);  // throws UsageError listing the known keys
  for (const auto& p : predictions.items()) {
    const auto& keys = prediction_keys();
    if (std::none_of(keys.begin(), keys.end(), [&](const auto& k) { return k.key == p.key(); }))
      fmt::print(stderr, "ridge report: note: '{}' is not a key ridge measures; it will be listed as not measured\n",
                 p.key());
  }

  const std::filesystem::path folder = c.out_dir.empty() ? default_folder() : c.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw Error(fmt::format("cannot create the report folder {}: {}", folder.string(), ec.message()));

  ResultSet all = new_result_set(gpu ? c.device : -1);
  all.context.predictions = predictions;
  NullFile null_file;
  ReportContext ctx;
  ctx.device = c.device;
  ctx.gpu = gpu;
  ctx.quick = c.quick;
  ctx.inject_slowdown_us = c.inject_slowdown_us;
  ctx.folder = folder;
  ctx.log = c.verbose || !null_file.f ? stderr : null_file.f;
  ctx.results = &all;
  if (gpu) {
    ctx.memory_bytes = double(all.context.device->memory_bytes);
    if (auto entry = match_device(*all.context.device)) {
      ctx.datasheet = *entry;
      use_datasheet_ceilings(ctx, *entry);
    }
  } else {
    ctx.datasheet = model;
    use_datasheet_ceilings(ctx, model);
  }

  std::vector<ReportSection> sections;
  for (const auto& s : report_sections())
    if (s.mode == SectionMode::always || (s.mode == SectionMode::gpu) == gpu) sections.push_back(s);
  std::stable_sort(sections.begin(), sections.end(), [](const auto& a, const auto& b) { return a.order < b.order; });

  const std::string subject = gpu ? all.context.device->name : model.name + " (model only)";
  std::string md = fmt::format("# ridge report: {}\n\n", subject);
  md += fmt::format("ridge {} (git {}), {}, host `{}`{}.\n\n", all.context.tool_version, all.context.git_sha,
                    all.context.timestamp_utc, all.context.hostname, c.quick ? ", **quick** run" : "");
  if (!gpu)
    md += fmt::format(
        "> **Model-only report.** No usable GPU ({}). Nothing in this report was measured: every number comes from the "
        "datasheet of the {} (`--model {}`) and the roofline and decode-ceiling formulas. Run `ridge report` on a machine with a CUDA GPU "
        "for measurements.\n\n",
        no_gpu_reason().empty() ? "none found" : no_gpu_reason(), model.name, model.key);

  std::map<std::string, std::string> svgs;
  std::string trace;
  nlohmann::json section_log = nlohmann::json::array();
  int exit_code = 0;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const auto& s = sections[i];
    fmt::print(stderr, "ridge report: [{}/{}] {} ...\n", i + 1, sections.size(), s.title);
    const auto ts = std::chrono::steady_clock::now();
    SectionOutput out;
    std::string failure;
    int code = 0;
    try {
      out = s.run(ctx);
    } catch (const Error& e) {
      failure = e.what();
      code = static_cast<int>(e.code());
    } catch (const std::exception& e) {
      failure = e.what();
      code = static_cast<int>(ExitCode::runtime_error);
    }
    progress_done();
    const double took = seconds_since(ts);
    md += fmt::format("## {}\n\n", s.title);
    if (!failure.empty()) {
      md += fmt::format("> **This section failed:** {}\n\n", failure);
      fmt::print(stderr, "ridge report: {} failed: {}\n", s.title, failure);
      if (exit_code == 0) exit_code = code;
    }
    md += out.markdown;
    if (!md.empty() && md.back() != '\n') md += '\n';
    md += '\n';
    for (auto& svg : out.svgs) {
      if (svg.content.empty()) continue;
      write_text((folder / svg.file).string(), svg.content);
      svgs[svg.file] = svg.content;
    }
    if (!out.trace_json.empty()) trace = out.trace_json;
    all.records.insert(all.records.end(), out.records.begin(), out.records.end());
    section_log.push_back({{"key", s.key},
                           {"title", s.title},
                           {"seconds", took},
                           {"records", out.records.size()},
                           {"status", failure.empty() ? "ok" : "failed"},
                           {"error", failure},
                           {"data", out.data}});
    fmt::print(stderr, "ridge report: [{}/{}] {} {} in {:.1f} s\n", i + 1, sections.size(), s.title,
               failure.empty() ? "done" : "FAILED", took);
  }
  finish_result_set(all, gpu ? c.device : -1);
  const double wall = seconds_since(t0);

  md += "## Files\n\n";
  md += "- `report.md`, `report.html` (this report; the HTML embeds the plots and needs no network)\n";
  md += fmt::format("- `results.json`: {} records with raw samples, context and predictions (compare two runs with "
                    "`ridge compare OLD NEW`)\n",
                    all.records.size());
  for (const auto& [file, _] : svgs) md += fmt::format("- `{}`\n", file);
  if (!trace.empty()) md += "- `trace.json`: open in Perfetto (ui.perfetto.dev) or chrome://tracing\n";
  md += fmt::format("\nThe report took {:.1f} s{}. Command: `{}`\n", wall, c.quick ? " (--quick)" : "",
                    fmt::join(all.context.argv, " "));

  nlohmann::json j = to_json(all);
  j["report"] = {{"mode", gpu ? "gpu" : "model_only"},
                 {"model", gpu ? (ctx.datasheet ? ctx.datasheet->key : "") : model.key},
                 {"quick", c.quick},
                 {"wall_seconds", wall},
                 {"ceilings_source", ctx.ceilings_source},
                 {"measured", ctx.measured},
                 {"sections", section_log}};
  write_json((folder / "results.json").string(), j);
  write_text((folder / "report.md").string(), md);
  write_text((folder / "report.html").string(), markdown_to_html(md, svgs, "ridge report: " + subject));
  if (!trace.empty()) write_text((folder / "trace.json").string(), trace);
  fmt::print(stderr, "ridge report: wrote {} in {:.1f} s{}\n", (folder / "report.html").string(), wall,
             gpu ? "" : " (model-only: no usable GPU)");
  fmt::print("{}\n", folder.string());
  return exit_code;
}

RIDGE_REGISTER_COMMAND(Command{
    "report", "the main job: run the suite on one GPU (or model-only without one) and write one report folder", 90,
    [](CLI::App& app) {
      auto c = std::make_shared<ReportCommand>();
      app.description(
          "Runs device info, the timing demo, ceilings, sweeps, roofline, decode and profile sections on one GPU\n"
          "and writes report.md, a self-contained report.html, SVG plots, results.json (every record) and\n"
          "trace.json into one folder, whose path is printed on stdout; progress goes to stderr.\n"
          "Without a usable GPU it writes a model-only report (catalog roofline, decode ceilings, Amdahl) and exits 0.\n"
          "Exit code: that of the first section that failed (the report is written anyway), else 0.");
      add_device_option(app, c->device);
      app.add_option("-o,--output", c->out_dir, "report folder (default runs/report-<UTC timestamp>)")
          ->type_name("DIR");
      app.add_flag("--quick", c->quick, "fewer samples and sizes: a short run (target <= 20 s on an H200)");
      app.add_option("--model", c->model, "catalog device for the model-only report (no GPU)")
          ->default_val("h100-sxm");
      app.add_option("--predict", c->predict,
                     "commit a number before you run, KEY=VALUE (repeatable); the report shows prediction, "
                     "measurement and error. Keys: naive_over_sync, hbm_tb_per_s, matmul_70pct_n, ... "
                     "(listed in the report)")
          ->type_name("KEY=VALUE")
          ->take_all();
      app.add_flag("-v,--verbose", c->verbose, "also print each section's own output on stderr");
      app.add_option("--inject-slowdown-us", c->inject_slowdown_us,
                     "TESTING AID, not a measurement: slow the timing section's large matmul by a GPU busy-wait of "
                     "this many microseconds per call, to check that `ridge compare` flags a slowdown")
          ->default_val(0)
          ->check(CLI::Range(0.0, 1e7));
      return std::function<int()>([c] { return run_report(*c); });
    }});

}  // namespace
}  // namespace ridge::cli
