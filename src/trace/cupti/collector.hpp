#pragma once
// The process-wide CUPTI activity session behind ridge::Tracer and the injection library.
// CUPTI calls back through plain functions, so there is exactly one collector per process.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/trace/collection.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/trace/schedule.hpp"

namespace ridge::detail {

using trace::ApiCalls;

/// What is collected (trace::CollectionOptions, the same for every way of tracing), and how the
/// collector runs inside this process.
struct CollectorOptions : trace::CollectionOptions {
  // Tuning knobs for overhead experiments (bench/trace_overhead_cpp.sh); defaults are CUPTI's.
  bool selected_runtime = true;  ///< ApiCalls::selected: also the runtime calls (false: driver calls only)
  bool detect_other_subscriber = true;  ///< cuptiSubscribe first, for a clear error when another profiler is attached
  int per_thread_buffers = -1;          ///< CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER (-1: CUPTI's default)
  std::uint32_t flush_period_ms = 0;    ///< cuptiActivityFlushPeriod (0: CUPTI's heuristics)
  std::size_t device_buffer_bytes = 0;  ///< CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE (0: CUPTI's default)
  /// Collect only between cudaProfilerStart/cuProfilerStart and the next Stop, any number of times
  /// (`ridge trace --profiler-range`, like nsys --capture-range=cudaProfilerApi): the activity kinds
  /// are switched on when a start call returns and off (then flushed) when a stop call is entered,
  /// so outside the windows the program pays only for the selected API calls' records (see
  /// before_first_context: they stay on from the start). The profiler calls themselves are recorded
  /// by the collector's own callbacks (whatever `api_calls` says), so the windows can be cut
  /// out again from the trace by trace::apply_window.
  bool profiler_gated = false;
  /// Gated: flush the completed CUPTI buffers at each stop, so their records are processed there
  /// and not later, in the middle of untraced work.
  bool flush_at_gate_stop = true;
  /// Gated: a stop call first waits for the GPU work launched so far (cuCtxSynchronize), since
  /// CUPTI drops the records of kernels still queued or running when collection is switched off.
  bool sync_at_gate_stop = true;
  /// Started before the program made its first CUDA context (the injection library, at cuInit).
  /// Only then does CUPTI record a single API call switched on while its whole kind is off; once a
  /// context exists it records nothing for such a call, so ApiCalls::selected then records the
  /// selected calls from the collector's own callbacks on them (measured on the H200, CUDA 13.0).
  /// Switching the whole API kinds on instead would hook every call the program makes.
  bool before_first_context = false;
};

/// What the collector itself did, for overhead diagnosis.
struct CollectorStats {
  std::uint64_t buffers_requested = 0, buffers_completed = 0;
  std::uint64_t records = 0;
  double completion_seconds = 0;            ///< time spent turning records into events
  std::uint64_t completions_on_start_thread = 0;  ///< completions run on the thread that started tracing
  bool profiler_gated = false;
  std::uint64_t profiler_windows = 0;  ///< gated: windows opened by a profiler start call
  double gate_seconds = 0;             ///< gated: time spent switching collection on and off (inside the calls)
  /// CUPTI failures while switching collection on or off (the trace may then miss records or
  /// hold records from outside a window); reported, never thrown, so the trace is still written.
  std::uint64_t cupti_errors = 0;
  std::string last_cupti_error;
  bool scheduled = false;             ///< collection followed a TraceSchedule
  std::uint64_t steps_seen = 0;       ///< steps begun (pushes of the step range) while tracing
  std::uint64_t steps_recorded = 0;   ///< of them, the schedule's active steps
};
/// Counters since the last collector_start.
CollectorStats collector_stats();


/// Starts recording. Throws ridge::Error (another CUPTI subscriber attached, CUPTI failure) or
/// UsageError (already running).
void collector_start(const CollectorOptions& options);
/// Stops recording and flushes every buffer; returns the finalized events collected since start.
/// Safe to call when not running (returns an empty trace). `process_exiting`: called from an exit
/// handler, so the counter profiler is decoded but not torn down.
trace::Trace collector_stop(bool process_exiting = false);
bool collector_running();
/// CUPTI's current timestamp (the clock every event uses), in ns.
trace::Nanoseconds collector_now();
/// Path of the CUPTI library loaded in this process ("" if unknown).
std::string cupti_library_path();
/// The distinct CUPTI libraries loaded in this process (paths; one file reached by two names
/// counts once).
std::vector<std::string> loaded_cupti_libraries();
/// Throws ridge::Error when more than one CUPTI is loaded: the two would each hook the driver.
void require_one_cupti();

}  // namespace ridge::detail
