// The CUPTI activity collector: enables the activity kinds and the callbacks (API calls, NVTX,
// --profiler-range, --schedule, counters), and flushes at stop and at exit. The state it shares
// is collector_state.hpp; CUPTI's activity records become trace events in collector_activity.cpp.
#include "trace/cupti/collector.hpp"
#include "trace/cupti/collector_state.hpp"

#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/window.hpp"
#include "trace/cupti/kernel_counters.hpp"
#include "trace/cupti/profiler_gate.hpp"
#include "trace/cupti/step_counter.hpp"
#include "trace/model/record_times.hpp"

namespace ridge::detail {

std::string status_text(CUptiResult status) {
  const char* text = nullptr;
  if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  std::string out = fmt::format("{} ({})", text, static_cast<int>(status));
  if (status == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    out += ": another CUPTI client is already attached to this process (Nsight Systems, Nsight Compute, PyTorch's "
           "profiler, another ridge trace). Only one can trace at a time: stop the other profiler and run again";
  else if (status == CUPTI_ERROR_NOT_INITIALIZED)
    out += ": CUPTI could not initialize (a CUDA driver older than this CUPTI, or no driver)";
  return out;
}

}  // namespace ridge::detail

namespace ridge::detail {

namespace collector {

/// Never destroyed: CUPTI may deliver buffers during static destruction at exit.
State& state() {
  static State* s = new State;
  return *s;
}

}  // namespace collector

using namespace collector;  // the collector's state and activity records (collector_state.hpp)

namespace {

using trace::Nanoseconds;

/// Driver and runtime calls recorded by default are everything except these trivial queries,
/// which frameworks issue thousands of times per step: recording them would only add overhead.
const std::unordered_set<std::string>& trivial_api_calls() {
  static const std::unordered_set<std::string> names{
      // runtime
      "cudaGetDevice", "cudaSetDevice", "cudaGetDeviceCount", "cudaGetDeviceProperties", "cudaDeviceGetAttribute",
      "cudaGetLastError", "cudaPeekAtLastError", "cudaDriverGetVersion", "cudaRuntimeGetVersion",
      "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "cudaThreadExchangeStreamCaptureMode",
      "cudaPointerGetAttributes", "cudaFuncGetAttributes", "cudaGetFuncBySymbol", "cudaGetDriverEntryPoint",
      "cudaGetDriverEntryPointByVersion", "cudaEventQuery", "cudaStreamQuery", "cudaStreamGetPriority",
      "cudaDeviceGetStreamPriorityRange", "cudaGetErrorString", "cudaGetErrorName",
      // driver
      "cuGetProcAddress", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice", "cuCtxPushCurrent",
      "cuCtxPopCurrent", "cuDevicePrimaryCtxGetState", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetAttribute",
      "cuDeviceGetName", "cuDriverGetVersion", "cuPointerGetAttribute", "cuPointerGetAttributes", "cuGetErrorString",
      "cuGetErrorName", "cuStreamIsCapturing", "cuStreamGetCaptureInfo", "cuThreadExchangeStreamCaptureMode",
      "cuCtxGetStreamPriorityRange", "cuFuncGetAttribute", "cuKernelGetAttribute", "cuEventQuery", "cuStreamQuery",
      "cuStreamGetCtx", "cuCtxGetId", "cuStreamGetId", "cuCtxGetFlags", "cuStreamGetPriority", "cuStreamGetFlags",
  };
  return names;
}

/// Calls recorded in ApiCalls::selected mode: those a trace is read for (where work was launched,
/// copied, waited on, allocated), matched by name so new API versions are covered. Kept short:
/// CUPTI hooks only the calls enabled one by one, so everything else runs untouched.
bool selected_api_call(std::string_view name) {
  static constexpr std::string_view keys[] = {
      "Launch",  // cudaLaunchKernel(ExC), cuLaunchKernel(Ex) (Triton, cuBLAS), cudaGraphLaunch, host funcs
      "Memcpy", "Memset", "Synchronize", "StreamWaitEvent", "EventRecord",
      "Malloc", "MemAlloc", "Free", "HostAlloc", "HostRegister",
      "Profiler",  // cudaProfilerStart/Stop: profiler_range needs them
      "ModuleLoad", "LibraryLoad", "BeginCapture", "EndCapture", "GraphInstantiate", "GraphUpload",
  };
  for (std::string_view key : keys)
    if (name.find(key) != std::string_view::npos) return true;
  return false;
}

/// A call that launches a kernel (not a graph, host function or copy): the calls whose records
/// CollectorOptions::launch_calls = false replaces with the kernels' queue times.
bool kernel_launch_call(std::string_view name) {
  return name.find("LaunchKernel") != std::string_view::npos || name.find("LaunchCooperativeKernel") != std::string_view::npos ||
         name == "cudaLaunch" || name == "cuLaunch" || name.starts_with("cuLaunchGrid");
}

/// Whether the selected calls (ApiCalls::selected) are recorded from the collector's own callbacks
/// on them: after the first context (CUPTI then records no single call switched on alone), and
/// under a schedule, whose waiting steps must not pay for records that are dropped anyway.
bool calls_by_callback(const CollectorOptions& o) {
  return o.api_calls == ApiCalls::selected && (!o.before_first_context || o.schedule);
}

/// Whether kernel records carry their launch's queue time (CollectorOptions::launch_calls).
bool queue_times(const CollectorOptions& o) { return o.api_calls == ApiCalls::selected && !o.launch_calls; }

/// The activity kinds that record what the program does, in the order they are enabled. Gated
/// (--profiler-range) they are on only inside the windows; CUPTI_ACTIVITY_KIND_DEVICE (device
/// names, no per-call cost) stays on for the whole session.
std::vector<CUpti_ActivityKind> collection_kinds(const CollectorOptions& o) {
  std::vector<CUpti_ActivityKind> kinds{
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,  // never CUPTI_ACTIVITY_KIND_KERNEL: it serializes kernels
  };
  if (o.memcpy) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  // Whole API kinds only where (nearly) everything is recorded; ApiCalls::selected enables single
  // calls instead, so CUPTI does not intercept the thousands of queries a framework makes per step.
  if (o.api_calls == ApiCalls::most || o.api_calls == ApiCalls::all) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  }
  if (o.synchronization) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (o.nvtx) kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER);
  kinds.push_back(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  return kinds;
}

bool is_profiler_start(bool runtime, std::uint32_t cbid) {
  return runtime ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
}

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_RUNTIME: return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER: return "DRIVER";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_MARKER: return "MARKER";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return "EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_DEVICE: return "DEVICE";
    default: return "?";
  }
}

void load_api_names(State& s) {
  if (!s.runtime_names.empty()) return;
  s.runtime_names.resize(CUPTI_RUNTIME_TRACE_CBID_SIZE);
  s.driver_names.resize(CUPTI_DRIVER_TRACE_CBID_SIZE);
  for (std::uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) == CUPTI_SUCCESS && name)
      s.runtime_names[cbid] = trace::strip_api_version(name);
  }
  for (std::uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS && name)
      s.driver_names[cbid] = trace::strip_api_version(name);
  }
}

/// Works out this session's selected calls (ApiCalls::selected) and trivial ones (ApiCalls::most).
void plan_api_calls(State& s, const CollectorOptions& o) {
  s.selected_runtime_calls.clear();
  s.selected_driver_calls.clear();
  s.trivial_runtime_calls.clear();
  s.trivial_driver_calls.clear();
  const auto& trivial = trivial_api_calls();
  for (std::uint32_t cbid = 1; cbid < s.runtime_names.size(); ++cbid) {
    const std::string& name = s.runtime_names[cbid];
    if (name.empty()) continue;
    if (o.api_calls == ApiCalls::selected && o.selected_runtime && selected_api_call(name) &&
        (o.launch_calls || !kernel_launch_call(name)))
      s.selected_runtime_calls.push_back(cbid);
    if (o.api_calls == ApiCalls::most && trivial.count(name)) s.trivial_runtime_calls.push_back(cbid);
  }
  for (std::uint32_t cbid = 1; cbid < s.driver_names.size(); ++cbid) {
    const std::string& name = s.driver_names[cbid];
    if (name.empty()) continue;
    if (o.api_calls == ApiCalls::selected && selected_api_call(name) && (o.launch_calls || !kernel_launch_call(name)))
      s.selected_driver_calls.push_back(cbid);
    if (o.api_calls == ApiCalls::most && trivial.count(name)) s.trivial_driver_calls.push_back(cbid);
  }
}

[[noreturn]] void throw_cupti(CUptiResult r, const std::string& what) {
  throw Error(fmt::format("cannot start the CUDA tracer: {} failed: {}", what, detail::status_text(r)));
}

std::string disable_collection(State& s);

template <typename Check>
void disable_selected_calls(State& s, Check&& check) {
  for (std::uint32_t cbid : s.selected_runtime_calls) check(cuptiActivityEnableRuntimeApi(cbid, 0), "cuptiActivityEnableRuntimeApi");
  for (std::uint32_t cbid : s.selected_driver_calls) check(cuptiActivityEnableDriverApi(cbid, 0), "cuptiActivityEnableDriverApi");
}

/// The callbacks that record the selected calls (ApiCalls::selected after the first context), on
/// or off. Gated, the profiler calls keep their own callbacks (enable_profiler_callbacks).
template <typename Check>
void switch_call_callbacks(State& s, bool on, Check&& check) {
  s.callback_calls = on;
  const bool gated = s.gated.load();
  for (const auto& [domain, calls] : {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, &s.selected_runtime_calls},
                                      std::pair{CUPTI_CB_DOMAIN_DRIVER_API, &s.selected_driver_calls}})
    for (std::uint32_t cbid : *calls)
      if (!(gated && is_profiler_call(domain == CUPTI_CB_DOMAIN_RUNTIME_API, cbid)))
        check(cuptiEnableCallback(on ? 1 : 0, s.subscriber, domain, cbid), "cuptiEnableCallback");
}

/// Switches the collection kinds and per-call enables on. On failure switches off what it had
/// switched on and throws ridge::Error.
void enable_collection(State& s) {
  for (std::size_t i = 0; i < s.kinds.size(); ++i) {
    if (s.marker_only && s.kinds[i] == CUPTI_ACTIVITY_KIND_MARKER) continue;  // on already, for this step's push
    const CUptiResult r = cuptiActivityEnable(s.kinds[i]);
    if (r == CUPTI_SUCCESS) continue;
    // Best-effort undo on the way to reporting the failure that matters.
    for (std::size_t j = 0; j < i; ++j) cuptiActivityDisable(s.kinds[j]);
    throw_cupti(r, fmt::format("cuptiActivityEnable({})", kind_name(s.kinds[i])));
  }
  s.collecting = true;
  s.marker_only = false;
  try {
    // After the kinds: enabling CUPTI_ACTIVITY_KIND_RUNTIME/DRIVER overrides earlier per-call settings.
    for (std::uint32_t cbid : s.trivial_runtime_calls) RIDGE_CHECK(cuptiActivityEnableRuntimeApi(cbid, 0));
    for (std::uint32_t cbid : s.trivial_driver_calls) RIDGE_CHECK(cuptiActivityEnableDriverApi(cbid, 0));
    // Selected calls alone work only when switched on before the first context (the injection
    // library; gated, once for all windows). After it, the whole API kinds would have to be on,
    // which hooks every call the program makes (PyTorch makes several per operator), so an
    // in-process tracer records the selected calls from callbacks on those calls alone.
    const bool filter = calls_by_callback(s.options);
    if (s.sticky_calls) {
      // on since the start
    } else if (filter) {
      switch_call_callbacks(s, true, [](CUptiResult r, const char* what) {
        if (r != CUPTI_SUCCESS) throw_cupti(r, what);
      });
    } else {
      for (std::uint32_t cbid : s.selected_runtime_calls) RIDGE_CHECK(cuptiActivityEnableRuntimeApi(cbid, 1));
      for (std::uint32_t cbid : s.selected_driver_calls) RIDGE_CHECK(cuptiActivityEnableDriverApi(cbid, 1));
    }
  } catch (...) {
    disable_collection(s);  // best-effort undo; the first failure is the one reported
    throw;
  }
}

/// Switches everything enable_collection switched on off again; tries every call and returns the
/// first failure ("" when all succeeded), so a stop never throws away the trace.
std::string disable_collection(State& s) {
  std::string error;
  auto check = [&](CUptiResult r, const std::string& what) {
    if (r != CUPTI_SUCCESS && error.empty()) error = fmt::format("{} failed: {}", what, detail::status_text(r));
  };
  for (CUpti_ActivityKind kind : s.kinds) check(cuptiActivityDisable(kind), fmt::format("cuptiActivityDisable({})", kind_name(kind)));
  if (s.callback_calls.load()) switch_call_callbacks(s, false, check);
  if (!s.sticky_calls) disable_selected_calls(s, check);
  s.collecting = false;
  return error;
}

/// Keeps a CUPTI failure for the summary and says it on stderr (the program's own output goes on).
void note_cupti_error(State& s, const std::string& message) {
  ++s.cupti_errors;
  s.last_cupti_error = message;
  std::fprintf(stderr, "ridge trace: %s\n", message.c_str());
}

// ---- gating: --profiler-range ------------------------------------------------------------------

/// A profiler start call returned at `now` (gate held by the caller): collection on.
void gate_open(State& s, Nanoseconds now) {
  if (!s.windows.open(now)) return;  // already collecting
  try {
    enable_collection(s);
  } catch (const std::exception& e) {
    note_cupti_error(s, fmt::format("could not switch tracing on at a profiler start call: {}", e.what()));
  }
}

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

/// This process's id without a system call: glibc's getpid() is one on every use (it no longer
/// caches the id), and the callbacks ask once per recorded call. A fork()ed child updates it.
std::atomic<pid_t> cached_process_id{0};
void refresh_process_id() { cached_process_id.store(getpid(), std::memory_order_relaxed); }
pid_t this_process() { return cached_process_id.load(std::memory_order_relaxed); }

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

/// The launch, NVTX and context callbacks the hardware counters need (kernel_counters.hpp).
void route_to_counters(State& s, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (s.pid != this_process()) return;  // a fork()ed child
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    counters_on_context_destroy(static_cast<const CUpti_ResourceData*>(data)->context);
  } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < s.counted_runtime_launch.size() &&
             s.counted_runtime_launch[cbid] != 0) {
    counters_on_runtime_launch(*static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < s.counted_launch.size() && s.counted_launch[cbid] != 0) {
    const auto& info = *static_cast<const CUpti_CallbackData*>(data);
    if (s.counted_launch[cbid] == 1)
      counters_on_launch(info, cbid);
    else
      counters_on_graph_launch(info);
  }
}

/// Kernels replayed for their counters have no GPU times: each one is placed at its launch call,
/// lasting its profiled pass (gpu__time_duration), and marked by its counter row. One without a
/// row was not replayed but unfinished: incomplete, as without counters.
void place_replayed_kernels(State& s) {
  trace::Trace& t = s.trace;
  const auto duration = t.counters.column("gpu__time_duration.sum");
  for (trace::Kernel& k : s.replayed_kernels) {
    const trace::CounterRow* row = t.counters.row_for(k.correlation);
    if (row == nullptr || row->launch_ns == 0) {
      ++t.incomplete_records;
      continue;
    }
    const double ns = duration && std::isfinite(row->values[*duration]) ? row->values[*duration] : 0;
    k.start = row->launch_ns;
    k.end = k.start + static_cast<Nanoseconds>(std::max(ns, 1.0));
    k.queued = 0;
    t.kernels.push_back(k);
  }
  s.replayed_kernels.clear();
}

/// Whether a call's callback is on only for the hardware counters (a launch the trace does not record).
bool only_counted(const State& s, bool runtime, std::uint32_t cbid) {
  const auto& counted = runtime ? s.counted_runtime_launch : s.counted_launch;
  if (cbid >= counted.size() || counted[cbid] == 0) return false;
  const auto& selected = runtime ? s.selected_runtime_calls : s.selected_driver_calls;
  return std::find(selected.begin(), selected.end(), cbid) == selected.end();
}

/// The callbacks of the hardware counters, on or off: every driver kernel and graph launch (the
/// runtime's launches reach the driver's), context teardown. (Steps: switch_step_callbacks.)
template <typename Check>
void switch_counter_callbacks(State& s, bool on, Check&& check) {
  const std::uint32_t enable = on ? 1 : 0;
  s.counted_launch.assign(s.driver_names.size(), 0);
  s.counted_runtime_launch.assign(s.runtime_names.size(), 0);
  for (std::uint32_t cbid = 1; cbid < s.runtime_names.size(); ++cbid) {
    if (s.runtime_names[cbid].empty() || !kernel_launch_call(s.runtime_names[cbid])) continue;
    s.counted_runtime_launch[cbid] = on ? 1 : 0;
    check(cuptiEnableCallback(enable, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid), "cuptiEnableCallback(runtime launch)");
  }
  for (std::uint32_t cbid = 1; cbid < s.driver_names.size(); ++cbid) {
    const std::string& name = s.driver_names[cbid];
    if (name.empty()) continue;
    const std::uint8_t kind = kernel_launch_call(name) ? 1 : name.starts_with("cuGraphLaunch") ? 2 : 0;
    if (kind == 0) continue;
    s.counted_launch[cbid] = on ? kind : 0;
    check(cuptiEnableCallback(enable, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid), "cuptiEnableCallback(launch)");
  }
  check(cuptiEnableCallback(enable, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
        "cuptiEnableCallback(context destroy)");
}

// ---- steps and the schedule: --schedule ----------------------------------------------------------

/// A step begins (gate held): the schedule's switch for it. The step before it ends here; the
/// collection switches on (warmup, active) or off (wait, done: after waiting for the GPU, as at a
/// profiler stop); the NVTX records alone go on one step before a collected one, so that its own
/// range is recorded whole.
void schedule_step(State& s, std::uint64_t step, Nanoseconds now) {
  const trace::StepSwitch next = trace::step_switch(*s.options.schedule, step);
  if (s.step_open) {
    s.recorded_steps.back().end_ns = std::max(now, s.recorded_steps.back().start_ns);
    s.step_open = false;
  }
  if (next.collect)
    gate_open(s, now);  // nothing when collecting already
  else if (s.collecting)
    gate_close(s, now);
  if (next.nvtx_only && !s.collecting && !s.marker_only && s.options.nvtx) {
    if (const CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER); r == CUPTI_SUCCESS)
      s.marker_only = true;
    else
      note_cupti_error(s, fmt::format("cuptiActivityEnable(MARKER) before step {} failed: {}: its NVTX range may be "
                                      "missing", step + 1, detail::status_text(r)));
  }
  if (next.recorded()) {
    s.recorded_steps.push_back({step, now, now});
    s.step_open = true;
  }
}

/// The name of a pushed NVTX range (nullptr when it has none CUPTI gives as ASCII).
const char* pushed_range_name(CUpti_CallbackId cbid, const CUpti_NvtxData& info) {
  if (info.functionParams == nullptr) return nullptr;
  if (cbid == CUPTI_CBID_NVTX_nvtxRangePushA) return static_cast<const nvtxRangePushA_params*>(info.functionParams)->message;
  if (cbid == CUPTI_CBID_NVTX_nvtxRangePushEx) {
    const nvtxEventAttributes_t* a = static_cast<const nvtxRangePushEx_params*>(info.functionParams)->eventAttrib;
    if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii;
  }
  return nullptr;
}

/// An NVTX push: a step begins when it is the step range's, counted once for the schedule and the
/// hardware counters' step window. Runs on the program's thread, inside the push: never throws.
void on_nvtx_push(State& s, CUpti_CallbackId cbid, const CUpti_NvtxData& info) {
  if (!s.running.load() || s.pid != this_process()) return;
  const char* name = pushed_range_name(cbid, info);
  if (name == nullptr) return;
  std::optional<std::uint64_t> step;
  if (s.scheduled.load()) {
    const Nanoseconds now = collector_now();
    const auto t0 = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(s.gate);
    if (!s.running.load()) return;
    step = s.steps.on_push(name);  // under the gate: steps switch in the order they are counted
    if (!step) return;
    schedule_step(s, *step, now);
    s.gate_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  } else {
    step = s.steps.on_push(name);
  }
  if (step && counters_enabled()) counters_on_step(*step);
}

/// A session's steps (gate held): counted by the schedule's step range, else by the counters'
/// step window's (none without either).
void begin_steps(State& s, const CollectorOptions& options) {
  s.scheduled = options.schedule.has_value();
  s.marker_only = false;
  s.recorded_steps.clear();
  s.step_open = false;
  s.steps.reset(options.schedule                              ? options.schedule->step_range
                : options.counters && options.counters->steps ? options.counters->step_range
                                                              : std::string());
}

/// A scheduled session ends at `stop` (gate held): the last recorded step and collection window
/// end there, and the NVTX records on alone for a next step go off.
void end_steps(State& s, Nanoseconds stop) {
  if (s.step_open) s.recorded_steps.back().end_ns = std::max(stop, s.recorded_steps.back().start_ns);
  s.step_open = false;
  s.windows.close(stop);
  if (!s.marker_only) return;
  if (const CUptiResult r = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MARKER); r != CUPTI_SUCCESS)
    note_cupti_error(s, fmt::format("cuptiActivityDisable(MARKER) failed at the end: {}", detail::status_text(r)));
  s.marker_only = false;
}

/// The NVTX push callbacks that count steps, on or off.
template <typename Check>
void switch_step_callbacks(State& s, bool on, Check&& check) {
  for (CUpti_CallbackId cbid : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx})
    check(cuptiEnableCallback(on ? 1 : 0, s.subscriber, CUPTI_CB_DOMAIN_NVTX, cbid), "cuptiEnableCallback(NVTX push)");
}

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

/// The four profiler-call callbacks, on or off.
void enable_profiler_callbacks(State& s, bool enable) {
  const std::uint32_t on = enable ? 1 : 0;
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000));
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000));
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart));
  RIDGE_CHECK(cuptiEnableCallback(on, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
}

/// Best-effort settings that lower the cost on the traced threads; older CUPTIs may lack some.
void configure_cupti(const CollectorOptions& o) {
  std::uint8_t zeroed = 1;  // our buffers come zeroed (calloc)
  std::size_t size = sizeof(zeroed);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
  // Queue times replace the launch calls' records where those are not recorded (launch_calls): then
  // they are needed, so a failure is an error; off is CUPTI's default.
  if (queue_times(o))
    RIDGE_CHECK(cuptiActivityEnableLatencyTimestamps(1));
  else
    cuptiActivityEnableLatencyTimestamps(0);
  cuptiActivityEnableAllSyncRecords(0);     // no records for event/stream queries that found work pending
  if (o.device_buffer_bytes > 0) {
    std::size_t bytes = o.device_buffer_bytes, bytes_size = sizeof(bytes);
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &bytes_size, &bytes);
  }
  if (o.flush_period_ms > 0) cuptiActivityFlushPeriod(o.flush_period_ms);
}

/// Must precede cuptiActivityRegisterCallbacks (CUPTI's rule for this attribute).
void configure_buffers_per_thread(const CollectorOptions& o) {
  if (o.per_thread_buffers < 0) return;
  std::uint8_t per_thread = o.per_thread_buffers > 0 ? 1 : 0;
  std::size_t size = sizeof(per_thread);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread);
}

void flush_at_exit() {
  if (state().running.load() && state().pid == getpid()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

}  // namespace

Nanoseconds collector_now() {
  std::uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return 0;
  return t;
}

std::string cupti_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "";
}

std::vector<std::string> loaded_cupti_libraries() {
  struct Found {
    std::vector<std::string> paths;
    std::vector<std::pair<dev_t, ino_t>> files;
  } found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& f = *static_cast<Found*>(data);
        const std::string_view path = info->dlpi_name ? info->dlpi_name : "";
        const auto slash = path.rfind('/');
        if (path.substr(slash == std::string_view::npos ? 0 : slash + 1).rfind("libcupti.so", 0) != 0) return 0;
        struct stat st {};
        if (::stat(info->dlpi_name, &st) != 0) return 0;
        for (const auto& file : f.files)
          if (file.first == st.st_dev && file.second == st.st_ino) return 0;  // the same file by another name
        f.files.emplace_back(st.st_dev, st.st_ino);
        f.paths.emplace_back(path);
        return 0;
      },
      &found);
  return found.paths;
}

void require_one_cupti() {
  const auto paths = loaded_cupti_libraries();
  if (paths.size() <= 1) return;
  throw Error(fmt::format(
      "two copies of CUPTI are loaded in this process ({} and {}); tracing with both would crash. A framework "
      "loaded its own CUPTI beside the one ridge uses (ridge's Python package picks the one of NVIDIA's pip wheels "
      "when they are installed): make both load the same file, e.g. import the framework before ridge, or put one "
      "of the two folders first in LD_LIBRARY_PATH",
      paths[0], paths[1]));
}

bool collector_running() { return state().running.load(); }

CollectorStats collector_stats() {
  State& s = state();
  CollectorStats out;
  out.buffers_requested = s.buffers_requested.load();
  out.buffers_completed = s.buffers_completed.load();
  out.records = s.records.load();
  out.completion_seconds = static_cast<double>(s.completion_ns.load()) * 1e-9;
  out.completions_on_start_thread = s.completions_on_start_thread.load();
  std::lock_guard<std::mutex> lock(s.gate);
  out.profiler_gated = s.gated.load();
  out.profiler_windows = s.windows.count();
  out.gate_seconds = static_cast<double>(s.gate_ns) * 1e-9;
  out.cupti_errors = s.cupti_errors;
  out.last_cupti_error = s.last_cupti_error;
  out.scheduled = s.scheduled.load();
  out.steps_seen = s.steps.steps_begun();
  out.steps_recorded = s.recorded_steps.size();
  return out;
}

ApiCalls parse_api_calls(const std::string& text) {
  if (text == "none") return ApiCalls::none;
  if (text == "selected") return ApiCalls::selected;
  if (text == "most") return ApiCalls::most;
  if (text == "all") return ApiCalls::all;
  throw UsageError(fmt::format("unknown API call level '{}': use none, selected, most or all", text));
}

void collector_start(const CollectorOptions& options) {
  State& s = state();
  std::lock_guard<std::mutex> control(s.control);
  if (s.running.load()) throw UsageError("a CUDA trace is already running in this process: stop it before starting another");
  // Subscribed also where the selected calls are recorded from callbacks (in-process, selected).
  if (options.schedule) {
    options.schedule->validate();
    if (options.profiler_gated)
      throw UsageError("a schedule and profiler_range both switch collection on and off: choose one");
    trace::check_one_step_range(&*options.schedule, options.counters ? &*options.counters : nullptr);
  }
  if (s.subscriber == nullptr && (options.detect_other_subscriber || options.profiler_gated ||
                                  calls_by_callback(options) || options.counters || options.schedule)) {
    // Subscribing first detects another CUPTI client (Nsight, PyTorch's profiler) with a clear
    // error; gated, the subscriber's callbacks also see the profiler start and stop calls.
    const CUptiResult r = cuptiSubscribe(&s.subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr);
    if (r != CUPTI_SUCCESS) {
      s.subscriber = nullptr;
      throw_cupti(r, "cuptiSubscribe");
    }
  }
  load_api_names(s);
  {
    std::lock_guard<std::mutex> lock(s.data);
    s.trace = trace::Trace{};
    s.replayed_kernels.clear();
    s.kernel_names.clear();
    s.runtime_ids.clear();
    s.driver_ids.clear();
    s.open_ranges.clear();
    s.sync_contexts.clear();
    s.trace.process_id = static_cast<std::uint32_t>(getpid());
  }
  s.buffer_bytes = std::max<std::size_t>(options.buffer_bytes, 1u << 16);
  // System thread ids (gettid), so API calls and NVTX ranges name threads the way the OS does.
  RIDGE_CHECK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  if (!s.callbacks_registered) {
    configure_buffers_per_thread(options);
    RIDGE_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    s.callbacks_registered = true;
  }
  configure_cupti(options);
  s.buffers_requested = 0;
  s.buffers_completed = 0;
  s.records = 0;
  s.completion_ns = 0;
  s.completions_on_start_thread = 0;
  s.start_thread = static_cast<pid_t>(syscall(SYS_gettid));
  const Nanoseconds start = collector_now();
  if (!s.fork_hook) {
    if (const int r = pthread_atfork(nullptr, nullptr, refresh_process_id); r != 0)
      throw Error(fmt::format("cannot start the CUDA tracer: pthread_atfork failed (error {})", r));
    s.fork_hook = true;
  }
  refresh_process_id();
  s.pid = getpid();
  s.session_start = start;
  {
    std::lock_guard<std::mutex> gate(s.gate);
    s.options = options;
    s.kinds = collection_kinds(options);
    plan_api_calls(s, options);
    s.windows.clear();
    s.gate_ns = 0;
    s.cupti_errors = 0;
    s.last_cupti_error.clear();
    s.gated = options.profiler_gated;
    ++s.session;
    s.sticky_calls = false;
    if (options.profiler_gated && options.before_first_context && options.api_calls == ApiCalls::selected) {
      for (std::uint32_t cbid : s.selected_runtime_calls) RIDGE_CHECK(cuptiActivityEnableRuntimeApi(cbid, 1));
      for (std::uint32_t cbid : s.selected_driver_calls) RIDGE_CHECK(cuptiActivityEnableDriverApi(cbid, 1));
      s.sticky_calls = true;
    }
    begin_steps(s, options);
    if (options.profiler_gated) {
      enable_profiler_callbacks(s, true);  // collection waits for the first start call
    } else if (!options.schedule || trace::step_switch(*options.schedule, 0).collect) {
      // Scheduled, collection waits for the first collected step, unless step 0 is one (then its
      // push must find the NVTX records on).
      if (options.schedule) s.windows.open(start);
      enable_collection(s);
    }
    if (s.steps.counting())
      switch_step_callbacks(s, true, [](CUptiResult r, const char* what) {
        if (r != CUPTI_SUCCESS) throw_cupti(r, what);
      });
    if (options.counters) {
      counters_begin(*options.counters);
      switch_counter_callbacks(s, true, [&](CUptiResult r, const char* what) {
        if (r != CUPTI_SUCCESS) throw_cupti(r, what);
      });
    }
    // Device names are a nicety, and the kind costs nothing per call: on for the whole session.
    s.device_kind = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE) == CUPTI_SUCCESS;
  }
  {
    std::lock_guard<std::mutex> lock(s.data);
    s.trace.collection_start = start;
  }
  if (!s.exit_hook) {
    std::atexit(flush_at_exit);
    s.exit_hook = true;
  }
  s.running = true;
}

trace::Trace collector_stop(bool process_exiting) {
  State& s = state();
  std::lock_guard<std::mutex> control(s.control);
  if (!s.running.load()) return trace::Trace{};
  const Nanoseconds stop = collector_now();
  ProfilerWindows windows;
  std::optional<trace::TraceSchedule> schedule;
  std::vector<trace::RecordedStep> recorded_steps;
  if (s.steps.counting()) {
    // Off first: no step may switch collection or the counters while they are stopped.
    std::lock_guard<std::mutex> gate(s.gate);
    switch_step_callbacks(s, false, [&](CUptiResult r, const char* what) {
      if (r != CUPTI_SUCCESS) note_cupti_error(s, fmt::format("{} failed at the end: {}", what, detail::status_text(r)));
    });
  }
  trace::KernelCounters counters;
  if (counters_enabled()) {
    {
      // Off first: decoding and disabling the profiler must not call back into it.
      std::lock_guard<std::mutex> gate(s.gate);
      switch_counter_callbacks(s, false, [&](CUptiResult r, const char* what) {
        if (r != CUPTI_SUCCESS) note_cupti_error(s, fmt::format("{} failed at the end: {}", what, detail::status_text(r)));
      });
    }
    counters = counters_end(process_exiting);
  }
  {
    std::lock_guard<std::mutex> gate(s.gate);
    if (s.gated.load()) {
      try {
        enable_profiler_callbacks(s, false);
      } catch (const std::exception& e) {
        note_cupti_error(s, fmt::format("could not switch the profiler-call callbacks off: {}", e.what()));
      }
      s.windows.close(stop);  // a window still open ends here
    }
    if (s.scheduled.load()) {
      end_steps(s, stop);
      schedule = s.options.schedule;
      recorded_steps = s.recorded_steps;
    }
    if (s.collecting)
      if (std::string error = disable_collection(s); !error.empty())
        note_cupti_error(s, fmt::format("could not switch tracing off at the end: {}", error));
    if (s.sticky_calls) {
      disable_selected_calls(s, [&](CUptiResult r, const char* what) {
        if (r != CUPTI_SUCCESS) note_cupti_error(s, fmt::format("{} failed at the end: {}", what, detail::status_text(r)));
      });
      s.sticky_calls = false;
    }
    if (s.device_kind) {
      if (const CUptiResult r = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DEVICE); r != CUPTI_SUCCESS)
        note_cupti_error(s, fmt::format("cuptiActivityDisable(DEVICE) failed: {}", detail::status_text(r)));
      s.device_kind = false;
    }
    windows = s.windows;
  }
  for (std::uint32_t flag : {0u, static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)})
    if (const CUptiResult r = cuptiActivityFlushAll(flag); r != CUPTI_SUCCESS) {
      std::lock_guard<std::mutex> gate(s.gate);
      note_cupti_error(s, fmt::format("cuptiActivityFlushAll({}) failed: {}", flag, detail::status_text(r)));
    }
  s.running = false;
  std::size_t dropped = 0;
  trace::Trace out;
  {
    std::lock_guard<std::mutex> lock(s.data);
    if (const CUptiResult r = cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped); r == CUPTI_SUCCESS)
      s.trace.dropped_records += dropped;
    for (std::size_t i = 0; i < s.trace.syncs.size() && i < s.sync_contexts.size(); ++i) {
      auto it = s.context_device.find(s.sync_contexts[i]);
      if (it != s.context_device.end()) s.trace.syncs[i].device = it->second;
    }
    // Ranges still open at stop end there, so their time is not lost; gated, a range whose end
    // fell outside its window ends when the window closed.
    const bool gated = s.gated.load() || s.scheduled.load();
    for (const auto& [id, open] : s.open_ranges) {
      trace::NvtxRange r;
      r.name = open.name;
      r.process = open.process;
      r.thread = open.thread;
      r.start = open.start;
      r.end = std::max(open.start, gated ? windows.end_of_window(open.start, stop) : stop);
      s.trace.ranges.push_back(r);
    }
    s.open_ranges.clear();
    s.sync_contexts.clear();
    s.trace.collection_stop = stop;
    s.trace.counters = std::move(counters);
    place_replayed_kernels(s);
    out = std::move(s.trace);
    s.trace = trace::Trace{};
  }
  trace::finalize(out);
  if (schedule) {
    out.schedule = std::move(schedule);
    out.recorded_steps = std::move(recorded_steps);
    out = trace::keep_recorded_steps(out);
  }
  return out;
}

}  // namespace ridge::detail
