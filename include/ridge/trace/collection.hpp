#pragma once
// What a trace collects, one set of options for every way of tracing: ridge::Tracer in this
// process (TracerOptions is this type), `ridge trace -- CMD` and trace_program (the collection of
// ProgramTraceOptions, passed to the injection library in the program's environment), and
// ridge.trace in Python. CPU-only (src/trace/model/collection.cpp).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ridge/trace/kernel_counters.hpp"
#include "ridge/trace/schedule.hpp"

namespace ridge::trace {

/// Which CUDA runtime and driver API calls become records. Every recorded call costs the traced
/// thread time, so the default records only the calls a trace is read for.
enum class ApiCalls {
  none,      ///< no API records (kernels then have no launch call: no flow arrows)
  selected,  ///< launches, copies, memsets, synchronizations, event records, allocations,
             ///< profiler start/stop, module loads, graph capture (per-call enables, no others hooked)
  most,      ///< every call except trivial queries (cudaGetDevice, cudaGetLastError, ...)
  all,       ///< every runtime and driver call
};
std::string to_string(ApiCalls calls);
/// "none", "selected", "most" or "all"; throws UsageError naming the four.
ApiCalls api_calls_from_string(std::string_view text);

struct CollectionOptions {
  /// Which API calls are recorded (`ridge trace --api`).
  ApiCalls api_calls = ApiCalls::selected;
  /// CUPTI synchronization records (the host's waits, each joined to its call). With them on,
  /// CUPTI hooks every CUDA runtime call of the process (cudaGetDevice 36 -> 217 ns on the H200
  /// host), which framework code pays per operator; without them the waits come from the recorded
  /// *Synchronize calls. On for ridge's own few calls; off for whole programs (for_program()).
  bool synchronization = true;
  /// With ApiCalls::selected: record the kernel launch calls (cudaLaunchKernel, cuLaunchKernel,
  /// ...) too, from CUPTI callbacks on the launching thread (~0.6 us per launch from Python on the
  /// H200). false: each kernel carries the time its launch was queued instead (~0.07 us per
  /// launch), which places it in steps and ranges and times launch latency, but gives no
  /// launch-call events or flow arrows, and a kernel counts in a range of any thread that was open
  /// when it was queued. ridge.trace (Python) turns it off.
  bool launch_calls = true;
  bool nvtx = true;    ///< NVTX range and mark records (steps and windows are found by them)
  bool memcpy = true;  ///< memcpy and memset records
  /// Size of each activity buffer handed to CUPTI, in bytes (CUPTI asks for as many as it needs):
  /// 1 MiB to 1 GiB.
  std::size_t buffer_bytes = std::size_t{8} << 20;
  /// Hardware counters of the selected launches (CUPTI's range profiler, replayed by the program's
  /// steps or per kernel: CounterReplay). Unset = none. Their kernels' times leave the timing analysis.
  std::optional<CounterOptions> counters;
  /// Record only the schedule's active steps (pushes of its NVTX step range): collection is off in
  /// its wait steps, on in warmup and active ones, and only the active steps are kept. Unset =
  /// everything.
  std::optional<TraceSchedule> schedule;

  /// The defaults for tracing a whole program (`ridge trace`, trace_program): no synchronization
  /// records (CUPTI would hook every runtime call) and 32 MiB buffers.
  static CollectionOptions for_program();

  static constexpr std::size_t min_buffer_bytes = std::size_t{1} << 20;
  static constexpr std::size_t max_buffer_bytes = std::size_t{1} << 30;

  /// Throws UsageError naming the field: a buffer size out of range, invalid counters or schedule,
  /// counters and schedule counting steps by different NVTX ranges, NVTX off while either needs it.
  /// Counters and schedule are checked as given (fill in their step range first).
  void validate() const;
};

}  // namespace ridge::trace
