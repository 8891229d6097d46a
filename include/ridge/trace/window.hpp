#pragma once
// Windows that keep warm-up out of a trace's numbers (src/trace/model/window.cpp).
#include <cstdint>
#include <string>

#include "ridge/trace/events.hpp"

namespace ridge::trace {

struct Window {
  double skip_seconds = 0;         ///< drop what began in the first S seconds of collection
  std::uint64_t skip_kernels = 0;  ///< drop everything launched before the (N+1)-th kernel's launch
  std::string nvtx_range;          ///< keep only what was launched inside NVTX ranges of this name
  bool profiler_range = false;     ///< keep only what lies between cudaProfilerStart and Stop calls
  /// Keep what began at or after the start of the first NVTX range of this name: the steady state
  /// from the first step on, start-up (weight loading, compilation, warm-up) left out. Nothing is
  /// kept when no such range exists (the window's description says so).
  std::string from_range;
  bool empty() const {
    return skip_seconds <= 0 && skip_kernels == 0 && nvtx_range.empty() && !profiler_range && from_range.empty();
  }
  std::string describe() const;
};

/// The part of `trace` inside the window. Host events are kept when they begin inside it; GPU
/// activity is kept when its launch call was kept (or, without one, when it was queued or, without
/// a queue time, began inside).
Trace apply_window(const Trace& trace, const Window& window);

/// A step's NVTX range may begin up to this long before the tracer saw its push (CUPTI stamps the
/// range itself), and still counts as that recorded step's.
inline constexpr Nanoseconds step_push_slack_ns = 5'000;

/// The part of a scheduled trace inside its recorded steps (trace.recorded_steps: warmup and
/// anything between recorded runs dropped), kept by the rules of apply_window. Each recorded
/// step's span begins at the start of its own NVTX range of the schedule's step range (the one
/// nearest its push) when that began up to step_push_slack_ns earlier, and ends likewise where the
/// next step's range began. A trace without a schedule is returned as is.
Trace keep_recorded_steps(const Trace& trace);

}  // namespace ridge::trace
