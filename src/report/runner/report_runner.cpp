// run_report: runs the report's sections (src/report/sections/) in order and writes the folder. It
// drives every layer (device queries, the tracer's NVTX routing, the sections' measurements), so
// it is a target of its own (ridge_report) above ridge_gpu and ridge_trace.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "ridge/catalog.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/report.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/writers.hpp"
#include "report/sections/sections.hpp"

namespace ridge {

using detail::ReportContext;
using detail::ReportSection;
using detail::SectionMode;
using detail::RecordSlowdown;
using detail::SectionOutput;

namespace {

namespace fs = std::filesystem;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

fs::path default_folder() {
  std::string ts = utc_timestamp_now();
  for (auto& c : ts)
    if (c == ':') c = '-';
  std::string folder = "runs/report-" + ts;
  for (int i = 2; fs::exists(folder); ++i) folder = fmt::format("runs/report-{}-{}", ts, i);
  return folder;
}

// The run history the finished report is added to (ReportOptions::history). Opened before any
// work, so a foreign or newer file stops the report before it starts.
class ReportHistory {
 public:
  explicit ReportHistory(const std::string& path) {
    if (path.empty()) return;
#ifdef RIDGE_HAVE_HISTORY
    history_.emplace(History::open_or_create(path));
#else
    throw Error(fmt::format("history: this ridge was built without SQLite, so the report cannot be added to {}: "
                            "install libsqlite3-dev and rebuild",
                            path));
#endif
  }

  // The history's latest run on the same GPU (by UUID), for the summary to compare with; nullopt
  // when there is none or no history. `label` names it ("run 12, commit abc1234").
  std::optional<ResultSet> previous_run(const ResultSet& now, std::string& label) const {
#ifdef RIDGE_HAVE_HISTORY
    if (!history_ || !now.context.device) return std::nullopt;
    const auto runs = history_->runs();
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
      if (it->gpu_uuid == now.context.device->uuid) {
        label = fmt::format("the previous run (run {}, commit {})", it->id, it->commit.substr(0, 12));
        return history_->load_run(it->id);
      }
#else
    (void)now;
    (void)label;
#endif
    return std::nullopt;
  }

  // Adds the finished report as `ridge history add FOLDER` would: read back from its results.json,
  // so adding the folder again later finds the same run.
  void add(ReportResult& r, RunProvenance given) {
#ifdef RIDGE_HAVE_HISTORY
    if (!history_) return;
    const std::string where = fmt::format("the report was written to {}, but not added to the history {}",
                                          r.folder.string(), history_->path().string());
    try {
      const ResultSet run = load_result_file(r.folder / "results.json");
      if (given.source.empty()) given.source = r.folder.string();
      r.history_provenance = resolve_provenance(given, run, fs::current_path());
      if (r.history_provenance.commit.empty())
        throw UsageError("history_provenance: no commit: not in a git repository and the results have no git sha; "
                         "give the commit");
      r.history_added = history_->add(run, r.history_provenance);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: {}", where, e.what()));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()), e.code());
    }
#else
    (void)r;
    (void)given;
#endif
  }

 private:
#ifdef RIDGE_HAVE_HISTORY
  std::optional<History> history_;
#endif
};

/// {key: value} of the predictions; a key ridge does not measure is kept (and noted).
nlohmann::json parse_predictions(const std::vector<std::string>& texts, const ReportCallbacks& callbacks) {
  nlohmann::json predictions = nlohmann::json::object();
  for (const auto& p : texts) {
    const auto [key, value] = parse_prediction(p);
    predictions[key] = value;
  }
  const auto& keys = prediction_keys();
  for (const auto& p : predictions.items())
    if (std::none_of(keys.begin(), keys.end(), [&](const auto& k) { return k.key == p.key(); }) && callbacks.on_note)
      callbacks.on_note(fmt::format("'{}' is not a key ridge measures; it will be listed as not measured", p.key()));
  return predictions;
}

/// The result set's context: the command line, versions, time and (with a GPU) the device and its clocks.
ResultSet new_report_results(const std::vector<std::string>& argv, int device, bool gpu) {
  ResultSet set;
  std::vector<const char*> raw;
  for (const auto& a : argv) raw.push_back(a.c_str());
  set.context = make_context(static_cast<int>(raw.size()), raw.data());
  if (gpu) {
    set.context.device = describe_device(device);
    set.context.clocks_start = read_clocks(device);
  }
  return set;
}

/// The sections this machine runs, in report order: GPU and always ones with a GPU, else model-only and always.
std::vector<ReportSection> sections_to_run(bool gpu) {
  std::vector<ReportSection> sections;
  for (const auto& s : detail::report_sections())
    if (s.mode == SectionMode::always || (s.mode == SectionMode::gpu) == gpu) sections.push_back(s);
  return sections;
}

/// The testing aid pause_between_sections_s: sleeps `seconds` in short steps, returning early when a stop is requested.
void pause_unless_stopped(double seconds, const std::function<int()>& stop_signal) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until && stop_signal() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::string report_header(const ReportResult& r, const CatalogEntry& model, bool quick) {
  const RunContext& c = r.results.context;
  std::string md = fmt::format("# ridge report: {}\n\n", r.subject);
  md += fmt::format("ridge {} (git {}), {}, host `{}`{}.\n\n", c.tool_version, c.git_sha, c.timestamp_utc, c.hostname,
                    quick ? ", **quick** run" : "");
  if (!r.gpu)
    md += fmt::format(
        "> **Model-only report.** No usable GPU ({}). Nothing in this report was measured: every number comes from the "
        "datasheet of the {} (model `{}`) and the roofline and decode-ceiling formulas. Run `ridge report` on a machine with a CUDA GPU "
        "for measurements.\n\n",
        no_gpu_reason().empty() ? "none found" : no_gpu_reason(), model.name, model.key);
  return md;
}

/// Runs one section; a failure becomes part of the report, never an exception.
SectionOutput run_section(const ReportSection& s, ReportContext& ctx, SectionRun& run) {
  run.key = s.key;
  run.title = s.title;
  const auto t0 = std::chrono::steady_clock::now();
  SectionOutput out;
  try {
    out = s.run(ctx);
  } catch (const Error& e) {
    run.error = e.what();
    run.exit_code = static_cast<int>(e.code());
  } catch (const std::exception& e) {
    run.error = e.what();
    run.exit_code = static_cast<int>(ExitCode::runtime_error);
  }
  run.seconds = seconds_since(t0);
  run.records = out.records.size();
  return out;
}

/// A section's body ends in a newline.
std::string section_body(std::string md) {
  if (!md.empty() && md.back() != '\n') md += '\n';
  return md;
}

/// Writes the section's SVGs and keeps them for the HTML.
void write_section_svgs(const ReportResult& r, const std::vector<detail::ReportSvg>& section_svgs,
                        std::map<std::string, std::string>& svgs) {
  for (auto& svg : section_svgs) {
    if (svg.content.empty()) continue;
    write_text((r.folder / svg.file).string(), svg.content);
    svgs[svg.file] = svg.content;
  }
}

/// A section drawn again with the report's final ceilings (SectionOutput::render_final): where its
/// body lies in the report's Markdown.
struct FinalRendering {
  std::size_t at = 0, length = 0;
  std::function<SectionOutput(const ReportContext&)> render;
};

/// The section's Markdown under its heading, its SVGs written and kept for the HTML; a section
/// that prints a peak is noted in `final_renderings`.
void add_section_output(ReportResult& r, const SectionRun& run, SectionOutput& out, std::map<std::string, std::string>& svgs,
                        std::string& trace, nlohmann::json& section_log, std::vector<FinalRendering>& final_renderings) {
  std::string md = fmt::format("## {}\n\n", run.title);
  if (run.failed()) md += fmt::format("> **This section failed:** {}\n\n", run.error);
  const std::string body = section_body(out.markdown);
  if (out.render_final && !run.failed())
    final_renderings.push_back({r.markdown.size() + md.size(), body.size(), out.render_final});
  r.markdown += md + body + '\n';
  write_section_svgs(r, out.svgs, svgs);
  if (!out.trace_json.empty()) trace = out.trace_json;
  r.results.records.insert(r.results.records.end(), out.records.begin(), out.records.end());
  section_log.push_back({{"key", run.key},
                         {"title", run.title},
                         {"seconds", run.seconds},
                         {"records", run.records},
                         {"status", run.failed() ? "failed" : "ok"},
                         {"error", run.error},
                         {"data", out.data}});
}

std::string slowdown_markdown(const RecordSlowdown& s, std::size_t slowed) {
  return fmt::format("> **Deliberately slowed records (a testing aid):** the samples in results.json of the {} "
                     "record(s) selected by \"{}\" were made {:g}% + {:g} us per operation slower after they were "
                     "measured (the tables above show them as measured).{}\n\n",
                     slowed, s.selector, s.relative * 100, s.added_us,
                     slowed == 0 ? " **No record matched the selector.**" : "");
}

std::string files_markdown(const ReportResult& r, const std::map<std::string, std::string>& svgs, bool trace,
                           bool quick) {
  std::string md = "## Files\n\n";
  md += "- `report.md`, `report.html` (this report; the HTML embeds the plots and needs no network)\n";
  md += fmt::format("- `results.json`: {} records with raw samples, context and predictions (compare two runs with "
                    "`ridge compare OLD NEW`)\n",
                    r.results.records.size());
  for (const auto& [file, _] : svgs) md += fmt::format("- `{}`\n", file);
  if (trace) md += "- `trace.json`: open in Perfetto (ui.perfetto.dev) or chrome://tracing\n";
  double settle_ms = 0;
  for (const auto& record : r.results.records) settle_ms += extra_key::settle_ms.get(record);
  md += fmt::format("\nThe report took {:.1f} s{}{}. Command: `{}`\n", r.wall_seconds, quick ? " (quick)" : "",
                    settle_ms > 0 ? fmt::format(", of which {:.1f} s ran the work until the SM clock settled, before "
                                                "launch-free sampling",
                                                settle_ms / 1e3)
                                  : "",
                    fmt::join(r.results.context.argv, " "));
  return md;
}

/// The report's final ceilings, raised to every rate the run attained, and the sections that print
/// a peak drawn again with them (from the last, so the earlier bodies' places hold). A section
/// that cannot be drawn again keeps its first rendering, with a note.
void render_with_final_ceilings(ReportResult& r, ReportContext& ctx, const std::vector<FinalRendering>& renderings,
                                std::map<std::string, std::string>& svgs) {
  detail::raise_report_ceilings(ctx, r.results.records);
  for (auto it = renderings.rbegin(); it != renderings.rend(); ++it) {
    std::string body;
    try {
      const SectionOutput again = it->render(ctx);
      body = section_body(again.markdown);
      write_section_svgs(r, again.svgs, svgs);
    } catch (const std::exception& e) {
      body = r.markdown.substr(it->at, it->length) +
             fmt::format("> **Not drawn again with the report's final ceilings:** {}\n\n", e.what());
    }
    r.markdown.replace(it->at, it->length, body);
  }
}

/// With a history: the summary's numbers against its latest run on this GPU (the values its
/// measured_record carries), and its regressions. A comparison that cannot be made (e.g. no record
/// in common) becomes a note in the summary, never a failure.
void compare_with_previous_run(ReportResult& r, const ReportHistory& history) {
  std::string label;
  try {
    if (const auto previous = history.previous_run(r.results, label)) {
      add_previous_values(r.summary, measured_from_records(previous->records), label);
      add_regression_findings(r.summary, compare_results(*previous, r.results), label);
    }
  } catch (const Error& e) {
    r.summary.findings.push_back({"not compared", fmt::format("with {}: {}", label, e.what()), "Files"});
  }
}

}  // namespace

ReportResult run_report(const ReportOptions& options, const ReportCallbacks& callbacks) {
  return detail::run_report_with_testing_aids(options, callbacks, {});
}

ReportResult detail::run_report_with_testing_aids(const ReportOptions& o, const ReportCallbacks& callbacks,
                                                  const ReportTestingAids& aids) {
  const auto t0 = std::chrono::steady_clock::now();
  // Everything a user can get wrong is checked before any work starts.
  const nlohmann::json predictions = parse_predictions(o.predictions, callbacks);
  const int count = device_count();
  ReportResult r;
  r.gpu = count > 0;
  // The profile section traces NVTX ranges; earlier sections already call NVTX, so route it to
  // CUPTI before the first call initialises it.
  if (r.gpu) enable_nvtx_capture();
  if (o.device < 0 || (r.gpu && o.device >= count))
    throw UsageError(fmt::format("device index {} does not exist: this machine has {} usable GPU(s), numbered from 0",
                                 o.device, count));
  const CatalogEntry& model = catalog_entry(o.model);  // throws UsageError listing the known keys

  if (aids.slow_records) aids.slow_records->validate();
  if (!(aids.pause_between_sections_s >= 0))
    throw UsageError(fmt::format("pause_between_sections_s must be >= 0 seconds, got {}", aids.pause_between_sections_s));
  const fs::path destination = o.folder.empty() ? default_folder() : fs::path(o.folder);
  check_report_destination(destination, o.force);
  ReportHistory history(o.history);
  // Built beside the destination and moved into place at the end: an interrupted or killed
  // report leaves DEST as it was and a folder marked INCOMPLETE.
  r.folder = make_partial_report_folder(destination);

  r.results = new_report_results(o.argv, o.device, r.gpu);
  r.results.context.predictions = predictions;
  ReportContext ctx;
  ctx.device = o.device;
  ctx.gpu = r.gpu;
  ctx.quick = o.quick;
  ctx.remeasure_ceilings = o.remeasure_ceilings;
  ctx.inject_slowdown_us = aids.inject_slowdown_us;
  ctx.folder = r.folder;
  if (callbacks.on_status) ctx.status = callbacks.on_status;
  ctx.results = &r.results;
  if (r.gpu) {
    ctx.memory_bytes = double(r.results.context.device->memory_bytes);
    if (auto entry = ceilings_for(o.device, *r.results.context.device, CeilingsMode::none).datasheet) {
      ctx.datasheet = *entry;
      use_datasheet_ceilings(ctx, *entry);
    }
  } else {
    ctx.datasheet = model;
    use_datasheet_ceilings(ctx, model);
  }
  r.subject = r.gpu ? r.results.context.device->name : model.name + " (model only)";
  r.markdown = report_header(r, model, o.quick);
  const std::size_t summary_at = r.markdown.size();  // the answer first: the summary goes here at the end

  const std::vector<ReportSection> sections = sections_to_run(r.gpu);
  std::map<std::string, std::string> svgs;
  std::string trace;
  nlohmann::json section_log = nlohmann::json::array();
  std::vector<FinalRendering> final_renderings;
  std::size_t slowed = 0;
  const auto stop_signal = [&] { return callbacks.stop_requested ? callbacks.stop_requested() : 0; };
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (i > 0) pause_unless_stopped(aids.pause_between_sections_s, stop_signal);
    if ((r.stopped_by_signal = stop_signal()) != 0) break;
    if (callbacks.on_section_start) callbacks.on_section_start(i, sections.size(), sections[i].key, sections[i].title);
    SectionRun run;
    SectionOutput out = run_section(sections[i], ctx, run);
    if (aids.slow_records) slowed += aids.slow_records->apply(out.records);
    const std::size_t markdown_before = r.markdown.size();
    add_section_output(r, run, out, svgs, trace, section_log, final_renderings);
    if (o.log) fmt::print(o.log, "{}", r.markdown.substr(markdown_before));
    if (run.failed() && r.exit_code == 0) r.exit_code = run.exit_code;
    r.sections.push_back(run);
    if (callbacks.on_section_done) callbacks.on_section_done(i, sections.size(), run);
  }
  if (r.gpu) r.results.context.clocks_end = read_clocks(o.device);
  render_with_final_ceilings(r, ctx, final_renderings, svgs);
  r.wall_seconds = seconds_since(t0);
  if (r.stopped_by_signal)
    r.markdown += fmt::format("> **Incomplete report:** stopped by signal {} after {} of {} sections (see INCOMPLETE).\n\n",
                              r.stopped_by_signal, r.sections.size(), sections.size());
  if (aids.slow_records) r.markdown += slowdown_markdown(*aids.slow_records, slowed);
  r.measured = ctx.measured;
  // Kept with the records, so a history holds them for the next report's summary.
  if (!r.measured.empty()) r.results.records.push_back(measured_record(r.measured));
  r.markdown += files_markdown(r, svgs, !trace.empty(), o.quick);
  r.summary = summarize_report(r.measured, ctx.datasheet, r.results.records, r.sections, ctx.ceilings_cached_at);
  compare_with_previous_run(r, history);
  r.markdown.insert(summary_at, summary_markdown(r.summary));

  nlohmann::json j = to_json(r.results);
  j["report"] = {{"mode", r.gpu ? "gpu" : "model_only"},
                 {"model", r.gpu ? (ctx.datasheet ? ctx.datasheet->key : "") : model.key},
                 {"quick", o.quick},
                 {"wall_seconds", r.wall_seconds},
                 {"ceilings_source", ctx.ceilings.source_text},
                 {"measured", ctx.measured},
                 {"summary", to_json(r.summary)},
                 {"sections", section_log}};
  write_json((r.folder / "results.json").string(), j);
  write_text((r.folder / "report.md").string(), r.markdown);
  write_text((r.folder / "report.html").string(), markdown_to_html(r.markdown, svgs, "ridge report: " + r.subject));
  r.files = {"report.md", "report.html", "results.json"};
  for (const auto& [file, _] : svgs) r.files.push_back(file);
  if (!trace.empty()) {
    write_text((r.folder / "trace.json").string(), trace);
    r.files.push_back("trace.json");
  }
  if (r.stopped_by_signal) {
    std::vector<std::string> finished, not_run;
    for (const auto& s : r.sections) finished.push_back(s.title);
    for (std::size_t i = r.sections.size(); i < sections.size(); ++i) not_run.push_back(sections[i].title);
    mark_report_incomplete(r.folder, r.stopped_by_signal, finished, not_run);
    r.exit_code = 128 + r.stopped_by_signal;
    return r;
  }
  r.kept_files = finalize_report_folder(r.folder, destination);
  r.folder = destination;
  history.add(r, o.history_provenance);
  return r;
}

}  // namespace ridge
