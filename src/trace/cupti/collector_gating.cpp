// --profiler-range: the CUPTI collector's collection switched on at each profiler start call
// (cudaProfilerStart, cuProfilerStart) and off at each stop, and the profiler calls as API records.
// CUPTI's callback on those calls is collector_callbacks.cpp.
#include <cupti.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "trace/cupti/collector_state.hpp"
#include "trace/cupti/profiler_gate.hpp"

namespace ridge::detail::collector {

namespace {

/// cuCtxSynchronize from the driver already in the process (the injection library links no
/// driver stub); returns the CUresult, or -1 when the driver has no such symbol.
int synchronize_current_context() {
  using Fn = int (*)();
  static const Fn fn = [] {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // loaded with RTLD_LOCAL: not in RTLD_DEFAULT
    return reinterpret_cast<Fn>(driver ? dlsym(driver, "cuCtxSynchronize") : nullptr);
  }();
  return fn ? fn() : -1;
}

}  // namespace

/// A profiler start call returned at `now` (gate held by the caller): collection on.
void gate_open(State& s, Nanoseconds now) {
  if (!s.windows.open(now)) return;  // already collecting
  try {
    enable_collection(s);
  } catch (const std::exception& e) {
    note_cupti_error(s, fmt::format("could not switch tracing on at a profiler start call: {}", e.what()));
  }
}

/// A profiler stop call was entered at `now` (gate held by the caller): collection off, and the
/// completed buffers handed over now, outside the program's untraced work.
void gate_close(State& s, Nanoseconds now) {
  if (!s.windows.close(now)) return;  // not collecting
  // CUPTI drops the records of kernels still queued or running when their kind is switched off
  // (2 of 3 in the H200 test): the stop first waits for the work launched so far.
  if (s.options.sync_at_gate_stop)
    if (const int r = synchronize_current_context(); r != 0)
      note_cupti_error(s, fmt::format("cuCtxSynchronize at a profiler stop call returned {}: kernels still running "
                                      "may be missing from the trace", r));
  if (std::string error = disable_collection(s); !error.empty())
    note_cupti_error(s, fmt::format("could not switch tracing off at a profiler stop call: {}", error));
  if (!s.options.flush_at_gate_stop) return;
  if (const CUptiResult r = cuptiActivityFlushAll(0); r != CUPTI_SUCCESS)
    note_cupti_error(s, fmt::format("cuptiActivityFlushAll at a profiler stop call failed: {}", detail::status_text(r)));
}

/// The profiler call as an API record: CUPTI's own record of it cannot be relied on, since
/// collection is switched inside the call.
void record_profiler_call(State& s, const ProfilerCallNesting& call, Nanoseconds exit) {
  trace::ApiCall a;
  a.domain = call.runtime ? trace::ApiDomain::runtime : trace::ApiDomain::driver;
  a.process = static_cast<std::uint32_t>(getpid());
  a.thread = static_cast<std::uint32_t>(syscall(SYS_gettid));
  a.start = call.enter_ns;
  a.end = std::max(exit, call.enter_ns);
  a.correlation = call.correlation;
  std::lock_guard<std::mutex> lock(s.data);
  a.name = api_name(s, call.runtime, call.cbid);
  s.trace.api_calls.push_back(a);
}

/// The four profiler-call callbacks, on or off.
void enable_profiler_callbacks(State& s, bool enable) {
  const std::uint32_t on = enable ? 1 : 0;
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000));
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000));
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart));
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
}

}  // namespace ridge::detail::collector
