// The CUPTI activity collector's session: start and stop, the activity kinds and per-call enables
// switched on and off, the settings and the flushes. Its parts share collector_state.hpp: CUPTI's
// activity records become trace events in collector_activity.cpp; CUPTI's callback subscriber is
// collector_callbacks.cpp, --profiler-range collector_gating.cpp, steps and --schedule
// collector_steps.cpp, and the hardware counters' callbacks collector_counters.cpp.
#include "trace/cupti/collector.hpp"
#include "trace/cupti/collector_state.hpp"

#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

/// A call that launches a kernel (not a graph, host function or copy): the calls whose records
/// CollectorOptions::launch_calls = false replaces with the kernels' queue times.
bool kernel_launch_call(std::string_view name) {
  return name.find("LaunchKernel") != std::string_view::npos || name.find("LaunchCooperativeKernel") != std::string_view::npos ||
         name == "cudaLaunch" || name == "cuLaunch" || name.starts_with("cuLaunchGrid");
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

namespace collector {

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

}  // namespace collector

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
