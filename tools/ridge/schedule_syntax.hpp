#pragma once
// The command line's syntax for the tracer's schedule (`ridge trace --schedule`).
#include <string>

#include "ridge/trace/schedule.hpp"

namespace ridge::cli {

/// "wait=9,active=1" -> TraceSchedule: comma-separated KEY=N with KEY one of skip_first, wait,
/// warmup, active, repeat (others keep their defaults). The step range is not part of it
/// (--step-range). Throws UsageError for anything else; the library validates the values.
trace::TraceSchedule parse_schedule(const std::string& text);

}  // namespace ridge::cli
