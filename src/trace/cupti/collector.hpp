#pragma once
// The process-wide CUPTI activity session behind ridge::Tracer and the injection library.
// CUPTI calls back through plain functions, so there is exactly one collector per process.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/trace/events.hpp"
#include "ridge/trace/schedule.hpp"

namespace ridge::detail {

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
  /// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION records. Costly in framework code: with this kind on,
  /// CUPTI intercepts every CUDA runtime call (cudaGetDevice 36 -> 217 ns on the H200 host), so
  /// `ridge trace` leaves it off unless asked; the in-process Tracer (ridge's own few calls) keeps it.
  bool synchronization = true;
  bool nvtx = true;             ///< CUPTI_ACTIVITY_KIND_MARKER records (NVTX ranges and marks)
  bool memcpy = true;            ///< CUPTI_ACTIVITY_KIND_MEMCPY and MEMSET records
  /// ApiCalls::selected: record the kernel launch calls too. In-process (recorded from callbacks)
  /// each costs the launching thread ~0.6 us (H200, empty kernels launched from Python). Without
  /// them, each kernel record carries the time its launch was queued instead (CUPTI's latency
  /// timestamps, ~0.07 us per launch), which places it in steps and ranges and times its latency.
  bool launch_calls = true;
  std::size_t buffer_bytes = 32u << 20;
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
  /// Hardware counters of the selected launches (CUPTI's range profiler, kernel replay): unset = none.
  std::optional<trace::CounterOptions> counters;
  /// Record only the schedule's active steps (TracerOptions's schedule): at each push of its step
  /// range, collection is switched on (warmup, active) or off (wait, done) as at the profiler calls
  /// of profiler_gated, and the selected calls are recorded from callbacks switched with it, so a
  /// waiting step costs the program no CUPTI hook but the NVTX push callback. At stop, what lies
  /// outside the active steps is dropped (trace::keep_recorded_steps). Not with profiler_gated.
  std::optional<trace::TraceSchedule> schedule;
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

/// Parses "none", "selected", "most" or "all"; throws UsageError otherwise.
ApiCalls parse_api_calls(const std::string& text);

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
