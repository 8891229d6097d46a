// ridge trace: its hardware-counter flags (--counters and the --counters-* that go with it), the
// pass plan, and the measured roofline of a trace with counters, printed and written to the files
// asked for (--counters-by, --counters-svg, --counters-records).
#pragma once
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ridge/trace/counters.hpp"

namespace ridge::cli {

struct CounterOutput {
  std::string ceilings;    // ceilings mode: auto, measure, refresh, none
  std::string by;          // kernel, nvtx_range, step
  std::string step_range;  // the NVTX range marking a step
  std::string svg, records;  // files to write ("" = none)
};

/// The counter flags as given.
struct CounterFlags {
  std::string set;  // metric set name, "raw" for --metrics alone, "" = none
  std::vector<std::string> metrics;
  std::string steps;   // "10..12"
  std::string replay;  // "steps", "kernel", "" = the library's default
  std::string plan;    // a chip name: print the pass plan and stop
  std::uint64_t first = trace::CounterOptions::default_first_launches;
  CLI::Option* first_option = nullptr;  // says whether --counters-first was given
  std::string ceilings = "auto";
  std::string by = trace::to_string(trace::CounterRooflineOptions{}.by);
  std::string svg, records;  // files of the measured roofline ("" = none)

  /// What the measured-roofline output of a trace is asked for.
  CounterOutput output(const std::string& step_range) const { return {ceilings, by, step_range, svg, records}; }
};

/// Adds the counter flags to `app`, read into `flags`.
void add_counter_flags(CLI::App& app, CounterFlags& flags);

/// The counter options the flags ask for (none without --counters or --metrics), with the
/// library's defaults; `step_range` marks the steps of --counters-steps.
std::optional<trace::CounterOptions> counter_options(const CounterFlags& flags, const std::string& step_range);

/// --counters-plan: the pass plan of `counters` on the CUPTI chip named `chip`; 0.
int print_counter_plan(const std::optional<trace::CounterOptions>& counters, const std::string& chip, std::FILE* out);
/// The pass plan on GPU 0, printed before the program runs (after checking that counters are
/// permitted: nothing is half-written).
void print_counter_plan_before_the_run(const trace::CounterOptions& counters, std::FILE* out);

/// The measured roofline of the trace in `file`, printed to `out` and written where asked; nothing
/// when it has no counters (then files asked for are a usage error).
std::optional<trace::CounterRoofline> print_counter_roofline(const std::string& file, const CounterOutput& c, std::FILE* out);

}  // namespace ridge::cli
