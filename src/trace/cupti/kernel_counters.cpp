// CUPTI's range profiler, driven from launch and step callbacks, in one of two replay modes.
// - Kernel replay: a session (SetConfig + Start) opens at a selected launch and is stopped and
//   decoded when that launch returns (CUPTI has run every pass inside it), so nothing is pending
//   between launches or at exit. The decoded range becomes a row joined to the launch's correlation id.
// - Step replay (user replay): the program's own steps are the passes. At each step push inside
//   the window the pass in progress ends (synchronize, Stop) and the next begins (Start); after the
//   last pass the ranges are decoded and matched to the launches of pass 0 (trace::match_passes).
#include "trace/cupti/kernel_counters.hpp"

#include <cupti_profiler_target.h>
#include <generated_nvtx_meta.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

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
#include "trace/cupti/pass_plan.hpp"
#include "trace/cupti/range_profiler.hpp"
#include "ridge/trace/tracer.hpp"

namespace ridge::detail {

std::string status_text(CUptiResult status);  // collector.cpp

namespace {

using Clock = std::chrono::steady_clock;

#define COUNTERS_CHECK(call) check_profiler_call((call), #call)

/// What the profiler keeps per CUDA context: its range profiler session and the launches in the
/// open session, in order.
struct ContextProfiler {
  CUcontext context = nullptr;
  std::unique_ptr<RangeProfilerSession> session;
  struct Launch {
    std::uint32_t correlation = 0;
    std::uint64_t launch_ns = 0;
    trace::LaunchSignature signature;  ///< its grid and block
  };
  std::vector<Launch> pending;
  // Step replay: the launches of each pass of the profiled step in progress, and their times (pass 0's).
  std::vector<std::vector<trace::LaunchSignature>> passes;
  std::vector<std::uint64_t> first_pass_launch_ns;
  std::uint64_t profiled_step = 0;  ///< its first program step
};

/// A decoded range as the counter row of the launch it belongs to, with the launch's grid and block
/// (which tell its kernel from the profiler's own kernels sharing its correlation id).
trace::CounterRow counter_row(const trace::LaunchSignature& launch, std::uint32_t correlation, std::uint32_t device,
                              std::vector<double> values, std::uint64_t launch_ns) {
  trace::CounterRow row{correlation, device, std::move(values), launch_ns};
  for (int i = 0; i < 3; ++i) {
    row.grid[i] = static_cast<std::int32_t>(launch.grid[i]);
    row.block[i] = static_cast<std::int32_t>(launch.block[i]);
  }
  return row;
}

struct State {
  std::mutex mutex;
  bool enabled = false, failed = false, profiler_initialized = false;
  trace::CounterOptions options;
  std::vector<std::string> metric_names;
  std::vector<std::unique_ptr<ContextProfiler>> contexts;
  std::unordered_map<std::string, std::uint64_t> launches_by_name;
  bool in_window_step = false;
  trace::CounterReplay replay = trace::CounterReplay::kernel;
  trace::KernelCounters result;
};

State& state() {
  static State s;
  return s;
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

void (*profiler_initialized_hook)() = nullptr;

void initialize_profiler(State& s) {
  if (s.profiler_initialized) return;
  CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  COUNTERS_CHECK(cuptiProfilerInitialize(&p));
  s.profiler_initialized = true;
  if (profiler_initialized_hook != nullptr) profiler_initialized_hook();
}

ContextProfiler& context_profiler(State& s, CUcontext context) {
  for (auto& c : s.contexts)
    if (c->context == context) return *c;
  initialize_profiler(s);
  auto c = std::make_unique<ContextProfiler>();
  c->context = context;
  c->session = std::make_unique<RangeProfilerSession>(
      context, s.metric_names, s.options.metrics, s.options.ranges_per_decode,
      s.replay == trace::CounterReplay::steps ? CUPTI_UserReplay : CUPTI_KernelReplay);
  if (s.contexts.empty()) {  // the first context's GPU decides which metrics of a named set are kept
    s.metric_names = c->session->metrics();
    s.result.metrics = s.metric_names;
    s.result.metrics_not_offered = c->session->metrics_not_offered();
  }
  s.result.passes = c->session->passes();
  s.result.steps_taken = s.options.steps_taken(s.result.passes);
  s.contexts.push_back(std::move(c));
  return *s.contexts.back();
}

void start_session(ContextProfiler& c) {
  c.session->start();
  debug("session started");
}

/// Stops and decodes the open session; range i is the i-th launch of the session.
void stop_session(State& s, ContextProfiler& c) {
  // Step replay decodes only once every pass is in (end_pass): a pass cut short has nothing to decode.
  if (!c.session->running() || s.replay == trace::CounterReplay::steps) return;
  debug("stopping a session of launches", c.pending.size());
  const RangeProfilerSession::Decoded d = c.session->stop();
  debug("decoded ranges dropped", d.dropped);
  s.result.ranges_dropped += d.dropped;
  if (d.ranges.size() != c.pending.size()) {
    // Without a one-to-one order the rows cannot be tied to launches: keep none of them.
    s.result.ranges_unmatched += d.ranges.size();
  } else {
    for (std::size_t i = 0; i < d.ranges.size(); ++i)
      s.result.rows.push_back(counter_row(c.pending[i].signature, c.pending[i].correlation, c.session->device(),
                                          d.ranges[i], c.pending[i].launch_ns));
  }
  c.pending.clear();
}

void stop_all_sessions(State& s) {
  for (auto& c : s.contexts) stop_session(s, *c);
}

/// Decodes what the context profiled, then frees its profiler: before the context goes away.
void retire(State& s, ContextProfiler& c) {
  debug("retiring a context's profiler");
  stop_session(s, c);
  c.session->disable();
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

/// The grid and block of a launch call (zeros for a launch kind whose parameters are not known here).
trace::LaunchSignature launch_signature(std::uint32_t cbid, const CUpti_CallbackData& info) {
  trace::LaunchSignature sig;
  sig.name = info.symbolName != nullptr ? info.symbolName : "";
  auto fill = [&](unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
    sig.grid[0] = gx, sig.grid[1] = gy, sig.grid[2] = gz;
    sig.block[0] = bx, sig.block[1] = by, sig.block[2] = bz;
  };
  const void* params = info.functionParams;
  if (params == nullptr) return sig;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(params);
      fill(p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(params);
      fill(p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      if (const CUlaunchConfig* c = static_cast<const cuLaunchKernelEx_params*>(params)->config)
        fill(c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ);
      break;
    default: break;
  }
  return sig;
}

// ---- step replay ----------------------------------------------------------------------------------

/// The decoded ranges of one profiled step, matched to its pass-0 launches; every other launch of
/// its passes ran under profiling (perturbed) and carries no counters.
void keep_matched_ranges(State& s, ContextProfiler& c, const RangeProfilerSession::Decoded& d) {
  s.result.ranges_dropped += d.dropped;
  // A graph launch's kernels are ranges without launch calls of their own: the lists end there
  // (every launch after it is perturbed, none gets counters).
  std::vector<std::vector<trace::LaunchSignature>> lists = c.passes;
  for (auto& pass : lists) {
    const auto graph = std::find_if(pass.begin(), pass.end(), [](const trace::LaunchSignature& l) { return l.correlation == 0; });
    if (graph == pass.end()) continue;
    s.result.mismatches.push_back(fmt::format("profiled step at program step {}: a CUDA graph launch at launch {}: the "
                                              "launches after it get no counters", c.profiled_step, graph - pass.begin() + 1));
    pass.erase(graph, pass.end());
  }
  const trace::PassMatch m = trace::match_passes(lists, d.ranges.size());
  for (const auto& line : m.mismatches)
    s.result.mismatches.push_back(fmt::format("profiled step at program step {}: {}", c.profiled_step, line));
  std::vector<bool> has_row(c.passes.front().size(), false);
  for (std::size_t i : m.matched) {
    s.result.rows.push_back(counter_row(c.passes.front()[i], c.passes.front()[i].correlation, c.session->device(),
                                        d.ranges[i], c.first_pass_launch_ns[i]));
    has_row[i] = true;
  }
  s.result.ranges_unmatched += d.ranges.size() - m.matched.size();
  for (std::size_t p = 0; p < c.passes.size(); ++p)
    for (std::size_t i = 0; i < c.passes[p].size(); ++i)
      if ((p > 0 || !has_row[i]) && c.passes[p][i].correlation != 0) s.result.perturbed.push_back(c.passes[p][i].correlation);
  s.result.launches_profiled += m.matched.size();
  ++s.result.steps_profiled;
}

/// Ends the pass in progress: waits for its work (a pass is complete only once its kernels ran),
/// stops it, and after the last pass decodes and matches the step.
void end_pass(State& s, ContextProfiler& c) {
  if (!c.session->running()) return;
  if (const CUresult r = call_driver("cuCtxSynchronize"); r != CUDA_SUCCESS)
    throw Error(fmt::format("cuCtxSynchronize at the end of a profiled pass failed (CUresult {})", static_cast<int>(r)));
  const bool all_passes = c.session->stop_pass();
  debug("pass ended, launches", c.passes.empty() ? 0 : c.passes.back().size());
  if (!all_passes) return;
  keep_matched_ranges(s, c, c.session->decode());
  c.passes.clear();
  c.first_pass_launch_ns.clear();
}

/// Step `step` begins: the pass in progress ends, and inside the steps the window takes the next
/// one starts (a new profiled step every `passes` steps).
void step_replay_on_step(State& s, std::uint64_t step) {
  for (auto& c : s.contexts) end_pass(s, *c);
  if (s.contexts.empty()) {
    CUcontext context = nullptr;
    if (call_driver("cuCtxGetCurrent", &context) != CUDA_SUCCESS || context == nullptr) return;  // no GPU work yet
    if (step < s.options.steps->first) return;
    context_profiler(s, context);
  }
  const auto [first, last] = s.result.steps_taken;
  if (step < first || step > last) return;
  const std::uint64_t passes = std::max<std::size_t>(s.result.passes, 1);
  for (auto& c : s.contexts) {
    if ((step - first) % passes == 0) {
      // The Host API's pass count is CUPTI's own: a replay still wanting passes is a CUPTI surprise,
      // and its half-collected session cannot be restarted. Collection ends (guarded keeps the why).
      if (!c->passes.empty())
        throw Error(fmt::format("profiled step at program step {}: CUPTI wanted more than the {} passes its plan "
                                "said after {} steps; counters stop here", c->profiled_step, passes, c->passes.size()));
      c->passes.clear();
      c->first_pass_launch_ns.clear();
      c->profiled_step = step;
    }
    c->passes.emplace_back();
    c->session->start();
  }
}

void step_replay_on_launch(State&, ContextProfiler& c, std::uint32_t cbid, const CUpti_CallbackData& info) {
  if (!c.session->running() || c.passes.empty()) return;
  trace::LaunchSignature sig = launch_signature(cbid, info);
  sig.correlation = runtime_launch_correlation != 0 ? runtime_launch_correlation : info.correlationId;
  if (c.passes.size() == 1) {
    std::uint64_t now = 0;
    COUNTERS_CHECK(cuptiGetTimestamp(&now));
    c.first_pass_launch_ns.push_back(now);
  }
  c.passes.back().push_back(std::move(sig));
}

bool selected(State& s, const char* symbol) {
  if (symbol != nullptr && trace::is_timing_probe_kernel(symbol)) return false;
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
  s.result = trace::KernelCounters{};
  s.result.metric_set = options.metric_set;
  s.result.metrics = s.metric_names;
  s.replay = options.replay_mode();
  s.result.replay = s.replay;
  s.launches_by_name.clear();
  s.in_window_step = false;
  s.failed = false;
  s.enabled = true;
}

bool counters_enabled() { return state().enabled; }

void counters_on_profiler_initialized(void (*hook)()) { profiler_initialized_hook = hook; }

void counters_on_runtime_launch(const CUpti_CallbackData& info) {
  if (inside_profiler) return;
  runtime_launch_correlation = info.callbackSite == CUPTI_API_ENTER ? info.correlationId : 0;
}

void counters_on_launch(const CUpti_CallbackData& info, std::uint32_t cbid) {
  if (inside_profiler) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  guarded(s, [&] {
    CUcontext context = info.context;
    if (context == nullptr && call_driver("cuCtxGetCurrent", &context) != CUDA_SUCCESS) return;
    if (info.callbackSite == CUPTI_API_EXIT) {
      // Kernel replay: every pass ran inside the launch call; decode now, so nothing is left
      // pending between launches or for the exit handlers.
      if (s.replay == trace::CounterReplay::kernel)
        for (auto& c : s.contexts)
          if (c->context == context) stop_session(s, *c);
      return;
    }
    if (capturing(launch_stream(cbid, info.functionParams))) {
      ++s.result.captured_launches;
      return;  // captured, not run: no range will be made for it
    }
    if (s.replay == trace::CounterReplay::steps) {
      for (auto& c : s.contexts)
        if (c->context == context) step_replay_on_launch(s, *c, cbid, info);
      return;
    }
    ContextProfiler& c = context_profiler(s, context);
    debug(info.symbolName != nullptr ? info.symbolName : "(unnamed kernel)", info.correlationId);
    if (!selected(s, info.symbolName)) {
      stop_session(s, c);  // the kernel about to run must not be profiled
      return;
    }
    if (c.pending.size() >= s.options.ranges_per_decode) stop_session(s, c);
    if (!c.session->running()) start_session(c);
    std::uint64_t now = 0;
    COUNTERS_CHECK(cuptiGetTimestamp(&now));
    c.pending.push_back({runtime_launch_correlation != 0 ? runtime_launch_correlation : info.correlationId, now,
                         launch_signature(cbid, info)});
    ++s.result.launches_profiled;
  });
}

void counters_on_graph_launch(const CUpti_CallbackData& info) {
  if (inside_profiler) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (info.callbackSite != CUPTI_API_ENTER) return;
  ++s.result.graph_launches;
  if (s.replay == trace::CounterReplay::steps) {
    // A graph's kernels become ranges with no launch call of their own: the pass cannot be matched.
    for (auto& c : s.contexts)
      if (c->session->running() && !c->passes.empty()) c->passes.back().push_back({0, "(a CUDA graph launch)", {}, {}});
    return;
  }
  guarded(s, [&] { stop_all_sessions(s); });
}

void counters_on_step(std::uint64_t step) {
  State& s = state();
  if (inside_profiler || !s.enabled || !s.options.steps) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.replay == trace::CounterReplay::steps) {
    guarded(s, [&] { step_replay_on_step(s, step); });
    return;
  }
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
  // Stopped by the program (an in-process trace), the pass in progress may be the last one: end it.
  // Not at exit, where no profiler call is made (see below).
  if (s.replay == trace::CounterReplay::steps && !process_exiting)
    guarded(s, [&] {
      for (auto& c : s.contexts) end_pass(s, *c);
    });
  for (auto& c : s.contexts)
    if (s.replay == trace::CounterReplay::steps && !c->passes.empty()) {
      // The program stopped stepping before the step's passes were all in: nothing to decode.
      s.result.mismatches.push_back(fmt::format("profiled step at program step {}: the program ended after {} of its "
                                                "{} passes: no counters (run more steps)", c->profiled_step,
                                                c->passes.size(), s.result.passes));
      for (const auto& pass : c->passes)
        for (const auto& launch : pass) s.result.perturbed.push_back(launch.correlation);
      c->passes.clear();
      if (!process_exiting && c->session->running()) guarded(s, [&] { c->session->stop_pass(); });
    }
  guarded(s, [&] {
    for (auto& c : s.contexts) {
      // At exit only what is pending is decoded (kernel replay decodes at each launch's return, so
      // normally nothing): on the H200, cuptiRangeProfilerDisable called from an atexit handler
      // never returned, and the process ends anyway.
      if (process_exiting)
        stop_session(s, *c);
      else
        retire(s, *c);
    }
  });
  s.contexts.clear();
  s.enabled = false;
  std::sort(s.result.perturbed.begin(), s.result.perturbed.end());
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

std::string counter_chip(int device) { return detail::counter_chip_name(device); }

trace::CounterPassPlan counter_pass_plan(const trace::CounterOptions& options, const std::string& chip) {
  options.validate();
  return detail::plan_counter_passes(chip, options.metric_names(), options.metrics);
}
}  // namespace ridge
