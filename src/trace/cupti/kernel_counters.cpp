// CUPTI's range profiler, driven from launch callbacks. A session (SetConfig + Start) is open
// while consecutive launches are selected; any other launch, a graph launch, a full counter data
// image or the end closes it (Stop + Decode), and the decoded ranges, numbered by launch order,
// become rows joined to the launches' correlation ids.
#include "trace/cupti/kernel_counters.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::detail {

std::string status_text(CUptiResult status);  // collector.cpp

namespace {

using Clock = std::chrono::steady_clock;

/// A CUPTI failure inside the profiler: carries the call, for KernelCounters::error.
struct CuptiFailure {
  std::string what;
};

void check_cupti(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS) throw CuptiFailure{fmt::format("{} failed: {}", call, status_text(r))};
}
#define COUNTERS_CHECK(call) check_cupti((call), #call)

/// What the profiler keeps per CUDA context.
struct ContextProfiler {
  CUcontext context = nullptr;
  std::uint32_t device = 0;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  std::vector<std::uint8_t> config, counter_data;
  bool running = false;
  struct Launch {
    std::uint32_t correlation = 0;
    std::uint64_t launch_ns = 0;
  };
  std::vector<Launch> pending;  ///< the launches in the open session, in order
};

struct State {
  std::mutex mutex;
  bool enabled = false, failed = false, profiler_initialized = false;
  trace::CounterOptions options;
  std::vector<std::string> metric_names;
  std::vector<const char*> metric_pointers;
  std::vector<std::unique_ptr<ContextProfiler>> contexts;
  std::unordered_map<std::string, std::uint64_t> launches_by_name;
  bool in_window_step = false;
  trace::KernelCounters result;
};

State& state() {
  static State s;
  return s;
}

/// A driver API function of the libcuda already in the process (the injection library links
/// no driver stub).
template <typename Function>
Function driver_function(const char* name) {
  static void* library = [] {
    void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return handle != nullptr ? handle : dlopen("libcuda.so.1", RTLD_LAZY);
  }();
  return library != nullptr ? reinterpret_cast<Function>(dlsym(library, name)) : nullptr;
}

CUresult call_driver(const char* name, auto... args) {
  using Function = CUresult (*)(decltype(args)...);
  const auto f = driver_function<Function>(name);
  return f != nullptr ? f(args...) : CUDA_ERROR_NOT_FOUND;
}

/// RIDGE_COUNTERS_DEBUG=1 prints each step of the profiler's state machine to stderr.
void debug(const char* what, std::uint64_t value = 0) {
  static const bool on = [] {
    const char* v = std::getenv("RIDGE_COUNTERS_DEBUG");
    return v != nullptr && v[0] == '1';
  }();
  if (on) std::fprintf(stderr, "ridge counters: %s %llu\n", what, static_cast<unsigned long long>(value));
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void initialize_profiler(State& s) {
  if (s.profiler_initialized) return;
  CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  COUNTERS_CHECK(cuptiProfilerInitialize(&p));
  s.profiler_initialized = true;
}

std::vector<std::uint8_t> counter_availability(CUcontext context) {
  CUpti_Profiler_GetCounterAvailability_Params p{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  p.ctx = context;
  COUNTERS_CHECK(cuptiProfilerGetCounterAvailability(&p));
  std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  COUNTERS_CHECK(cuptiProfilerGetCounterAvailability(&p));
  return image;
}

bool offered(CUpti_Profiler_Host_Object* host, const std::string& metric) {
  const std::string base = metric.substr(0, metric.find('.'));
  CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
  p.pHostObject = host;
  p.pMetricName = base.c_str();
  return cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
}

/// A named set lists what any supported GPU may offer (FP8 tensor paths exist from Hopper on):
/// the metrics this GPU lacks are left out and named. A raw metric it lacks is an error.
void keep_offered_metrics(State& s, CUpti_Profiler_Host_Object* host) {
  std::vector<std::string> kept;
  const auto& raw = s.options.metrics;
  for (const auto& m : s.metric_names) {
    if (offered(host, m)) {
      kept.push_back(m);
      continue;
    }
    if (std::find(raw.begin(), raw.end(), m) != raw.end())
      throw CuptiFailure{fmt::format("this GPU has no metric named {}", m)};
    s.result.metrics_not_offered.push_back(m);
  }
  s.metric_names = std::move(kept);
  s.metric_pointers.clear();
  for (const auto& m : s.metric_names) s.metric_pointers.push_back(m.c_str());
  s.result.metrics = s.metric_names;
}

void build_config(State& s, ContextProfiler& c, const std::vector<std::uint8_t>& availability) {
  CUdevice device = 0;
  if (call_driver("cuCtxGetDevice", &device) != CUDA_SUCCESS) throw CuptiFailure{"cuCtxGetDevice failed in a launch callback"};
  c.device = static_cast<std::uint32_t>(device);
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = static_cast<std::size_t>(device);
  COUNTERS_CHECK(cuptiDeviceGetChipName(&chip));
  CUpti_Profiler_Host_Initialize_Params h{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  h.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  h.pChipName = chip.pChipName;
  h.pCounterAvailabilityImage = availability.data();
  COUNTERS_CHECK(cuptiProfilerHostInitialize(&h));
  c.host = h.pHostObject;
  if (s.contexts.empty()) keep_offered_metrics(s, c.host);
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = c.host;
  add.ppMetricNames = s.metric_pointers.data();
  add.numMetrics = s.metric_pointers.size();
  if (const CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add); r != CUPTI_SUCCESS)
    throw CuptiFailure{fmt::format("the {} GPU does not offer one of the metrics asked ({}): {}", chip.pChipName,
                                   fmt::join(s.metric_names, ", "), status_text(r))};
  CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = c.host;
  COUNTERS_CHECK(cuptiProfilerHostGetConfigImageSize(&size));
  c.config.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = c.host;
  image.configImageSize = c.config.size();
  image.pConfigImage = c.config.data();
  COUNTERS_CHECK(cuptiProfilerHostGetConfigImage(&image));
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = c.config.size();
  passes.pConfigImage = c.config.data();
  COUNTERS_CHECK(cuptiProfilerHostGetNumOfPasses(&passes));
  s.result.passes = passes.numOfPasses;
}

void initialize_counter_data(ContextProfiler& c) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params p{CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = c.profiler;
  p.counterDataSize = c.counter_data.size();
  p.pCounterData = c.counter_data.data();
  COUNTERS_CHECK(cuptiRangeProfilerCounterDataImageInitialize(&p));
}

ContextProfiler& context_profiler(State& s, CUcontext context) {
  for (auto& c : s.contexts)
    if (c->context == context) return *c;
  initialize_profiler(s);
  auto c = std::make_unique<ContextProfiler>();
  c->context = context;
  build_config(s, *c, counter_availability(context));
  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = context;
  COUNTERS_CHECK(cuptiRangeProfilerEnable(&enable));
  c->profiler = enable.pRangeProfilerObject;
  CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = c->profiler;
  size.pMetricNames = s.metric_pointers.data();
  size.numMetrics = s.metric_pointers.size();
  size.maxNumOfRanges = s.options.ranges_per_decode;
  size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(s.options.ranges_per_decode);
  COUNTERS_CHECK(cuptiRangeProfilerGetCounterDataSize(&size));
  c->counter_data.resize(size.counterDataSize);
  initialize_counter_data(*c);
  s.contexts.push_back(std::move(c));
  return *s.contexts.back();
}

void start_session(State& s, ContextProfiler& c) {
  CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  config.pRangeProfilerObject = c.profiler;
  config.configSize = c.config.size();
  config.pConfig = c.config.data();
  config.counterDataImageSize = c.counter_data.size();
  config.pCounterDataImage = c.counter_data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_KernelReplay;
  config.maxRangesPerPass = s.options.ranges_per_decode;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  COUNTERS_CHECK(cuptiRangeProfilerSetConfig(&config));
  CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  start.pRangeProfilerObject = c.profiler;
  COUNTERS_CHECK(cuptiRangeProfilerStart(&start));
  c.running = true;
  debug("session started");
}

/// Turns the decoded ranges into rows: range i is the i-th launch of the session.
void collect_ranges(State& s, ContextProfiler& c) {
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = c.counter_data.data();
  info.counterDataImageSize = c.counter_data.size();
  COUNTERS_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
  const std::size_t ranges = info.numTotalRanges;
  if (ranges != c.pending.size()) {
    // Without a one-to-one order the rows cannot be tied to launches: keep none of them.
    s.result.ranges_unmatched += ranges;
    return;
  }
  for (std::size_t i = 0; i < ranges; ++i) {
    trace::CounterRow row;
    row.correlation = c.pending[i].correlation;
    row.launch_ns = c.pending[i].launch_ns;
    row.device = c.device;
    row.values.assign(s.metric_names.size(), 0.0);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = c.host;
    eval.pCounterDataImage = c.counter_data.data();
    eval.counterDataImageSize = c.counter_data.size();
    eval.rangeIndex = i;
    eval.ppMetricNames = s.metric_pointers.data();
    eval.numMetrics = s.metric_pointers.size();
    eval.pMetricValues = row.values.data();
    COUNTERS_CHECK(cuptiProfilerHostEvaluateToGpuValues(&eval));
    s.result.rows.push_back(std::move(row));
  }
}

void stop_session(State& s, ContextProfiler& c) {
  if (!c.running) return;
  c.running = false;
  debug("stopping a session of launches", c.pending.size());
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = c.profiler;
  COUNTERS_CHECK(cuptiRangeProfilerStop(&stop));
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = c.profiler;
  debug("decoding");
  COUNTERS_CHECK(cuptiRangeProfilerDecodeData(&decode));
  debug("decoded ranges dropped", decode.numOfRangeDropped);
  s.result.ranges_dropped += decode.numOfRangeDropped;
  collect_ranges(s, c);
  c.pending.clear();
  initialize_counter_data(c);
}

void stop_all_sessions(State& s) {
  for (auto& c : s.contexts) stop_session(s, *c);
}

/// Decodes what the context profiled, then frees its profiler: before the context goes away.
void retire(State& s, ContextProfiler& c) {
  debug("retiring a context's profiler");
  stop_session(s, c);
  CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  disable.pRangeProfilerObject = c.profiler;
  COUNTERS_CHECK(cuptiRangeProfilerDisable(&disable));
  CUpti_Profiler_Host_Deinitialize_Params host{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  host.pHostObject = c.host;
  COUNTERS_CHECK(cuptiProfilerHostDeinitialize(&host));
}

/// Set while this thread is inside the profiler: CUPTI's own work there (saving and restoring
/// memory for replay, decoding) must not call back into it, or the mutex would deadlock.
thread_local bool inside_profiler = false;
/// The correlation id of the runtime launch call in progress on this thread (0 = none): a kernel
/// launched through the runtime carries the runtime call's id, not its driver call's.
thread_local std::uint32_t runtime_launch_correlation = 0;

/// Any failure ends collection for the rest of the run; what was decoded so far is kept.
template <typename Action>
void guarded(State& s, Action&& action) {
  if (s.failed || !s.enabled) return;
  const auto t0 = Clock::now();
  inside_profiler = true;
  try {
    action();
  } catch (const CuptiFailure& f) {
    s.failed = true;
    s.result.error = f.what;
  } catch (const std::exception& e) {
    s.failed = true;
    s.result.error = e.what();
  }
  inside_profiler = false;
  s.result.profiling_seconds += seconds_since(t0);
}

/// The stream a launch call launches into (nullptr: the default stream, or a launch kind whose
/// parameters are not known here).
CUstream launch_stream(std::uint32_t cbid, const void* params) {
  if (params == nullptr) return nullptr;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      return static_cast<const cuLaunchKernel_params*>(params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return static_cast<const cuLaunchCooperativeKernel_params*>(params)->hStream;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const CUlaunchConfig* config = static_cast<const cuLaunchKernelEx_params*>(params)->config;
      return config != nullptr ? config->hStream : nullptr;
    }
    default:
      return nullptr;
  }
}

bool capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (call_driver("cuStreamIsCapturing", stream, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool selected(State& s, const char* symbol) {
  if (s.options.steps && !s.in_window_step) return false;
  const std::uint64_t seen = s.launches_by_name[symbol != nullptr ? symbol : ""]++;
  return s.options.first_launches_per_kernel == 0 || seen < s.options.first_launches_per_kernel;
}

}  // namespace

void counters_begin(const trace::CounterOptions& options) {
  options.validate();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.options = options;
  s.metric_names = options.metric_names();
  s.metric_pointers.clear();
  for (const auto& m : s.metric_names) s.metric_pointers.push_back(m.c_str());
  s.result = trace::KernelCounters{};
  s.result.metric_set = options.metric_set;
  s.result.metrics = s.metric_names;
  s.launches_by_name.clear();
  s.in_window_step = false;
  s.failed = false;
  s.enabled = true;
}

bool counters_enabled() { return state().enabled; }

void counters_on_runtime_launch(const CUpti_CallbackData& info) {
  if (inside_profiler) return;
  runtime_launch_correlation = info.callbackSite == CUPTI_API_ENTER ? info.correlationId : 0;
}

void counters_on_launch(const CUpti_CallbackData& info, std::uint32_t cbid) {
  if (inside_profiler || info.callbackSite != CUPTI_API_ENTER) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  guarded(s, [&] {
    CUcontext context = info.context;
    if (context == nullptr && call_driver("cuCtxGetCurrent", &context) != CUDA_SUCCESS) return;
    if (capturing(launch_stream(cbid, info.functionParams))) {
      ++s.result.captured_launches;
      return;  // captured, not run: no range will be made for it
    }
    ContextProfiler& c = context_profiler(s, context);
    debug(info.symbolName != nullptr ? info.symbolName : "(unnamed kernel)", info.correlationId);
    if (!selected(s, info.symbolName)) {
      stop_session(s, c);  // the kernel about to run must not be profiled
      return;
    }
    if (c.pending.size() >= s.options.ranges_per_decode) stop_session(s, c);
    if (!c.running) start_session(s, c);
    std::uint64_t now = 0;
    COUNTERS_CHECK(cuptiGetTimestamp(&now));
    c.pending.push_back({runtime_launch_correlation != 0 ? runtime_launch_correlation : info.correlationId, now});
    ++s.result.launches_profiled;
  });
}

void counters_on_graph_launch(const CUpti_CallbackData& info) {
  if (inside_profiler) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (info.callbackSite != CUPTI_API_ENTER) return;
  ++s.result.graph_launches;
  guarded(s, [&] { stop_all_sessions(s); });
}

void counters_on_step(std::uint64_t step) {
  State& s = state();
  if (inside_profiler || !s.enabled || !s.options.steps) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  const bool inside = step >= s.options.steps->first && step <= s.options.steps->second;
  if (s.in_window_step && !inside) guarded(s, [&] { stop_all_sessions(s); });
  s.in_window_step = inside;
}

void counters_on_context_destroy(CUcontext context) {
  if (inside_profiler) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  guarded(s, [&] {
    for (std::size_t i = 0; i < s.contexts.size(); ++i)
      if (s.contexts[i]->context == context) {
        retire(s, *s.contexts[i]);
        s.contexts.erase(s.contexts.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
  });
}

trace::KernelCounters counters_end(bool process_exiting) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  guarded(s, [&] {
    for (auto& c : s.contexts) {
      // At exit only what is pending is decoded: on the H200, cuptiRangeProfilerDisable called
      // from an atexit handler never returned, and the process ends anyway.
      if (process_exiting)
        stop_session(s, *c);
      else
        retire(s, *c);
    }
  });
  s.contexts.clear();
  s.enabled = false;
  return std::move(s.result);
}

void require_counters_permitted(int device) {
  CUdevice dev = 0;
  CUcontext context = nullptr;
  if (call_driver("cuInit", 0u) != CUDA_SUCCESS || call_driver("cuDeviceGet", &dev, device) != CUDA_SUCCESS ||
      call_driver("cuDevicePrimaryCtxRetain", &context, dev) != CUDA_SUCCESS)
    throw NoGpuError(fmt::format("reading hardware counters needs a CUDA GPU, and GPU {} is not usable", device));
  std::string problem;
  {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult r = cuptiProfilerInitialize(&init);
    if (r == CUPTI_SUCCESS) {
      CUpti_Profiler_GetCounterAvailability_Params p{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
      p.ctx = context;
      r = cuptiProfilerGetCounterAvailability(&p);
    }
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
      problem = "this user may not read the GPU's performance counters (ERR_NVGPUCTRPERM). Ask the administrator to "
                "load the driver with NVreg_RestrictProfilingToAdminUsers=0 (see "
                "https://developer.nvidia.com/ERR_NVGPUCTRPERM), or run as root";
    else if (r == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED || r == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED ||
             r == CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED || r == CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED ||
             r == CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED || r == CUPTI_ERROR_NOT_SUPPORTED)
      problem = fmt::format("this GPU does not offer its performance counters here ({}); trace without counters",
                            status_text(r));
    else if (r != CUPTI_SUCCESS)
      problem = fmt::format("CUPTI's profiler could not start: {}", status_text(r));
    CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&deinit);
  }
  call_driver("cuDevicePrimaryCtxRelease_v2", dev);
  if (!problem.empty()) throw CountersUnavailableError("cannot read hardware counters: " + problem);
}

}  // namespace ridge::detail

namespace ridge {
void require_counters_permitted(int device) { detail::require_counters_permitted(device); }
}  // namespace ridge
