// Steps and --schedule in the CUPTI collector: the NVTX pushes of the step range counted once for
// the schedule and the hardware counters' step window, and the schedule's switch at each step
// (collection on or off, the NVTX records alone on before a collected step).
#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/trace/window.hpp"
#include "trace/cupti/collector_state.hpp"
#include "trace/cupti/kernel_counters.hpp"

namespace ridge::detail::collector {

namespace {

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

}  // namespace

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

}  // namespace ridge::detail::collector
