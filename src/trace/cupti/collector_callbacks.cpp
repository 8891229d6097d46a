// CUPTI's callback subscriber of the collector (cuptiSubscribe): the selected API calls of an
// in-process trace recorded from their enter and exit callbacks, and every callback handed to its
// concern: the profiler calls to the gate (collector_gating.cpp), NVTX pushes to the steps
// (collector_steps.cpp), launches and context teardown to the hardware counters
// (collector_counters.cpp).
#include <cupti.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "trace/cupti/collector_state.hpp"
#include "trace/cupti/kernel_counters.hpp"
#include "trace/cupti/profiler_gate.hpp"

namespace ridge::detail::collector {

namespace {

/// This process's id without a system call: glibc's getpid() is one on every use (it no longer
/// caches the id), and the callbacks ask once per recorded call. A fork()ed child updates it.
std::atomic<pid_t> cached_process_id{0};

bool is_profiler_start(bool runtime, std::uint32_t cbid) {
  return runtime ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
}

/// A selected call recorded from its enter and exit callbacks (switch_call_callbacks): the enter
/// time travels to the exit in CUPTI's per-call slot. CUPTI's correlation id is the one its kernel,
/// copy and memset records carry.
void record_selected_call(State& s, bool runtime, std::uint32_t cbid, const CUpti_CallbackData& info) {
  if (!s.callback_calls.load(std::memory_order_relaxed) || info.correlationData == nullptr) return;
  if (info.callbackSite == CUPTI_API_ENTER) {
    *info.correlationData = collector_now();
    return;
  }
  const Nanoseconds start = *info.correlationData, end = collector_now();
  // An exit whose enter came before collection began has no start of this session.
  if (info.callbackSite != CUPTI_API_EXIT || start < s.session_start.load(std::memory_order_relaxed) || start > end) return;
  if (s.pid != this_process()) return;  // a fork()ed child
  static thread_local const auto thread = static_cast<std::uint32_t>(syscall(SYS_gettid));
  trace::ApiCall a;
  a.domain = runtime ? trace::ApiDomain::runtime : trace::ApiDomain::driver;
  a.process = static_cast<std::uint32_t>(s.pid);
  a.thread = thread;
  a.start = start;
  a.end = end;
  a.correlation = info.correlationId;
  std::lock_guard<std::mutex> lock(s.data);
  a.name = api_name(s, runtime, cbid);
  s.trace.api_calls.push_back(a);
}

}  // namespace

void refresh_process_id() { cached_process_id.store(getpid(), std::memory_order_relaxed); }
pid_t this_process() { return cached_process_id.load(std::memory_order_relaxed); }

/// CUPTI's callback: the selected calls of an in-process trace (record_selected_call), and, gated,
/// the four profiler calls (cudaProfilerStart/Stop, cuProfilerStart/Stop). Runs on the program's
/// thread, inside the call: never throws.
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (data == nullptr) return;
  State& s = state();
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    on_nvtx_push(s, cbid, *static_cast<const CUpti_NvtxData*>(data));
    return;
  }
  if (counters_enabled()) route_to_counters(s, domain, cbid, data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (only_counted(s, runtime, cbid)) return;  // switched on for the counters alone: not a recorded call
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (!is_profiler_call(runtime, cbid) || !s.gated.load()) {
    record_selected_call(s, runtime, cbid, *info);
    return;
  }
  if (!s.running.load() || s.pid != this_process()) return;
  thread_local ProfilerCallNesting nesting;  // cudaProfilerStart calls cuProfilerStart: act once
  thread_local std::uint64_t nesting_session = 0;
  if (const std::uint64_t current = s.session.load(); nesting_session != current) {
    nesting = ProfilerCallNesting{};  // a call left open by an earlier session must not count
    nesting_session = current;
  }
  const Nanoseconds now = collector_now();
  const auto t0 = std::chrono::steady_clock::now();
  if (info->callbackSite == CUPTI_API_ENTER) {
    if (!nesting.enter(now, runtime, cbid, info->correlationId)) return;
    if (is_profiler_start(runtime, cbid)) return;  // a start acts when it returns
    std::lock_guard<std::mutex> lock(s.gate);
    if (!s.running.load()) return;
    gate_close(s, now);
    s.gate_ns += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    return;
  }
  if (info->callbackSite != CUPTI_API_EXIT || !nesting.exit()) return;
  std::lock_guard<std::mutex> lock(s.gate);
  if (!s.running.load()) return;
  record_profiler_call(s, nesting, now);
  if (is_profiler_start(nesting.runtime, nesting.cbid)) gate_open(s, now);
  s.gate_ns += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace ridge::detail::collector
