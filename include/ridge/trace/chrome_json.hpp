#pragma once
// Chrome trace-event JSON (Perfetto, chrome://tracing, PyTorch trace tools), written and read (src/trace/model/chrome_json.cpp).
#include <string>

#include "ridge/trace/events.hpp"

namespace ridge::trace {

/// The trace as Chrome trace-event JSON using PyTorch profiler categories and argument names:
/// timestamps in microseconds (3 decimals: nanosecond precision) relative to trace.origin().
std::string to_chrome_json(const Trace& trace);

/// Writes to_chrome_json atomically (temporary file + rename).
void write_chrome_trace(const Trace& trace, const std::string& path);

/// Rebuilds a Trace from Chrome trace JSON (ridge's or PyTorch's profiler's; finalized). Throws
/// UsageError, naming `source` and the JSON path (e.g. traceEvents[12].dur), when the text is not
/// a trace or an event's time is not a number, not finite, or beyond +-9.2e15 us. Events with a
/// negative duration are left out and counted in Trace::rejected_events. Negative timestamps are
/// valid: every time is shifted so that the earliest is 0.
Trace parse_chrome_json(const std::string& text, const std::string& source = "the trace");
/// Reads and parses a trace file, gzip-compressed or not.
Trace load_chrome_trace(const std::string& path);
/// Whether a trace file ridge wrote holds hardware counters: reads only its metadata, which comes
/// before the events (false for other files, and for files that cannot be read).
bool chrome_trace_has_counters(const std::string& path);

}  // namespace ridge::trace
