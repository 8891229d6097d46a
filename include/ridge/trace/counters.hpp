#pragma once
// The measured roofline (`ridge trace --counters roofline`), built from the hardware counters a
// trace collected (ridge/trace/kernel_counters.hpp): per kernel, operator or step, bytes, FLOPs,
// the bound and the win; its cost, text, plot and records. CPU-only
// (src/trace/model/counter_roofline.cpp, src/trace/model/counters.cpp).
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/bound.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"
#include "ridge/trace/kernel_counters.hpp"
#include "ridge/trace/launch_work.hpp"

namespace ridge {
struct DeviceCeilings;
}

namespace ridge::trace {

struct Trace;

LaunchWork launch_work(const KernelCounters& counters, const CounterRow& row);
/// The work of every row together: bytes, FLOPs and profiled durations summed; the SM clock
/// weighted by each row's profiled duration (a plain mean where no row has one).
LaunchWork total_work(const KernelCounters& counters);

/// The ceiling dtype name a precision is judged against: "tensor_bf16" -> "bf16", "fp32" -> "fp32".
std::string ceiling_dtype_of(const std::string& precision);

// What limits a kernel: ridge::Bound (bound.hpp), the same type the model's classify returns
// (named here too, so trace::Bound keeps meaning it).
using ridge::Bound;

/// One kernel name (or NVTX operator, or step) on the measured roofline.
struct CounterRooflineRow {
  std::string name;
  std::uint64_t calls = 0;           ///< launches in the trace
  std::uint64_t profiled_calls = 0;  ///< launches with counters
  /// Time of the launches that ran untouched (profiled launches' replayed times never count);
  /// when every launch was profiled, the profiled passes' durations, and `time_from_profiled_pass`.
  double time_ns = 0;
  bool time_from_profiled_pass = false;
  double time_share = 0;          ///< of all kernel time in the trace
  // Per call, averaged over the profiled launches.
  double dram_bytes = 0, l2_bytes = 0, flops = 0;
  std::map<std::string, double> flops_by_precision;
  std::string precision;          ///< dominant precision ("" = no FLOPs)
  double intensity = 0;           ///< FLOPs per DRAM byte (0 when no DRAM traffic)
  double attained_flops_per_s = 0, attained_bytes_per_s = 0;
  double flops_share_of_peak = 0, bytes_share_of_peak = 0;  ///< of the ceilings (0 when unknown)
  Bound bound = Bound::neither;
  std::string reason;             ///< why this bound, in words
  double time_at_roof_ns = 0;     ///< all calls, at the roof of the binding resource
  double win_ns = 0;              ///< time_ns - time_at_roof_ns (>= 0)
  double whole_speedup = 1;       ///< Amdahl: the whole trace's kernel time over it minus the win
};

/// What one row of the measured roofline gathers: the launches of one kernel name, the kernels
/// launched inside one NVTX range name (an operator: the innermost range on the launching thread
/// other than the step range), or the kernels launched inside one step.
enum class CounterGrouping { kernel, nvtx_range, step };
std::string to_string(CounterGrouping g);
/// "kernel", "nvtx_range" (also "nvtx", "operator"), "step"; throws UsageError naming field "by".
CounterGrouping counter_grouping_from_string(const std::string& text);

struct CounterRooflineOptions {
  CounterGrouping by = CounterGrouping::kernel;
  /// NVTX range marking one step: needed to group by step; left out of the operator ranges.
  std::string step_range;
  /// Throws UsageError naming the field (grouping by step without a step range).
  void validate() const;
};

struct CounterRoofline {
  CounterGrouping by = CounterGrouping::kernel;
  /// Rows ranked by win, largest first: kernel names, NVTX ranges or steps (see `by`). A row of
  /// several kernel names adds up its launches: each launch with counters counts its own, one
  /// without counts its kernel name's mean, and times come from untouched launches as for kernels.
  std::vector<CounterRooflineRow> kernels;
  double kernel_time_ns = 0;      ///< all kernels in the trace, untouched launches
  std::string ceilings_source;    ///< where the ceilings come from, for sentences
  double memory_bytes_per_s = 0;
  std::map<std::string, double> peak_flops_per_s;
  std::vector<std::string> notes;
};

/// Kernels whose launches took less than this are launch- or latency-bound whatever their counters.
inline constexpr double latency_bound_below_ns = 5000;
/// A kernel at or above this share of its roof is bound by it; below, neither resource binds it.
inline constexpr double bound_share_threshold = 0.5;

/// The measured roofline of every profiled kernel name in `trace`, against `ceilings`; or, with
/// `options.by`, of every NVTX range or step whose kernels have counters. A step row's
/// `whole_speedup` is that step's own (its kernel time over it minus the win).
CounterRoofline counter_roofline(const Trace& trace, const DeviceCeilings& ceilings,
                                 const CounterRooflineOptions& options = {});
/// What profiling cost, measured from the trace's own steps: the wall time of the steps that ran
/// under profiling against the program's other steps (the first step, start-up, left out).
struct ProfilingCost {
  std::size_t profiled_steps = 0, other_steps = 0;
  double profiled_step_ns = 0, other_step_ns = 0;  ///< medians (0 when none)
  double extra_ns = 0;  ///< sum over the profiled steps of (their time - other_step_ns)
  bool known() const { return profiled_steps > 0 && other_steps > 0; }
};
/// The steps are the NVTX ranges named `step_range` (in start order, step i the i-th). A step is
/// profiled when it is in the counters' steps_taken (step replay) or holds a profiled launch.
ProfilingCost profiling_cost(const Trace& trace, const std::string& step_range);
/// "3 profiled steps took 1.2 s (410 ms each) against 95 ms for the other 11: profiling cost 0.9 s".
std::string to_text(const ProfilingCost& cost);

/// What the collection did and cost, in words: launches with counters, how they were replayed,
/// launches left without (graphs, captures, steps whose passes differed: each named), whether
/// the L2 was flushed, and the measured cost (profiling_cost over `step_range`'s steps).
std::string counters_summary(const Trace& trace, const std::string& step_range);

/// A text table of the top `rows` kernels.
std::string to_text(const CounterRoofline& r, std::size_t rows = 15);
nlohmann::json to_json(const CounterRoofline& r);

/// The measured roofline drawn: one point per row at its measured intensity and attained FLOP/s,
/// its marker's area by its share of the kernel time, the `labelled` rows of largest win labelled
/// (the rest named in their tooltips), under the ceilings' memory slope, roofs and ridge points.
/// Rows without both FLOPs and DRAM bytes have no place on a log-log roofline: Plot::warnings
/// counts them.
Plot counter_roofline_plot(const CounterRoofline& r, const DeviceCeilings& ceilings, std::size_t labelled = 8,
                           const std::string& title = "");

/// One record per row (Method::cupti_trace, gated informational: a breakdown, not a timing): its
/// per-call time as the sample, measured DRAM bytes and FLOPs per call, params grouping and group,
/// the bound in extra "bound" and the whole row in extra "counter_roofline_row". The writers turn
/// them into JSON, CSV and Markdown.
std::vector<Record> counter_records(const CounterRoofline& r);

}  // namespace ridge::trace
