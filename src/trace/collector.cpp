// The CUPTI activity collector: enables the activity kinds, hands CUPTI buffers, turns records
// into ridge's trace model as buffers complete, and flushes at stop and at exit.
#include "trace/collector.hpp"

#include <cupti.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ridge/cuda_check.hpp"
#include "ridge/errors.hpp"

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

namespace ridge::trace_detail {

namespace {

using trace::Nanoseconds;

struct PendingRange {
  std::uint32_t name = 0, process = 0, thread = 0;
  Nanoseconds start = 0;
};

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
      "Profiler",  // cudaProfilerStart/Stop: --profiler-range needs them
      "ModuleLoad", "LibraryLoad", "BeginCapture", "EndCapture", "GraphInstantiate", "GraphUpload",
  };
  for (std::string_view key : keys)
    if (name.find(key) != std::string_view::npos) return true;
  return false;
}

/// The activity kinds one trace enables, in order.
std::vector<CUpti_ActivityKind> activity_kinds(const CollectorOptions& o) {
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
  kinds.push_back(CUPTI_ACTIVITY_KIND_DEVICE);
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

struct State {
  std::mutex control;  // start/stop
  std::mutex data;     // the trace being filled by buffer callbacks
  trace::Trace trace;
  std::unordered_map<const char*, std::uint32_t> kernel_names;  // CUPTI shares one name pointer per kernel
  std::vector<std::string> runtime_names, driver_names;         // by callback id
  std::unordered_map<std::uint32_t, std::uint32_t> runtime_ids, driver_ids;  // cbid -> string id, this trace
  std::unordered_map<std::uint32_t, PendingRange> open_ranges;
  std::unordered_map<std::uint32_t, std::uint32_t> context_device;
  std::vector<std::uint32_t> sync_contexts;  // parallel to trace.syncs until stop resolves devices
  std::atomic<std::size_t> buffer_bytes{32u << 20};
  std::vector<CUpti_ActivityKind> enabled_kinds;                   // this trace's, for stop
  std::vector<std::uint32_t> enabled_runtime_calls, enabled_driver_calls;  // per-call enables
  std::atomic<bool> running{false};
  bool callbacks_registered = false;
  bool exit_hook = false;
  pid_t pid = 0;  // the process that started tracing (a fork()ed child must not touch CUPTI)
  pid_t start_thread = 0;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<std::uint64_t> buffers_requested{0}, buffers_completed{0}, records{0}, completions_on_start_thread{0};
  std::atomic<std::uint64_t> completion_ns{0};
};

/// Never destroyed: CUPTI may deliver buffers during static destruction at exit.
State& state() {
  static State* s = new State;
  return *s;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  const std::size_t bytes = state().buffer_bytes.load();
  state().buffers_requested.fetch_add(1, std::memory_order_relaxed);
  // Zeroed memory (fresh pages from calloc), so CUPTI need not clear it on the traced thread.
  *buffer = static_cast<uint8_t*>(std::calloc(1, bytes));
  *size = *buffer != nullptr ? bytes : 0;  // a zero-size buffer makes CUPTI count drops, never crash
  *max_records = 0;
}

std::uint32_t api_name(State& s, bool runtime, std::uint32_t cbid) {
  auto& ids = runtime ? s.runtime_ids : s.driver_ids;
  auto it = ids.find(cbid);
  if (it != ids.end()) return it->second;
  const auto& names = runtime ? s.runtime_names : s.driver_names;
  std::string name = cbid < names.size() && !names[cbid].empty() ? names[cbid]
                                                                  : fmt::format("{}_api_{}", runtime ? "cuda" : "cu", cbid);
  const std::uint32_t id = s.trace.strings.intern(name);
  ids.emplace(cbid, id);
  return id;
}

trace::MemcpyKind memcpy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return trace::MemcpyKind::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return trace::MemcpyKind::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return trace::MemcpyKind::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return trace::MemcpyKind::host_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return trace::MemcpyKind::peer_to_peer;
    default: return trace::MemcpyKind::unknown;
  }
}

trace::SyncKind sync_kind(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return trace::SyncKind::event_synchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return trace::SyncKind::stream_wait_event;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return trace::SyncKind::stream_synchronize;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return trace::SyncKind::context_synchronize;
    default: return trace::SyncKind::unknown;
  }
}

bool complete(Nanoseconds start, Nanoseconds end) { return start != 0 && end != 0 && end >= start; }

void add_record(State& s, const CUpti_Activity* record) {
  trace::Trace& t = s.trace;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      // Later CUPTI versions only append fields, so the CUDA 13.0 layout reads newer records too.
      const auto* r = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (!complete(r->start, r->end)) {
        ++t.incomplete_records;
        return;
      }
      trace::Kernel k;
      auto it = s.kernel_names.find(r->name);
      if (it == s.kernel_names.end()) it = s.kernel_names.emplace(r->name, t.strings.intern(trace::demangle(r->name))).first;
      k.name = it->second;
      k.device = r->deviceId;
      k.stream = r->streamId;
      k.start = r->start;
      k.end = r->end;
      k.grid = {r->gridX, r->gridY, r->gridZ};
      k.block = {r->blockX, r->blockY, r->blockZ};
      k.correlation = r->correlationId;
      k.registers_per_thread = r->registersPerThread;
      k.shared_memory_bytes = static_cast<std::uint32_t>(r->staticSharedMemory + r->dynamicSharedMemory);
      k.graph_id = r->graphId;
      s.context_device[r->contextId] = r->deviceId;
      t.kernels.push_back(k);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (!complete(r->start, r->end)) {
        ++t.incomplete_records;
        return;
      }
      trace::Memcpy m;
      m.kind = memcpy_kind(r->copyKind);
      m.bytes = r->bytes;
      m.device = r->deviceId;
      m.stream = r->streamId;
      m.start = r->start;
      m.end = r->end;
      m.correlation = r->correlationId;
      s.context_device[r->contextId] = r->deviceId;
      t.memcpys.push_back(m);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (!complete(r->start, r->end)) {
        ++t.incomplete_records;
        return;
      }
      trace::Memset m;
      m.bytes = r->bytes;
      m.device = r->deviceId;
      m.stream = r->streamId;
      m.start = r->start;
      m.end = r->end;
      m.correlation = r->correlationId;
      t.memsets.push_back(m);
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* r = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      trace::ApiCall a;
      a.domain = runtime ? trace::ApiDomain::runtime : trace::ApiDomain::driver;
      a.name = api_name(s, runtime, r->cbid);
      a.process = r->processId;
      a.thread = r->threadId;
      a.start = r->start;
      a.end = r->end >= r->start ? r->end : r->start;
      a.correlation = r->correlationId;
      t.api_calls.push_back(a);
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* r = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      trace::Sync y;
      y.kind = sync_kind(r->type);
      y.stream = r->streamId;
      y.start = r->start;
      y.end = r->end >= r->start ? r->end : r->start;
      y.correlation = r->correlationId;
      t.syncs.push_back(y);
      s.sync_contexts.push_back(r->contextId);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* r = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
      std::uint32_t process = 0, thread = 0;
      if (r->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || r->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
        process = r->objectId.pt.processId;
        thread = r->objectId.pt.threadId;
      }
      if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        trace::NvtxRange m;
        m.name = t.strings.intern(r->name ? r->name : "(unnamed)");
        m.process = process;
        m.thread = thread;
        m.start = m.end = r->timestamp;
        m.marker = true;
        t.ranges.push_back(m);
      } else if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        s.open_ranges[r->id] = PendingRange{t.strings.intern(r->name ? r->name : "(unnamed)"), process, thread, r->timestamp};
      } else if (r->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = s.open_ranges.find(r->id);
        if (it == s.open_ranges.end()) return;  // began before the trace started
        trace::NvtxRange range;
        range.name = it->second.name;
        range.process = it->second.process;
        range.thread = it->second.thread;
        range.start = it->second.start;
        range.end = r->timestamp >= range.start ? r->timestamp : range.start;
        t.ranges.push_back(range);
        s.open_ranges.erase(it);
      }
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* r = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      t.external_correlations.push_back({r->correlationId, r->externalId, static_cast<std::uint32_t>(r->externalKind)});
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* r = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
      if (r->name != nullptr) t.device_names[r->id] = r->name;
      return;
    }
    default:
      return;
  }
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  State& s = state();
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t records = 0;
  {
    std::lock_guard<std::mutex> lock(s.data);
    CUpti_Activity* record = nullptr;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      add_record(s, record);
      ++records;
    }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS) s.trace.dropped_records += dropped;
  }
  std::free(buffer);
  s.records.fetch_add(records, std::memory_order_relaxed);
  s.buffers_completed.fetch_add(1, std::memory_order_relaxed);
  if (static_cast<pid_t>(syscall(SYS_gettid)) == s.start_thread) s.completions_on_start_thread.fetch_add(1, std::memory_order_relaxed);
  s.completion_ns.fetch_add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - t0).count()),
                            std::memory_order_relaxed);
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

void skip_trivial_calls(const State& s) {
  const auto& trivial = trivial_api_calls();
  for (std::uint32_t cbid = 1; cbid < s.runtime_names.size(); ++cbid)
    if (trivial.count(s.runtime_names[cbid])) RIDGE_CHECK(cuptiActivityEnableRuntimeApi(cbid, 0));
  for (std::uint32_t cbid = 1; cbid < s.driver_names.size(); ++cbid)
    if (trivial.count(s.driver_names[cbid])) RIDGE_CHECK(cuptiActivityEnableDriverApi(cbid, 0));
}

void enable_selected_calls(State& s, bool runtime) {
  s.enabled_runtime_calls.clear();
  s.enabled_driver_calls.clear();
  for (std::uint32_t cbid = 1; runtime && cbid < s.runtime_names.size(); ++cbid)
    if (!s.runtime_names[cbid].empty() && selected_api_call(s.runtime_names[cbid])) {
      RIDGE_CHECK(cuptiActivityEnableRuntimeApi(cbid, 1));
      s.enabled_runtime_calls.push_back(cbid);
    }
  for (std::uint32_t cbid = 1; cbid < s.driver_names.size(); ++cbid)
    if (!s.driver_names[cbid].empty() && selected_api_call(s.driver_names[cbid])) {
      RIDGE_CHECK(cuptiActivityEnableDriverApi(cbid, 1));
      s.enabled_driver_calls.push_back(cbid);
    }
}

void disable_selected_calls(State& s) {
  for (std::uint32_t cbid : s.enabled_runtime_calls) cuptiActivityEnableRuntimeApi(cbid, 0);
  for (std::uint32_t cbid : s.enabled_driver_calls) cuptiActivityEnableDriverApi(cbid, 0);
  s.enabled_runtime_calls.clear();
  s.enabled_driver_calls.clear();
}

/// Best-effort settings that lower the cost on the traced threads; older CUPTIs may lack some.
void configure_cupti(const CollectorOptions& o) {
  std::uint8_t zeroed = 1;  // our buffers come zeroed (calloc)
  std::size_t size = sizeof(zeroed);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
  cuptiActivityEnableLatencyTimestamps(0);  // queued/submitted times: not used, extra work per launch
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

[[noreturn]] void throw_cupti(CUptiResult r, const std::string& what) {
  throw Error(fmt::format("cannot start the CUDA tracer: {} failed: {}", what, detail::status_text(r)));
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

bool collector_running() { return state().running.load(); }

CollectorStats collector_stats() {
  const State& s = state();
  CollectorStats out;
  out.buffers_requested = s.buffers_requested.load();
  out.buffers_completed = s.buffers_completed.load();
  out.records = s.records.load();
  out.completion_seconds = static_cast<double>(s.completion_ns.load()) * 1e-9;
  out.completions_on_start_thread = s.completions_on_start_thread.load();
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
  if (s.subscriber == nullptr && options.detect_other_subscriber) {
    // Subscribing first detects another CUPTI client (Nsight, PyTorch's profiler) with a clear error.
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
  s.enabled_kinds = activity_kinds(options);
  for (CUpti_ActivityKind kind : s.enabled_kinds) {
    const CUptiResult r = cuptiActivityEnable(kind);
    if (r == CUPTI_SUCCESS) continue;
    if (kind == CUPTI_ACTIVITY_KIND_DEVICE) continue;  // device names are a nicety
    for (CUpti_ActivityKind k : s.enabled_kinds) cuptiActivityDisable(k);
    throw_cupti(r, fmt::format("cuptiActivityEnable({})", kind_name(kind)));
  }
  if (options.api_calls == ApiCalls::most) skip_trivial_calls(s);
  if (options.api_calls == ApiCalls::selected) enable_selected_calls(s, options.selected_runtime);
  {
    std::lock_guard<std::mutex> lock(s.data);
    s.trace.collection_start = start;
  }
  if (!s.exit_hook) {
    std::atexit(flush_at_exit);
    s.exit_hook = true;
  }
  s.pid = getpid();
  s.running = true;
}

trace::Trace collector_stop() {
  State& s = state();
  std::lock_guard<std::mutex> control(s.control);
  if (!s.running.load()) return trace::Trace{};
  const Nanoseconds stop = collector_now();
  for (CUpti_ActivityKind kind : s.enabled_kinds) cuptiActivityDisable(kind);
  disable_selected_calls(s);
  cuptiActivityFlushAll(0);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  s.running = false;
  std::size_t dropped = 0;
  trace::Trace out;
  {
    std::lock_guard<std::mutex> lock(s.data);
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) s.trace.dropped_records += dropped;
    for (std::size_t i = 0; i < s.trace.syncs.size() && i < s.sync_contexts.size(); ++i) {
      auto it = s.context_device.find(s.sync_contexts[i]);
      if (it != s.context_device.end()) s.trace.syncs[i].device = it->second;
    }
    // Ranges still open at stop end there, so their time is not lost.
    for (const auto& [id, open] : s.open_ranges) {
      trace::NvtxRange r;
      r.name = open.name;
      r.process = open.process;
      r.thread = open.thread;
      r.start = open.start;
      r.end = std::max(open.start, stop);
      s.trace.ranges.push_back(r);
    }
    s.open_ranges.clear();
    s.sync_contexts.clear();
    s.trace.collection_stop = stop;
    out = std::move(s.trace);
    s.trace = trace::Trace{};
  }
  trace::finalize(out);
  return out;
}

}  // namespace ridge::trace_detail
