#pragma once
// Perfetto's protobuf trace format (.pftrace), written and read (src/trace/model/perfetto.cpp):
// a compact alternative to Chrome JSON for long runs, which Perfetto's UI and trace processor
// open natively. One TracePacket per slice begin and end on a track per host thread and GPU
// stream; names, categories and argument names interned once; the arguments and metadata are
// those of the Chrome trace (ridge/trace/chrome_json.hpp), so both read back to the same Trace.
#include <string>
#include <string_view>

#include "ridge/trace/events.hpp"

namespace ridge::trace {

/// The trace as a Perfetto protobuf trace (perfetto.protos.Trace): times in nanoseconds
/// relative to trace.origin(), which the metadata keeps.
std::string to_perfetto_trace(const Trace& trace);
/// Writes to_perfetto_trace atomically (temporary file + rename).
void write_perfetto_trace(const Trace& trace, const std::string& path);

/// Rebuilds a Trace from a Perfetto trace ridge wrote (finalized). Throws UsageError naming
/// `source` when the bytes are not a protobuf trace. Events of categories ridge does not write
/// are skipped; slices that never end are left out and counted in Trace::rejected_events.
Trace parse_perfetto_trace(std::string_view bytes, const std::string& source = "the trace");
/// Reads a Perfetto trace file (gzip-compressed or not) a packet at a time.
Trace load_perfetto_trace(const std::string& path);
/// Whether a Perfetto trace ridge wrote holds hardware counters: reads its packets only up to
/// the metadata, which comes before the events (false for files that cannot be read).
bool perfetto_trace_has_counters(const std::string& path);

}  // namespace ridge::trace
