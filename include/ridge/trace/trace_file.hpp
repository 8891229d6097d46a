#pragma once
// Trace files in either format ridge writes (src/trace/model/trace_file.cpp): Chrome trace JSON,
// the default, which Holistic Trace Analysis and PyTorch's tools read, or Perfetto's protobuf
// format (.pftrace), about a quarter of the size and read seven times faster, for long runs.
#include <cstdint>
#include <string>

#include "ridge/trace/events.hpp"

namespace ridge::trace {

enum class TraceFormat : std::uint8_t {
  from_file_name,  ///< perfetto when the file name ends in .pftrace, chrome_json otherwise
  chrome_json,     ///< Chrome trace-event JSON (ridge/trace/chrome_json.hpp)
  perfetto,        ///< Perfetto's protobuf trace format (ridge/trace/perfetto.hpp)
};

/// `format` for a file named `path`: from_file_name resolved, the others as they are.
TraceFormat resolve_trace_format(TraceFormat format, const std::string& path);

/// Writes the trace to `path` atomically in `format`.
void write_trace(const Trace& trace, const std::string& path, TraceFormat format = TraceFormat::from_file_name);

/// Reads a trace file of either format, told apart by its first bytes (a .pftrace name is
/// always read as Perfetto's format); gzip-compressed files too. Finalized. Throws UsageError
/// naming the file when it is neither.
Trace load_trace(const std::string& path);

/// Whether a trace file ridge wrote holds hardware counters: reads only its metadata, which
/// comes before the events (false for other files, and for files that cannot be read).
bool trace_has_counters(const std::string& path);

}  // namespace ridge::trace
