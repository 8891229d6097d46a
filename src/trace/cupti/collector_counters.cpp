// The CUPTI collector's part in the hardware counters (kernel_counters.hpp): the launch, NVTX and
// context callbacks routed to them, and the kernels they replayed placed in the trace at stop.
#include <cupti.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "trace/cupti/collector_state.hpp"
#include "trace/cupti/kernel_counters.hpp"

namespace ridge::detail::collector {

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
  const trace::CounterRowIndex rows(t.counters);
  for (trace::Kernel& k : s.replayed_kernels) {
    const trace::CounterRow* row = rows.find(k);
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

}  // namespace ridge::detail::collector
