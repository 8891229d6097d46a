#pragma once
// A trace analysed: top kernels, GPU busy and idle, launch latency, steps, hidden syncs (src/trace/model/analysis.cpp).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/trace/events.hpp"
#include "ridge/trace/window.hpp"

namespace ridge::trace {

struct DurationStats {
  std::uint64_t count = 0;
  Nanoseconds total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0;
  void add(Nanoseconds d);
};

struct KernelStat {
  std::string name;
  DurationStats time;
  double percent_of_kernel_time = 0;  ///< share of the summed time of all kernels
};

struct RangeStat {
  std::string name;
  DurationStats time;                 ///< host (wall) duration of the ranges
  std::uint64_t kernels = 0;          ///< kernels launched inside them (same thread, innermost or not)
  Nanoseconds kernel_time_ns = 0;     ///< summed time of those kernels
};

struct StepStat {
  /// The step's number in the program (0-based): in a scheduled trace, the one the schedule
  /// counted (ridge/trace/schedule.hpp); otherwise its place among the trace's steps.
  std::uint64_t number = 0;
  Nanoseconds start_ns = 0, duration_ns = 0;  ///< host range
  std::uint64_t kernels = 0;            ///< kernels whose launch call began inside the step (any thread;
                                        ///< without a launch call: the kernel began inside)
  /// GPU span: first start to last end of those kernels. It may begin and end after the host
  /// range when launches return before the GPU runs them; 0 when the step launched nothing.
  Nanoseconds gpu_start_ns = 0, gpu_span_ns = 0;
  Nanoseconds gpu_busy_ns = 0;          ///< union of those kernels' intervals (<= gpu_span_ns)
};

struct MemcpyStat {
  MemcpyKind kind = MemcpyKind::unknown;
  std::uint64_t count = 0, bytes = 0;
  Nanoseconds time_ns = 0;
};

/// Repeated device-to-host copies: each makes the host wait for the GPU (`.item()`, `.cpu()`).
struct HiddenSync {
  std::string api;            ///< the API call that issued it ("cudaMemcpyAsync", ...)
  std::uint64_t bytes = 0;    ///< bytes per copy
  std::uint64_t count = 0;    ///< copies of this size by this call
  Nanoseconds copy_time_ns = 0;  ///< GPU time of the copies
  Nanoseconds idle_after_ns = 0; ///< GPU idle time right after them (until the next kernel)
};

struct AnalysisOptions {
  std::size_t top = 10;          ///< rows of the top-kernel and top-range tables
  std::string step_range = "";   ///< NVTX range name marking one step ("" = no per-step numbers)
  std::uint64_t hidden_sync_min_repeats = 3;  ///< a DtoH copy repeated this often counts as in a loop
};

struct Analysis {
  std::uint64_t kernel_count = 0, memcpy_count = 0, memset_count = 0, api_count = 0, sync_count = 0, range_count = 0;
  std::uint64_t dropped_records = 0;
  std::uint64_t incomplete_records = 0;
  std::vector<RejectedEvents> rejected_events;  ///< events left out or repaired, by reason
  std::string window;  ///< the window every number and finding covers ("" = the whole trace, start-up included)

  // Hardware counters (`--counters`): launches that ran under profiling (a counter row of their
  // own, or a later pass of a step replayed for its passes: KernelCounters::perturbed) are in the
  // trace but out of every time below (kernel times, busy, gaps, launch latency, steps, ranges):
  // profiling serialized and replayed them. The steps and NVTX ranges that launched one are left
  // out of the per-step and per-range numbers alike.
  std::uint64_t kernels_left_out = 0, steps_left_out = 0, ranges_left_out = 0;
  /// Of the kernel span, the time taken by the left-out launches and the gaps beside them.
  Nanoseconds left_out_span_ns = 0;
  std::string left_out_reason;  ///< why they were left out, in words ("" = none were)

  Nanoseconds trace_span_ns = 0;    ///< first to last event of any kind
  /// First kernel start to last kernel end; with launches left out, the busy time and the idle gaps
  /// between kept launches only (left_out_span_ns less).
  Nanoseconds kernel_span_ns = 0;
  Nanoseconds kernel_time_ns = 0;   ///< summed kernel durations (overlapping kernels count twice)
  Nanoseconds gpu_busy_ns = 0;      ///< union of kernel intervals over all streams and devices
  /// Share of the summed kernel time during which another kernel was running too:
  /// (kernel_time - gpu_busy) / kernel_time. Concurrent streams and programmatic dependent launch
  /// (a kernel starts, then waits on its predecessor) make it > 0; per-kernel totals then include
  /// that waiting and sum to more than the GPU was busy.
  double kernel_overlap_fraction = 0;
  Nanoseconds gpu_active_ns = 0;    ///< union of kernel, memcpy and memset intervals
  double busy_fraction_of_kernel_span = 0;
  double busy_fraction_of_trace_span = 0;  ///< of the trace span less left_out_span_ns

  // Idle gaps inside the kernel span (between busy intervals).
  std::uint64_t gap_count = 0;
  Nanoseconds idle_time_ns = 0;         ///< kernel_span - gpu_busy
  /// gaps whose next kernel's launch call began (or, without a call, whose launch was queued)
  /// after the GPU went idle
  Nanoseconds idle_waiting_on_host_ns = 0;
  Nanoseconds idle_unattributed_ns = 0;  ///< gaps whose next kernel has neither a launch call nor a queue time
  double host_bound_fraction_of_idle = 0;
  Nanoseconds largest_gap_ns = 0;
  /// Of idle_waiting_on_host_ns, the part before the first step range began (start-up: weight
  /// loading, compilation); 0 without steps.
  Nanoseconds idle_waiting_on_host_before_first_step_ns = 0;

  // Launch latency, for the first kernel of each launch call: kernel start minus the start of the
  // call (or, where the call was not recorded, minus the launch's queue time). Split in two: queued = the part spent behind earlier work on the kernel's stream (from
  // the call's start until that work ended, when it was still running); launch overhead = the
  // rest (the call itself, the driver, the GPU front end). latency = queued + overhead.
  std::uint64_t launch_latency_count = 0;
  double launch_latency_median_ns = 0, launch_latency_mean_ns = 0, launch_latency_p90_ns = 0;
  double launch_latency_min_ns = 0, launch_latency_max_ns = 0;
  std::uint64_t launches_queued = 0;  ///< launches issued while their stream was still busy
  /// Launches in latency but not in the queued/overhead split: the first kernel on its stream in a
  /// windowed trace, whose earlier work the window may have cut out.
  std::uint64_t launches_not_split = 0;
  /// Launches in the queued/overhead split.
  std::uint64_t launches_split() const { return launch_latency_count - launches_not_split; }
  double launch_queued_median_ns = 0, launch_queued_mean_ns = 0, launch_queued_p90_ns = 0;
  double launch_queued_min_ns = 0, launch_queued_max_ns = 0;
  double launch_overhead_median_ns = 0, launch_overhead_mean_ns = 0, launch_overhead_p90_ns = 0;
  double launch_overhead_min_ns = 0, launch_overhead_max_ns = 0;
  std::uint64_t kernels_without_launch_call = 0;  ///< no API record shares their correlation id, no queue time
  /// Kernels whose launch is known by its queue time alone (TracerOptions::launch_calls off): their
  /// launch latency runs from the queue time, which comes later in the call than its start.
  std::uint64_t launches_timed_from_queue = 0;

  std::vector<KernelStat> top_kernels;
  std::vector<RangeStat> top_ranges;
  std::uint64_t distinct_kernels = 0;

  std::string step_range;
  std::vector<StepStat> steps;  ///< the steps kept (steps_left_out are not here)
  double kernels_per_step_median = 0;
  std::uint64_t kernels_per_step_min = 0, kernels_per_step_max = 0;
  double step_time_median_ns = 0, step_gpu_busy_median_ns = 0;  ///< host range; GPU busy (medians)
  double step_gpu_span_median_ns = 0;             ///< first kernel start to last kernel end (median)
  double step_busy_fraction_of_gpu_span_median = 0;  ///< per step busy / GPU span, median (<= 1)
  std::uint64_t steps_gpu_outlasting_host = 0;   ///< steps whose GPU span ends after their host range

  std::vector<MemcpyStat> memcpy_totals;
  Nanoseconds memset_time_ns = 0;
  std::uint64_t memset_bytes = 0;
  std::vector<HiddenSync> hidden_syncs;
  Nanoseconds sync_time_ns = 0;  ///< host time waiting: synchronization records, else the *Synchronize calls

  /// Warnings worth the user's attention (dropped records, host-bound idle, hidden syncs).
  std::vector<std::string> findings;

  /// Whether kernels overlapped enough (over 1% of summed kernel time) that per-kernel totals need
  /// saying they sum to more than the GPU was busy.
  bool kernel_times_overlap() const { return kernel_overlap_fraction > 0.01; }
};

/// Analyzes a finalized trace.
Analysis analyze(const Trace& trace, const AnalysisOptions& options = {});

/// The human summary `ridge trace` prints.
std::string format_analysis(const Analysis& analysis);
/// The median launch latency split as "queued / overhead"; "not split (latency L)" when no launch
/// could be split (one launch per step in a step window); "-" without launches.
std::string launch_split_text(const Analysis& analysis);

nlohmann::json to_json(const Analysis& analysis);
Analysis analysis_from_json(const nlohmann::json& j);

/// Union length of intervals [start, end) (any order, overlaps merged), in ns.
Nanoseconds union_length(std::vector<std::pair<Nanoseconds, Nanoseconds>> intervals);

/// A saved trace (ridge's or PyTorch's profiler's) re-read, windowed and analysed.
struct TraceFileAnalysis {
  std::string file;
  std::string command;  ///< what was traced, "" when the file does not say
  Analysis analysis;
};

/// Reads `path`, applies `window` (when not empty) and analyses it. Throws UsageError when the file
/// is missing or is not a trace.
TraceFileAnalysis analyze_trace_file(const std::string& path, const Window& window = {},
                                     const AnalysisOptions& options = {});
/// The analysis as `ridge trace --analyze --json` writes it: to_json(analysis) plus `trace_file`
/// and `command`.
nlohmann::json to_json(const TraceFileAnalysis& file_analysis);

}  // namespace ridge::trace
