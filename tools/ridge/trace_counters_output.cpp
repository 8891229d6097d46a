// ridge trace: the measured roofline of a trace with hardware counters (trace_counters_output.hpp).
#include "trace_counters_output.hpp"

#include <cstring>

#include <fmt/format.h>

#include "cli.hpp"
#include "ridge/catalog.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

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
