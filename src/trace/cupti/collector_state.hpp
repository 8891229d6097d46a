// The CUPTI collector's state and the functions its parts share: collector.cpp (start, stop, the
// activity kinds switched on and off), collector_activity.cpp (CUPTI's buffers and their records,
// into the trace model), collector_callbacks.cpp (CUPTI's callback subscriber), collector_gating.cpp
// (--profiler-range), collector_steps.cpp (steps, --schedule) and collector_counters.cpp (the
// hardware counters' callbacks). Internal to the collector: collector.hpp is its interface.
#pragma once
#include <cupti.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ridge/trace/events.hpp"
#include "trace/cupti/collector.hpp"
#include "trace/cupti/profiler_gate.hpp"
#include "trace/cupti/step_counter.hpp"

namespace ridge::detail::collector {

using trace::Nanoseconds;

struct PendingRange {
  std::uint32_t name = 0, process = 0, thread = 0;
  Nanoseconds start = 0;
};

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
  CollectorOptions options;                       // this trace's
  std::vector<CUpti_ActivityKind> kinds;          // collection_kinds(options)
  bool device_kind = false;                       // CUPTI_ACTIVITY_KIND_DEVICE enabled this session
  // Per-call enables, worked out once per session so switching collection on stays cheap.
  std::vector<std::uint32_t> selected_runtime_calls, selected_driver_calls;  // ApiCalls::selected
  std::vector<std::uint32_t> trivial_runtime_calls, trivial_driver_calls;    // ApiCalls::most: switched off
  // Gated from before the first context: the selected calls are switched on once, at the start,
  // and stay on through the windows (switched on again later, CUPTI would record none of them).
  bool sticky_calls = false;
  // ApiCalls::selected after the first context: the selected calls are recorded by the
  // collector's own enter/exit callbacks, one hook per selected call and none on any other.
  std::atomic<bool> callback_calls{false};
  std::atomic<Nanoseconds> session_start{0};  // a call entered before it is not recorded
  // Gating (--profiler-range): `gate` serializes switching; control -> gate -> data is the lock order.
  std::mutex gate;
  std::atomic<bool> gated{false};
  std::atomic<std::uint64_t> session{0};  // counts collector_start calls
  bool collecting = false;  // the collection kinds are on
  ProfilerWindows windows;
  std::uint64_t gate_ns = 0, cupti_errors = 0;
  std::string last_cupti_error;
  std::atomic<bool> running{false};
  bool callbacks_registered = false;
  bool exit_hook = false;
  pid_t pid = 0;  // the process that started tracing (a fork()ed child must not touch CUPTI)
  pid_t start_thread = 0;
  bool fork_hook = false;  // refresh_process_id registered with pthread_atfork
  CUpti_SubscriberHandle subscriber = nullptr;
  // Steps (pushes of the step range): one count for the schedule and the counters' step window.
  StepCounter steps;
  std::atomic<bool> scheduled{false};
  bool marker_only = false;  // scheduled: the NVTX records alone are on, for the next step's push (gate held)
  std::vector<trace::RecordedStep> recorded_steps;  // scheduled: the active steps so far (gate held)
  bool step_open = false;    // the last recorded step has not ended yet
  /// Hardware counters: per driver callback id, 1 for a kernel launch, 2 for a graph launch; per
  /// runtime callback id, 1 for a kernel launch (its correlation id is the one its kernel carries).
  std::vector<std::uint8_t> counted_launch, counted_runtime_launch;
  std::vector<trace::Kernel> replayed_kernels;  ///< kernel records without GPU times, counters on
  std::atomic<std::uint64_t> buffers_requested{0}, buffers_completed{0}, records{0}, completions_on_start_thread{0};
  std::atomic<std::uint64_t> completion_ns{0};
};

/// A cudaProfilerStart/Stop (`runtime`) or cuProfilerStart/Stop call.
inline bool is_profiler_call(bool runtime, std::uint32_t cbid) {
  return runtime ? (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)
                 : (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart || cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
}

/// The one collector of the process, never destroyed.
State& state();

/// The string id of a runtime (`runtime`) or driver API call in this trace, by callback id.
std::uint32_t api_name(State& s, bool runtime, std::uint32_t cbid);

/// CUPTI's buffer callbacks (cuptiActivityRegisterCallbacks): a buffer for CUPTI to fill, and a
/// filled one whose records are added to the trace.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid);

// collector.cpp: the collection switched on and off, and CUPTI failures kept for the summary.
bool kernel_launch_call(std::string_view name);
void enable_collection(State& s);
std::string disable_collection(State& s);
void note_cupti_error(State& s, const std::string& message);

// collector_callbacks.cpp: CUPTI's callback (cuptiSubscribe), and this process's id as the
// callbacks check it (refresh_process_id: at start, and in a fork()ed child).
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
void refresh_process_id();
pid_t this_process();

// collector_gating.cpp: --profiler-range (gate held by the callers).
void gate_open(State& s, Nanoseconds now);
void gate_close(State& s, Nanoseconds now);
void record_profiler_call(State& s, const ProfilerCallNesting& call, Nanoseconds exit);
void enable_profiler_callbacks(State& s, bool enable);

// collector_steps.cpp: steps and --schedule.
void on_nvtx_push(State& s, CUpti_CallbackId cbid, const CUpti_NvtxData& info);
void begin_steps(State& s, const CollectorOptions& options);
void end_steps(State& s, Nanoseconds stop);

/// The NVTX push callbacks that count steps, on or off.
template <typename Check>
void switch_step_callbacks(State& s, bool on, Check&& check) {
  for (CUpti_CallbackId cbid : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx})
    check(cuptiEnableCallback(on ? 1 : 0, s.subscriber, CUPTI_CB_DOMAIN_NVTX, cbid), "cuptiEnableCallback(NVTX push)");
}

// collector_counters.cpp: the hardware counters' callbacks and replayed kernels.
void route_to_counters(State& s, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
void place_replayed_kernels(State& s);
bool only_counted(const State& s, bool runtime, std::uint32_t cbid);

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

}  // namespace ridge::detail::collector
