#pragma once
// Environment variables through which `ridge trace` configures libridge_inject.so in the traced
// program (the injection library has no command line of its own).
#include <string>
#include <utility>
#include <vector>

#include "ridge/trace/collection.hpp"

namespace ridge::detail::inject_env {

inline constexpr const char* output = "RIDGE_TRACE_OUTPUT";        ///< Chrome trace path ("" = none)
inline constexpr const char* summary = "RIDGE_TRACE_SUMMARY";      ///< analysis JSON path
inline constexpr const char* owner = "RIDGE_TRACE_OWNER";          ///< claim file: the first CUDA process owns the output
inline constexpr const char* command = "RIDGE_TRACE_COMMAND";      ///< the traced command, for the trace's metadata
inline constexpr const char* skip_seconds = "RIDGE_TRACE_SKIP_SECONDS";
inline constexpr const char* skip_kernels = "RIDGE_TRACE_SKIP_KERNELS";
inline constexpr const char* nvtx_range = "RIDGE_TRACE_NVTX_RANGE";
/// keep what began from the first NVTX range of this name on (--steady-state: the step range)
inline constexpr const char* from_range = "RIDGE_TRACE_FROM_RANGE";
/// "1": collect only between cudaProfilerStart/Stop (CUPTI switched on and off there), keep only that
inline constexpr const char* profiler_range = "RIDGE_TRACE_PROFILER_RANGE";
inline constexpr const char* step_range = "RIDGE_TRACE_STEP_RANGE";
inline constexpr const char* top = "RIDGE_TRACE_TOP";
// What is collected: trace::CollectionOptions, written and read only by the two functions below.
inline constexpr const char* api = "RIDGE_TRACE_API";                    ///< none | selected | most | all
inline constexpr const char* sync = "RIDGE_TRACE_SYNC";                  ///< "1": synchronization records
inline constexpr const char* launch_calls = "RIDGE_TRACE_LAUNCH_CALLS";  ///< "0": kernel launch calls not recorded
inline constexpr const char* nvtx = "RIDGE_TRACE_NVTX";                  ///< "0": no NVTX range records
inline constexpr const char* memcpy = "RIDGE_TRACE_MEMCPY";              ///< "0": no memcpy/memset records
inline constexpr const char* buffer_bytes = "RIDGE_TRACE_BUFFER_BYTES";  ///< each CUPTI activity buffer
inline constexpr const char* counters = "RIDGE_TRACE_COUNTERS";          ///< trace::CounterOptions as JSON ("" = none)
inline constexpr const char* schedule = "RIDGE_TRACE_SCHEDULE";          ///< trace::TraceSchedule as JSON ("" = none)

/// The variables that carry `options` to the injection library (src/trace/model/collection.cpp).
std::vector<std::pair<std::string, std::string>> collection_environment(const trace::CollectionOptions& options);
/// What collection_environment wrote, read back in the traced program; variables not set keep
/// CollectionOptions::for_program()'s defaults. Validated; throws UsageError for a malformed value.
trace::CollectionOptions collection_from_environment();

// Overhead-tuning knobs, not set by `ridge trace` (bench/trace_overhead_cpp.sh sweeps them).
inline constexpr const char* detect_subscriber = "RIDGE_TRACE_DETECT_SUBSCRIBER";  ///< "0": skip the cuptiSubscribe check
inline constexpr const char* per_thread_buffers = "RIDGE_TRACE_PER_THREAD_BUFFERS";  ///< "0" or "1" (unset: CUPTI's default)
inline constexpr const char* api_domains = "RIDGE_TRACE_API_DOMAINS";  ///< "driver": selected calls of the driver API only
inline constexpr const char* flush_period_ms = "RIDGE_TRACE_FLUSH_PERIOD_MS";
inline constexpr const char* device_buffer_mb = "RIDGE_TRACE_DEVICE_BUFFER_MB";
/// "0": with profiler_range on, record everything and only cut the windows out afterwards (the
/// behaviour before gating), instead of switching CUPTI on and off at the profiler calls
inline constexpr const char* profiler_gate = "RIDGE_TRACE_PROFILER_GATE";
/// "0": gated, do not flush CUPTI's completed buffers at each profiler stop call
inline constexpr const char* gate_flush = "RIDGE_TRACE_GATE_FLUSH";
inline constexpr const char* gate_sync = "RIDGE_TRACE_GATE_SYNC";  ///< "0": a stop does not wait for the GPU

}  // namespace ridge::detail::inject_env
