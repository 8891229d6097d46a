#pragma once
// The process-wide CUPTI activity session behind ridge::Tracer and the injection library.
// CUPTI calls back through plain functions, so there is exactly one collector per process.
#include <cstddef>
#include <string>

#include "ridge/trace.hpp"

namespace ridge::trace_detail {

/// Which CUDA runtime and driver API calls become records. Every recorded call costs the traced
/// thread time, so the default records only the calls a trace is read for.
enum class ApiCalls {
  none,      ///< no API records (kernels then have no launch call: no flow arrows)
  selected,  ///< launches, copies, memsets, synchronizations, event records, allocations,
             ///< profiler start/stop, module loads, graph capture (per-call enables, no others hooked)
  most,      ///< every call except trivial queries (cudaGetDevice, ...)
  all,       ///< every runtime and driver call
};

struct CollectorOptions {
  ApiCalls api_calls = ApiCalls::selected;
  bool synchronization = true;  ///< CUPTI_ACTIVITY_KIND_SYNCHRONIZATION records
  bool nvtx = true;             ///< CUPTI_ACTIVITY_KIND_MARKER records (NVTX ranges and marks)
  std::size_t buffer_bytes = 32u << 20;
};

/// Parses "none", "selected", "most" or "all"; throws UsageError otherwise.
ApiCalls parse_api_calls(const std::string& text);

/// Starts recording. Throws ridge::Error (another CUPTI subscriber attached, CUPTI failure) or
/// UsageError (already running).
void collector_start(const CollectorOptions& options);
/// Stops recording and flushes every buffer; returns the finalized events collected since start.
/// Safe to call when not running (returns an empty trace).
trace::Trace collector_stop();
bool collector_running();
/// CUPTI's current timestamp (the clock every event uses), in ns.
trace::Nanoseconds collector_now();
/// Path of the CUPTI library loaded in this process ("" if unknown).
std::string cupti_library_path();

}  // namespace ridge::trace_detail
