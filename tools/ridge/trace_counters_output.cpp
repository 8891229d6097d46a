// ridge trace: the measured roofline of a trace with hardware counters (trace_counters_output.hpp).
#include "trace_counters_output.hpp"

#include <cstring>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/catalog.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

void add_counter_flags(CLI::App& app, CounterFlags& f) {
  app.add_option("--counters", f.set,
                 "hardware counters per kernel (CUPTI range profiler): the metric set to collect "
                 "(roofline: DRAM and L2 bytes, FP64/FP32/FP16 and tensor FLOPs, time and clock of the profiled "
                 "pass, 2 passes on Hopper; roofline-full: also the FP64 and INT8 tensor paths; memory: bytes, "
                 "time and clock alone, in one pass), or raw for --metrics alone. "
                 "Profiled launches are replayed, serialized; their times never enter the timing analysis. Prints "
                 "the measured roofline of every profiled kernel")
      ->check(CLI::IsMember([] {
        std::vector<std::string> names = trace::counter_set_names();
        names.push_back(trace::raw_counter_set);
        return names;
      }()));
  app.add_option("--metrics", f.metrics, "extra CUPTI metrics to collect, with their rollup (e.g. dram__bytes_read.sum)")
      ->delimiter(',');
  app.add_option("--counters-steps", f.steps,
                 "profile every launch in these steps, FIRST..LAST (0-based, counted by the --step-range NVTX range). "
                 "Replayed by steps, each profiled step takes one program step per pass: the window takes "
                 "(LAST-FIRST+1) x passes steps from FIRST (the plan printed first says which). Default: the first "
                 "launches of each kernel name, replayed per kernel");
  f.first_option = app.add_option("--counters-first", f.first,
                 "profile at most the first N launches of each kernel name (0 = no limit)")
      ->default_val(trace::CounterOptions::default_first_launches);
  app.add_option("--counters-replay", f.replay,
                 "how a metric set of several passes is replayed: steps (pass p of a profiled step runs on the "
                 "p-th step after it: the program's own steps replay it, nothing saved or restored; the default "
                 "with --counters-steps) or kernel (each profiled kernel replayed inside its launch, its memory "
                 "saved and restored each pass; the default otherwise)")
      ->check(CLI::IsMember({"steps", "kernel"}));
  app.add_option("--counters-plan", f.plan,
                 "print the pass plan of the --counters set on this CUPTI chip (e.g. GH100: no GPU needed) and "
                 "stop: the metrics the chip offers, the passes, and the steps a --counters-steps window takes");
  app.add_option("--counters-by", f.by,
                 "rows of the measured roofline: kernel (each kernel name), nvtx_range (the innermost NVTX range a "
                 "kernel was launched in: an operator) or step (each --step-range step)")
      ->capture_default_str()->check(CLI::IsMember({"kernel", "nvtx_range", "nvtx", "operator", "step"}));
  app.add_option("--counters-svg", f.svg, "draw the measured roofline (one point per row, area by time share) to FILE.svg");
  app.add_option("--counters-records", f.records,
                 "write the measured roofline's rows as ridge records to FILE: .json (a result file), .csv or .md");
  app.add_option("--ceilings", f.ceilings,
                 "ceilings of the measured roofline: auto (measured and cached, else datasheet), measure, refresh, none")
      ->default_val("auto")->check(CLI::IsMember({"auto", "measure", "refresh", "none"}));
}

std::optional<trace::CounterOptions> counter_options(const CounterFlags& f, const std::string& step_range) {
  if (f.set.empty() && f.metrics.empty()) {
    if (!f.steps.empty()) throw UsageError("--counters-steps chooses the launches --counters profiles: give --counters too");
    return std::nullopt;
  }
  trace::CounterRequest request{f.set, f.metrics, f.steps, std::nullopt, f.replay, step_range};
  if (f.first_option != nullptr && f.first_option->count() > 0) request.first_launches = f.first;
  return trace::counter_options(request);
}

int print_counter_plan(const std::optional<trace::CounterOptions>& counters, const std::string& chip, std::FILE* out) {
  if (!counters) throw UsageError("--counters-plan plans the passes of a metric set: give --counters too");
  fmt::print(out, "{}", trace::to_text(counter_pass_plan(*counters, chip), *counters));
  return 0;
}

void print_counter_plan_before_the_run(const trace::CounterOptions& counters, std::FILE* out) {
  require_counters_permitted(0);
  fmt::print(out, "{}", trace::to_text(counter_pass_plan(counters, counter_chip(0)), counters));
  std::fflush(out);
}

std::optional<trace::CounterRoofline> print_counter_roofline(const std::string& file, const CounterOutput& c, std::FILE* out) {
  const bool files_asked = !c.svg.empty() || !c.records.empty();
  const trace::Trace t = trace::trace_has_counters(file) ? trace::load_trace(file) : trace::Trace{};
  if (t.counters.metrics.empty()) {
    if (files_asked) throw UsageError(fmt::format("{} has no hardware counters: --counters-svg and --counters-records need a trace taken with --counters", file));
    return std::nullopt;
  }
  const std::string device = t.device_names.empty() ? std::string() : t.device_names.begin()->second;
  const CeilingsLookup lookup = ceilings_for_device_named(device, ceilings_mode_from_string(c.ceilings));
  const DeviceCeilings ceilings = lookup.best().value_or(DeviceCeilings{});
  trace::CounterRooflineOptions options;
  options.by = trace::counter_grouping_from_string(c.by);
  options.step_range = c.step_range;
  const trace::CounterRoofline roofline = trace::counter_roofline(t, ceilings, options);
  fmt::print(out, "\n{}", trace::to_text(roofline));
  if (!lookup.note.empty()) fmt::print(out, "note: {}\n", lookup.note);
  if (!t.counters.error.empty()) fmt::print(stderr, "ridge trace: warning: counter collection stopped early: {}\n", t.counters.error);
  fmt::print(out, "{}", trace::counters_summary(t, c.step_range));
  if (!c.svg.empty()) {
    if (ceilings.memory_bytes_per_s <= 0) throw UsageError("--counters-svg draws the roofline under ceilings: --ceilings none has none");
    write_text(c.svg, render_svg(trace::counter_roofline_plot(roofline, ceilings)));
    fmt::print(out, "Measured roofline plot: {}\n", c.svg);
  }
  if (!c.records.empty()) {
    ResultSet set = new_result_set(-1);
    set.records = trace::counter_records(roofline);
    const std::string& path = c.records;
    const auto ends_with = [&path](const char* ext) { return path.size() >= std::strlen(ext) && path.ends_with(ext); };
    export_results(set, ends_with(".csv") || ends_with(".md") ? "" : path, ends_with(".csv") ? path : "",
                   ends_with(".md") ? path : "");
  }
  return roofline;
}

}  // namespace ridge::cli
