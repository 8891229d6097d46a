#pragma once
// The process-wide CUPTI activity session behind ridge::Tracer and the injection library.
// CUPTI calls back through plain functions, so there is exactly one collector per process.
#include <cstddef>
#include <string>

#include "ridge/trace.hpp"

namespace ridge::trace_detail {

struct CollectorOptions {
  bool all_api_calls = false;
  std::size_t buffer_bytes = 8u << 20;
};

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
