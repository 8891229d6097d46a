#pragma once
// Hardware counters per kernel as collected (`ridge trace --counters`): what the tracer asks
// CUPTI's range profiler for, what it got back per profiled launch, and how passes are planned
// and matched. Free of records and plots, so the trace event model (events.hpp) can hold them;
// the measured roofline built from them is ridge/trace/counters.hpp. CPU-only
// (src/trace/model/counters.cpp, src/trace/model/counter_passes.cpp); collection is in
// src/trace/cupti/kernel_counters.cpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ridge::trace {

/// How a metric set of several passes is collected.
/// - steps: the program's own repeated steps replay it (CUPTI's user replay): pass p of a profiled
///   step runs on the p-th step after it, so nothing is saved or restored. Needs a step window.
/// - kernel: CUPTI replays each profiled kernel once per pass inside its launch, saving and
///   restoring the memory it writes (what Nsight Compute does): for programs without steps.
enum class CounterReplay { steps, kernel };
std::string to_string(CounterReplay r);
/// "steps" or "kernel"; throws UsageError naming field "replay".
CounterReplay counter_replay_from_string(const std::string& text);

/// Which launches are profiled and what is read. Replay costs time (every profiled kernel runs
/// once per pass, serialized), so the user picks the launches.
struct CounterOptions {
  /// A named metric set (counter_set_names()), or "" for only `metrics`.
  std::string metric_set = "roofline";
  /// Raw metric names added to the set (CUPTI's names with their rollup, e.g. "dram__bytes_read.sum").
  std::vector<std::string> metrics;
  /// Profile every launch inside these steps (0-based, inclusive), counted by the pushes of the
  /// NVTX range `step_range` on any thread. Unset: no step window.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> steps;
  std::string step_range;  ///< NVTX range marking a step (needed with `steps`)
  /// Profile at most this many launches of each kernel name (0 = no limit). Applies inside the
  /// step window too when one is given.
  std::uint64_t first_launches_per_kernel = default_first_launches;
  /// Launches decoded together (the counter data image holds this many ranges). With step
  /// replay, the launches of one step (more are dropped, and counted).
  std::size_t ranges_per_decode = 4096;
  /// How passes are replayed; unset: by steps when a step window is given, else per kernel.
  std::optional<CounterReplay> replay;

  /// Without a step window, the first launches of each kernel name profiled by default.
  static constexpr std::uint64_t default_first_launches = 3;

  /// Throws UsageError naming the field (unknown set, empty set and list, steps reversed, steps
  /// without a step range, ranges_per_decode 0).
  void validate() const;
  /// The metric names to collect: the set's, then `metrics` (duplicates removed). An entry
  /// "a|b" names alternatives: the first one the GPU offers is collected (metric_alternatives).
  std::vector<std::string> metric_names() const;
  /// `replay`, or its default for the other options.
  CounterReplay replay_mode() const;
  /// The program's steps a step window takes with `passes` passes a step: profiled step k
  /// (k = 0 .. LAST-FIRST) runs pass p on step FIRST + k * passes + p. {0, 0} without a window.
  std::pair<std::uint64_t, std::uint64_t> steps_taken(std::size_t passes) const;
};

/// The counters a user asks for, as the command line and Python take them: counter_options turns
/// a request into CounterOptions with ridge's defaults, so that both front ends mean the same.
struct CounterRequest {
  /// A metric set (counter_set_names()), or raw_counter_set for `metrics` alone.
  std::string set;
  std::vector<std::string> metrics;  ///< raw metrics added to the set
  std::string steps;                 ///< "FIRST..LAST" (or "N"): profile every launch of these steps; "" = none
  /// At most this many launches of each kernel name (0 = no limit). Unset: every launch of a step
  /// window, else CounterOptions::default_first_launches.
  std::optional<std::uint64_t> first_launches;
  std::string replay;      ///< "steps", "kernel", "" = the default
  std::string step_range;  ///< the NVTX range marking a step
};

/// The name that asks for a request's `metrics` alone, without a set.
inline constexpr const char* raw_counter_set = "raw";

/// The options `request` asks for, validated (UsageError naming the field). A limit of launches
/// per kernel inside a step window profiles the first launches of each kernel, so it is replayed
/// per kernel unless `replay` says otherwise.
CounterOptions counter_options(const CounterRequest& request);

/// "a|b" -> {"a", "b"}; a plain name -> {name}.
std::vector<std::string> metric_alternatives(const std::string& entry);

/// ridge's own timing instruments (the stream hold, the empty launch, the busy wait): the timers
/// launch them to hold a stream or measure the launch floor, so counters would only distort them
/// (a profiled hold kernel spins to its timeout, a profiled empty launch reads milliseconds).
/// `symbol`: CUPTI's kernel name, mangled or not.
bool is_timing_probe_kernel(std::string_view symbol);

nlohmann::json to_json(const CounterOptions& options);
/// Reads to_json's form and validates it; throws UsageError.
CounterOptions counter_options_from_json(const nlohmann::json& j);

/// "10..12" -> {10, 12}; "7" -> {7, 7}. Throws UsageError on anything else.
std::pair<std::uint64_t, std::uint64_t> parse_step_window(const std::string& text);
/// The named metric sets: "roofline".
std::vector<std::string> counter_set_names();
/// The metrics of a named set; throws UsageError for an unknown name.
const std::vector<std::string>& counter_set_metrics(const std::string& set);

/// One profiled launch: its counters, in the order of KernelCounters::metrics.
struct CounterRow {
  std::uint32_t correlation = 0;  ///< the launch's CUPTI correlation id (joins its kernel)
  std::uint32_t device = 0;
  std::vector<double> values;
  /// Host time of the launch call (CUPTI's clock, ns). CUPTI gives a replayed kernel no GPU times,
  /// so the trace places it here, lasting its profiled pass's duration.
  std::uint64_t launch_ns = 0;
  /// The launch's grid and block (zeros: not known). CUPTI gives kernels of the profiler's own the
  /// correlation id of the launch they serialize (the range profiler's WaitNs, one per profiled
  /// launch under step replay): the shape tells the launch's kernel from them.
  std::array<std::int32_t, 3> grid{}, block{};
};

/// What the range profiler collected in one trace.
struct KernelCounters {
  std::string metric_set;            ///< as asked ("" = raw list only)
  std::vector<std::string> metrics;  ///< column names of every row
  std::vector<std::string> metrics_not_offered;  ///< of the named set, the ones this GPU lacks
  std::vector<CounterRow> rows;
  std::size_t passes = 0;            ///< replay passes each profiled kernel ran
  CounterReplay replay = CounterReplay::kernel;  ///< how the passes were replayed
  /// Step replay: the program's steps that ran a pass ([first, last], {0, 0} = none) and the
  /// profiled steps whose passes all completed.
  std::pair<std::uint64_t, std::uint64_t> steps_taken{0, 0};
  std::uint64_t steps_profiled = 0;
  /// Step replay: launches that ran under profiling in a later pass of a profiled step. They carry
  /// no counters (their pass-0 twin does), and their times, serialized by profiling, never count.
  std::vector<std::uint32_t> perturbed;  ///< sorted
  /// Step replay: launches whose passes did not line up (another kernel, grid or block at the same
  /// position of a later pass, or a different count): they got no counters. One line each.
  std::vector<std::string> mismatches;
  /// Whether the L2 cache was flushed before each profiled kernel (CUPTI does not; Nsight Compute
  /// does by default, so compare with `ncu --cache-control none`).
  bool l2_flushed = false;
  std::uint64_t launches_profiled = 0;
  std::uint64_t graph_launches = 0;     ///< graph launches seen: their kernels are not profiled
  std::uint64_t captured_launches = 0;  ///< launches into a stream being captured: not profiled
  std::uint64_t ranges_dropped = 0;     ///< ranges CUPTI dropped (rows lost)
  std::uint64_t ranges_unmatched = 0;   ///< decoded ranges that could not be tied to a launch
  /// Wall time ridge's own calls into the profiler took (set-up, start, stop, decode). Not the
  /// cost of profiling: kernel replay runs inside the launch calls, so see the steps' wall times.
  double profiling_seconds = 0;
  std::string error;                    ///< why collection stopped early ("" = it did not)

  bool empty() const { return rows.empty(); }
  /// Column of `metric`, nullopt when it was not collected.
  std::optional<std::size_t> column(const std::string& metric) const;
  /// Whether the launch ran under profiling without a row of its own (step replay's later passes).
  bool is_perturbed(std::uint32_t correlation) const;
};

/// One launch as the step replay matches it across passes: by position, name, grid and block.
struct LaunchSignature {
  std::uint32_t correlation = 0;
  std::string name;
  std::uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  bool operator==(const LaunchSignature& o) const;  ///< name, grid and block (not the correlation)
};

/// How the passes of one profiled step line up: the passes' launch lists, pass 0 first, and the
/// number of decoded ranges (CUPTI's range i is the i-th launch of every pass). When every pass
/// launched as many kernels as there are ranges, launch i gets range i wherever all passes ran the
/// same kernel (name, grid, block) at position i: a launch whose grid grew (a KV cache) loses its
/// counters alone. When the counts differ the lists may be shifted, so only the launches before
/// the first difference keep counters. Each difference is named in `mismatches`.
struct PassMatch {
  std::vector<std::size_t> matched;  ///< positions (in pass 0) that get their range's counters
  std::vector<std::string> mismatches;
};
PassMatch match_passes(const std::vector<std::vector<LaunchSignature>>& passes, std::size_t ranges);

/// The plan for a metric set on one GPU chip, from CUPTI's Profiler Host API (no GPU needed).
struct CounterPassPlan {
  std::string chip;                             ///< e.g. "GH100"
  std::vector<std::string> metrics;             ///< resolved names, in collection order
  std::vector<std::string> metrics_not_offered; ///< entries of the set this chip lacks
  std::size_t passes = 0;                       ///< what CUPTI schedules for all of `metrics`
  /// The metrics grouped pass by pass as the Host API fits them (a greedy grouping: each group
  /// fits one pass on its own; CUPTI's own schedule takes `passes`).
  std::vector<std::vector<std::string>> groups;
};
/// The plan in words: the passes, what each holds, and what the options will cost: the steps a
/// step window takes, or the runs of each profiled kernel under kernel replay.
std::string to_text(const CounterPassPlan& plan, const CounterOptions& options);

nlohmann::json to_json(const KernelCounters& counters);
/// Reads to_json's form; throws UsageError naming the field.
KernelCounters kernel_counters_from_json(const nlohmann::json& j);

}  // namespace ridge::trace
