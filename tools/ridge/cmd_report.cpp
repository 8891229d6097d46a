// `ridge report`: the main job. ridge::run_report runs the registered report sections
// (report_sections.hpp) on one GPU, or the model-only ones without a GPU, and writes one folder;
// this command maps the options, shows progress on stderr and prints the folder on stdout.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/report.hpp"

namespace ridge::cli {
namespace {

struct ReportCommand {
  ReportOptions options;
  bool verbose = false;
};

int report(ReportCommand c) {
  c.options.log = c.verbose ? stderr : nullptr;
  c.options.argv = argv();
  ReportCallbacks callbacks;
  callbacks.on_note = [](const std::string& note) { fmt::print(stderr, "ridge report: note: {}\n", note); };
  callbacks.on_section_start = [](std::size_t i, std::size_t n, const ReportSection& s) {
    fmt::print(stderr, "ridge report: [{}/{}] {} ...\n", i + 1, n, s.title);
  };
  callbacks.on_section_done = [](std::size_t i, std::size_t n, const SectionRun& run) {
    progress_done();
    if (run.failed()) fmt::print(stderr, "ridge report: {} failed: {}\n", run.title, run.error);
    fmt::print(stderr, "ridge report: [{}/{}] {} {} in {:.1f} s\n", i + 1, n, run.title,
               run.failed() ? "FAILED" : "done", run.seconds);
  };
  const ReportResult r = run_report(c.options, callbacks);
  fmt::print(stderr, "ridge report: wrote {} in {:.1f} s{}\n", (r.folder / "report.html").string(), r.wall_seconds,
             r.gpu ? "" : " (model-only: no usable GPU)");
  fmt::print("{}\n", r.folder.string());
  return r.exit_code;
}

RIDGE_REGISTER_COMMAND(Command{
    "report", "the main job: run the suite on one GPU (or model-only without one) and write one report folder", 90,
    [](CLI::App& app) {
      auto c = std::make_shared<ReportCommand>();
      ReportOptions& o = c->options;
      app.description(
          "Runs device info, the timing demo, ceilings, sweeps, roofline, decode and profile sections on one GPU\n"
          "and writes report.md, a self-contained report.html, SVG plots, results.json (every record) and\n"
          "trace.json into one folder, whose path is printed on stdout; progress goes to stderr.\n"
          "Without a usable GPU it writes a model-only report (catalog roofline, decode ceilings, Amdahl) and exits 0.\n"
          "Exit code: that of the first section that failed (the report is written anyway), else 0.");
      add_device_option(app, o.device);
      app.add_option("-o,--output", o.folder, "report folder (default runs/report-<UTC timestamp>)")->type_name("DIR");
      app.add_flag("--quick", o.quick, "fewer samples and sizes: a short run (target <= 20 s on an H200)");
      app.add_option("--model", o.model, "catalog device for the model-only report (no GPU)")->default_val("h100-sxm");
      app.add_option("--predict", o.predictions,
                     "commit a number before you run, KEY=VALUE (repeatable); the report shows prediction, "
                     "measurement and error. Keys: naive_over_sync, hbm_tb_per_s, matmul_70pct_n, ... "
                     "(listed in the report)")
          ->type_name("KEY=VALUE")
          ->take_all();
      app.add_flag("-v,--verbose", c->verbose, "also print each section's own output on stderr");
      app.add_option("--inject-slowdown-us", o.inject_slowdown_us,
                     "TESTING AID, not a measurement: slow the timing section's large matmul by a GPU busy-wait of "
                     "this many microseconds per call, to check that `ridge compare` flags a slowdown")
          ->default_val(0)
          ->check(CLI::Range(0.0, 1e7));
      return std::function<int()>([c] { return report(*c); });
    }});

}  // namespace
}  // namespace ridge::cli
