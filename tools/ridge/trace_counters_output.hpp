// ridge trace: the measured roofline of a trace with hardware counters, printed and written to
// the files asked for (--counters-by, --counters-svg, --counters-records).
#pragma once
#include <cstdio>
#include <optional>
#include <string>

#include "ridge/trace/counters.hpp"

namespace ridge::cli {

struct CounterOutput {
  std::string ceilings;    // ceilings mode: auto, measure, refresh, none
  std::string by;          // kernel, nvtx_range, step
  std::string step_range;  // the NVTX range marking a step
  std::string svg, records;  // files to write ("" = none)
};

/// The measured roofline of the trace in `file`, printed to `out` and written where asked; nothing
/// when it has no counters (then files asked for are a usage error).
std::optional<trace::CounterRoofline> print_counter_roofline(const std::string& file, const CounterOutput& c, std::FILE* out);

}  // namespace ridge::cli
