// `ridge report`: the main job. ridge::run_report (the library; Python's ridge.report() calls it
// too) runs the report's sections on one GPU, or the model-only ones without a GPU, and writes one
// folder; this command maps the options, shows progress on stderr and prints the folder on stdout.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli.hpp"
#include "report/sections/sections.hpp"
#include "ridge/errors.hpp"
#include "ridge/report.hpp"

namespace ridge::cli {
namespace {

// Set by the first SIGINT/SIGTERM; the runner stops at the next section boundary. A second one exits at once.
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_stop_signal(int signal) {
  if (stop_signal != 0) _exit(128 + signal);
  stop_signal = signal;
}

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

struct ReportCommand {
  ReportOptions options;
  detail::ReportTestingAids testing;
  bool verbose = false;
  std::string slow_records, slow_by;  ///< the record slowdown's selector and amount, as typed
};

// "--slow-by 10%" or "--slow-by 0.5us" into the testing aid's slowdown.
detail::RecordSlowdown record_slowdown(const std::string& selector, const std::string& amount) {
  if (selector.empty() != amount.empty())
    throw UsageError("--slow-records and --slow-by go together: which records, and by how much (10% or 0.5us)");
  detail::RecordSlowdown s{.selector = selector};
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(amount, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = amount.substr(used);
  if (used == 0 || (unit != "%" && unit != "us"))
    throw UsageError(fmt::format("--slow-by {}: give a percentage (10%) or microseconds per operation (0.5us)", amount));
  (unit == "%" ? s.relative : s.added_us) = unit == "%" ? value / 100 : value;
  return s;
}

// The library's usage errors name its fields (folder, force, prediction, model, device); say
// which options of this command set them.
ReportResult run_report_naming_options(const ReportCommand& c, const ReportCallbacks& callbacks) {
  try {
    return detail::run_report_with_testing_aids(c.options, callbacks, c.testing);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{} (options: -o/--output sets the folder, --force, --predict KEY=VALUE, --model, "
                                 "--device, --history DB)",
                                 e.what()));
  }
}

int report(ReportCommand c) {
  if (!c.slow_records.empty() || !c.slow_by.empty()) c.testing.slow_records = record_slowdown(c.slow_records, c.slow_by);
  c.options.log = c.verbose ? stderr : nullptr;
  c.options.argv = argv();
  ReportCallbacks callbacks;
  callbacks.on_note = [](const std::string& note) { fmt::print(stderr, "ridge report: note: {}\n", note); };
  callbacks.on_section_start = [](std::size_t i, std::size_t n, const std::string&, const std::string& title) {
    fmt::print(stderr, "ridge report: [{}/{}] {} ...\n", i + 1, n, title);
  };
  callbacks.on_status = [](const std::string& line) { line.empty() ? progress_done() : progress(line); };
  callbacks.on_section_done = [](std::size_t i, std::size_t n, const SectionRun& run) {
    progress_done();
    if (run.failed()) fmt::print(stderr, "ridge report: {} failed: {}\n", run.title, run.error);
    fmt::print(stderr, "ridge report: [{}/{}] {} {} in {:.1f} s\n", i + 1, n, run.title,
               run.failed() ? "FAILED" : "done", run.seconds);
  };
  callbacks.stop_requested = [] { return int(stop_signal); };
  install_stop_handlers();
  const ReportResult r = run_report_naming_options(c, callbacks);
  if (r.stopped_by_signal) {
    fmt::print(stderr, "ridge report: stopped by signal {} after {} section(s); the partial report is in {} (marked "
               "INCOMPLETE); the destination folder was not touched\n", r.stopped_by_signal, r.sections.size(),
               r.folder.string());
    fmt::print("{}\n", r.folder.string());
    return r.exit_code;
  }
  if (!r.kept_files.empty())
    fmt::print(stderr, "ridge report: note: --force kept {} file(s) in {} that ridge did not write: {}\n",
               r.kept_files.size(), r.folder.string(), fmt::join(r.kept_files, ", "));
  fmt::print(stderr, "ridge report: summary\n{}", summary_text(r.summary));  // the answer first, as in report.md
  fmt::print(stderr, "ridge report: wrote {} in {:.1f} s{}\n", (r.folder / "report.html").string(), r.wall_seconds,
             r.gpu ? "" : " (model-only: no usable GPU)");
  if (r.history_added && r.history_added->added)
    fmt::print(stderr, "ridge report: added to {} as run {} (commit {})\n", c.options.history,
               r.history_added->run_id, r.history_provenance.commit);
  else if (r.history_added)
    fmt::print(stderr, "ridge report: already in {} as run {}; nothing changed\n", c.options.history,
               r.history_added->run_id);
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
          "The report is built in DIR.partial-PID beside DIR (a file INCOMPLETE says so) and renamed to DIR at the end.\n"
          "An existing non-empty DIR is refused unless --force, which replaces only ridge's own files in it.\n"
          "Ctrl-C or SIGTERM stops at the next section: DIR is untouched, the partial folder keeps the finished\n"
          "sections and INCOMPLETE says which; a second Ctrl-C exits at once.\n"
          "Exit code: that of the first section that failed (the report is written anyway), 130 after Ctrl-C,\n"
          "143 after SIGTERM, else 0.");
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
      app.add_flag("--force", o.force,
                   "write into an existing folder: replace ridge's own files there (report.md, report.html, "
                   "results.json, trace*.json, *.svg, INCOMPLETE) and keep every other file");
      app.add_option("--history", o.history,
                     "at the end, add the run to this history (SQLite file, created when missing; see `ridge "
                     "history`), under the commit of the git repository here, else the results' git sha")
          ->type_name("DB");
      app.add_flag("--remeasure-ceilings", o.remeasure_ceilings,
                   "measure the ceilings again instead of taking them from the per-GPU cache (the report marks "
                   "numbers taken from the cache with their date)");
      app.add_flag("-v,--verbose", c->verbose, "also print each section's Markdown on stderr as it finishes");
      app.add_option("--inject-slowdown-us", c->testing.inject_slowdown_us,
                     "TESTING AID, not a measurement: slow the timing section's large matmul by a GPU busy-wait of "
                     "this many microseconds per call, to check that `ridge compare` flags a slowdown")
          ->default_val(0)
          ->check(CLI::Range(0.0, 1e7));
      app.add_option("--slow-records", c->slow_records,
                     "TESTING AID, not a measurement: after measuring, make the records whose name, method, dtype or "
                     "KEY=VALUE params match every word of SELECTOR slower by --slow-by, to check that `ridge compare` "
                     "flags them (e.g. --slow-records 'matmul graph_replay n=4096' --slow-by 10%)")
          ->type_name("SELECTOR");
      app.add_option("--slow-by", c->slow_by, "TESTING AID: how much --slow-records slows each operation: 10% or 0.5us")
          ->type_name("AMOUNT");
      app.add_option("--pause-between-sections", c->testing.pause_between_sections_s,
                     "TESTING AID, not a measurement: wait this many seconds after each section, so a test can "
                     "interrupt a report between sections")
          ->type_name("S")
          ->default_val(0)
          ->check(CLI::Range(0.0, 3600.0));
      return std::function<int()>([c] { return report(*c); });
    }});

}  // namespace
}  // namespace ridge::cli
