#pragma once
// The trace event model, its analysis and the Chrome/Perfetto writer. CPU-only: the CUPTI
// collector (src/trace) fills a Trace; everything here works on any machine, on synthetic events
// in tests and on saved traces (`ridge trace --analyze FILE`).
//
// Times are nanoseconds on one clock (CUPTI's timestamp: host API calls and GPU activity alike).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace ridge::trace {

using Nanoseconds = std::uint64_t;

/// Interned strings (kernel, API and range names): events carry a 32-bit id, so a trace of a
/// million launches of ten kernels stores ten names.
class StringTable {
 public:
  /// Id of `text`, adding it on first use.
  std::uint32_t intern(std::string_view text);
  const std::string& at(std::uint32_t id) const { return strings_.at(id); }
  std::size_t size() const { return strings_.size(); }
  /// Id of `text` if present.
  std::optional<std::uint32_t> find(std::string_view text) const;

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

struct Dim3 {
  std::int32_t x = 1, y = 1, z = 1;
  bool operator==(const Dim3&) const = default;
};

/// A kernel as the GPU ran it (CUPTI concurrent-kernel record).
struct Kernel {
  std::uint32_t name = 0;  ///< StringTable id (demangled name)
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  Nanoseconds start = 0, end = 0;
  Dim3 grid, block;
  std::uint32_t correlation = 0;  ///< joins the launch API call
  std::uint64_t external_id = 0;  ///< from an external correlation (e.g. a framework op), 0 if none
  std::uint32_t registers_per_thread = 0;
  std::uint32_t shared_memory_bytes = 0;  ///< static + dynamic
  std::uint32_t graph_id = 0;             ///< CUDA graph the kernel ran in, 0 if none
  /// When the host queued the launch (CUPTI's latency timestamp), 0 if not recorded. The tracer
  /// records it where the launch call itself is not recorded (TracerOptions::launch_calls).
  Nanoseconds queued = 0;
  /// When the kernel was launched, as far as the kernel record alone says: queued, else its start.
  Nanoseconds queued_or_start() const { return queued != 0 ? queued : start; }
};

enum class MemcpyKind : std::uint8_t { unknown, host_to_device, device_to_host, device_to_device, host_to_host, peer_to_peer };
/// "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "unknown".
std::string to_string(MemcpyKind kind);
MemcpyKind memcpy_kind_from_string(std::string_view text);

struct Memcpy {
  MemcpyKind kind = MemcpyKind::unknown;
  std::uint64_t bytes = 0;
  std::uint32_t device = 0, stream = 0;
  Nanoseconds start = 0, end = 0;
  std::uint32_t correlation = 0;
  std::uint64_t external_id = 0;
};

struct Memset {
  std::uint64_t bytes = 0;
  std::uint32_t device = 0, stream = 0;
  Nanoseconds start = 0, end = 0;
  std::uint32_t correlation = 0;
  std::uint64_t external_id = 0;
};

enum class ApiDomain : std::uint8_t { runtime, driver };

/// A CUDA runtime or driver API call on a host thread.
struct ApiCall {
  ApiDomain domain = ApiDomain::runtime;
  std::uint32_t name = 0;  ///< StringTable id, e.g. "cudaLaunchKernel" (version suffix removed)
  std::uint32_t process = 0, thread = 0;
  Nanoseconds start = 0, end = 0;
  std::uint32_t correlation = 0;
  std::uint64_t external_id = 0;
};

enum class SyncKind : std::uint8_t { unknown, event_synchronize, stream_wait_event, stream_synchronize, context_synchronize };
/// "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync", "Sync".
std::string to_string(SyncKind kind);
SyncKind sync_kind_from_string(std::string_view text);

/// The host waiting for the GPU (CUPTI synchronization record).
struct Sync {
  SyncKind kind = SyncKind::unknown;
  std::uint32_t device = 0, stream = 0;
  Nanoseconds start = 0, end = 0;
  std::uint32_t correlation = 0;  ///< joins the API call that waited
};

/// An NVTX range (push/pop or start/end) or, when `marker`, an instantaneous NVTX mark.
struct NvtxRange {
  std::uint32_t name = 0;
  std::uint32_t process = 0, thread = 0;
  Nanoseconds start = 0, end = 0;  ///< end == start for a marker
  int depth = 0;                   ///< nesting level on its thread (0 = outermost); set by finalize()
  bool marker = false;
};

/// CUPTI external correlation: API call `correlation` ran under the external id.
struct ExternalCorrelation {
  std::uint32_t correlation = 0;
  std::uint64_t external_id = 0;
  std::uint32_t kind = 0;
};

/// Events left out, or repaired, because their times made no sense (a duration below zero, an
/// end before the start): counted by reason, so the analysis reports them instead of drawing
/// garbage spans.
struct RejectedEvents {
  std::string reason;  ///< what was done, then which events: "dropped: ... that end before they begin"
  std::uint64_t count = 0;
  bool operator==(const RejectedEvents&) const = default;
};

/// Where the traced process sat in a multi-process job (MPI, SLURM, torchrun), read from its
/// launcher's environment (trace_ranks.hpp: rank_from_environment). Written into the Chrome trace
/// as "distributedInfo" {rank, world_size, backend}, the key Holistic Trace Analysis reads.
struct DistributedInfo {
  int rank = -1;          ///< -1: not part of a job ridge recognized
  int world_size = 0;
  int local_rank = -1;    ///< rank on its host (-1 = unknown)
  std::string backend = "nccl";
  std::string launcher;   ///< "torchrun", "openmpi", "mpich", "slurm"
  std::string job;        ///< the launcher's job id ("" = unknown): rank files of one run share it
  std::string host;       ///< host name
  bool known() const { return rank >= 0 && world_size > 0; }
};

/// One trace: every event, the strings they name, and how it was collected.
struct Trace {
  StringTable strings;
  std::vector<Kernel> kernels;
  std::vector<Memcpy> memcpys;
  std::vector<Memset> memsets;
  std::vector<ApiCall> api_calls;
  std::vector<Sync> syncs;
  std::vector<NvtxRange> ranges;
  std::vector<ExternalCorrelation> external_correlations;

  std::uint64_t dropped_records = 0;  ///< CUPTI records lost for lack of buffer space
  std::uint64_t incomplete_records = 0;  ///< GPU records without timestamps (work unfinished at stop)
  std::vector<RejectedEvents> rejected_events;  ///< by reason, in the order first seen
  std::uint32_t process_id = 0;       ///< the traced process
  std::string command;                ///< what was traced (program and arguments), if known
  std::string window;                 ///< the window applied, described ("" = everything)
  Nanoseconds collection_start = 0, collection_stop = 0;  ///< when tracing ran (0 = unknown)
  std::unordered_map<std::uint32_t, std::string> device_names;
  DistributedInfo distributed;        ///< rank and world size when traced inside a multi-process job

  /// Earliest timestamp of any event (collection_start when there are none).
  Nanoseconds origin() const;
  /// Latest end of any event.
  Nanoseconds last_end() const;
  std::size_t event_count() const;
  /// Counts `count` events under `reason` (added to an existing entry of the same reason).
  void count_rejected(const std::string& reason, std::uint64_t count = 1);
};

/// After collection: copies external ids onto the events they correlate with, sorts every event
/// list by start time and computes NVTX nesting depth per thread.
void finalize(Trace& trace);

/// Demangles a C++ symbol (returns it unchanged when it is not a mangled name).
std::string demangle(const char* symbol);

/// Strips CUPTI's version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string strip_api_version(std::string_view name);

// ---- windows: keep warm-up out of the numbers --------------------------------------------------

struct Window {
  double skip_seconds = 0;         ///< drop what began in the first S seconds of collection
  std::uint64_t skip_kernels = 0;  ///< drop everything launched before the (N+1)-th kernel's launch
  std::string nvtx_range;          ///< keep only what was launched inside NVTX ranges of this name
  bool profiler_range = false;     ///< keep only what lies between cudaProfilerStart and Stop calls
  /// Keep what began at or after the start of the first NVTX range of this name: the steady state
  /// from the first step on, start-up (weight loading, compilation, warm-up) left out. Nothing is
  /// kept when no such range exists (the window's description says so).
  std::string from_range;
  bool empty() const {
    return skip_seconds <= 0 && skip_kernels == 0 && nvtx_range.empty() && !profiler_range && from_range.empty();
  }
  std::string describe() const;
};

/// The part of `trace` inside the window. Host events are kept when they begin inside it; GPU
/// activity is kept when its launch call was kept (or, without one, when it was queued or, without
/// a queue time, began inside).
Trace apply_window(const Trace& trace, const Window& window);

// ---- analysis ----------------------------------------------------------------------------------

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

  Nanoseconds trace_span_ns = 0;    ///< first to last event of any kind
  Nanoseconds kernel_span_ns = 0;   ///< first kernel start to last kernel end
  Nanoseconds kernel_time_ns = 0;   ///< summed kernel durations (overlapping kernels count twice)
  Nanoseconds gpu_busy_ns = 0;      ///< union of kernel intervals over all streams and devices
  /// Share of the summed kernel time during which another kernel was running too:
  /// (kernel_time - gpu_busy) / kernel_time. Concurrent streams and programmatic dependent launch
  /// (a kernel starts, then waits on its predecessor) make it > 0; per-kernel totals then include
  /// that waiting and sum to more than the GPU was busy.
  double kernel_overlap_fraction = 0;
  Nanoseconds gpu_active_ns = 0;    ///< union of kernel, memcpy and memset intervals
  double busy_fraction_of_kernel_span = 0;
  double busy_fraction_of_trace_span = 0;

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
  std::vector<StepStat> steps;
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

// ---- "what if this kernel were S times faster" ------------------------------------------------

struct KernelWhatIf {
  std::string query;                   ///< the name asked for
  std::vector<std::string> matched;    ///< kernel names it matched (exact, else substring)
  std::uint64_t launches = 0;
  Nanoseconds kernel_time_ns = 0;      ///< summed time of the matched kernels
  double speedup = 1;                  ///< S
  double fraction_of_busy = 0;         ///< kernel_time / gpu_busy (capped at 1)
  double fraction_of_span = 0;         ///< kernel_time / trace span (capped at 1)
  double overall_speedup_busy = 1;     ///< Amdahl on GPU busy time: the GPU-bound upper bound
  double overall_speedup_span = 1;     ///< Amdahl on the wall span: if the host never waits
  Nanoseconds busy_saved_ns = 0;       ///< kernel_time * (1 - 1/S)
  std::string explanation;             ///< one paragraph saying what each number means
};

/// Amdahl's law fed from a trace. Matches `kernel` exactly, else as a substring (case-sensitive)
/// of the kernel names. Throws UsageError when nothing matches (listing the top kernels) or S <= 0.
KernelWhatIf kernel_what_if(const Trace& trace, const std::string& kernel, double speedup);

// ---- Chrome trace JSON (Perfetto, chrome://tracing, PyTorch trace tools) -------------------------

/// The trace as Chrome trace-event JSON using PyTorch profiler categories and argument names:
/// timestamps in microseconds (3 decimals: nanosecond precision) relative to trace.origin().
std::string to_chrome_json(const Trace& trace);

/// Writes to_chrome_json atomically (temporary file + rename).
void write_chrome_trace(const Trace& trace, const std::string& path);

/// Rebuilds a Trace from Chrome trace JSON (ridge's or PyTorch's profiler's; finalized). Throws
/// UsageError, naming `source` and the JSON path (e.g. traceEvents[12].dur), when the text is not
/// a trace or an event's time is not a number, not finite, or beyond +-9.2e15 us. Events with a
/// negative duration are left out and counted in Trace::rejected_events. Negative timestamps are
/// valid: every time is shifted so that the earliest is 0.
Trace parse_chrome_json(const std::string& text, const std::string& source = "the trace");
/// Reads and parses a trace file.
Trace load_chrome_trace(const std::string& path);

// ---- tracing an unmodified program (`ridge trace -- CMD`) ---------------------------------------

/// How trace_program runs a program under the injection library (libridge_inject.so), which the
/// CUDA driver loads into it: the program itself is not changed.
struct ProgramTraceOptions {
  std::vector<std::string> command;        ///< the program (a path, or a name looked up in PATH) and its arguments
  std::string output = "runs/trace.json";  ///< Chrome/Perfetto trace the program writes when it ends ("" = none)
  Window window;        ///< what the trace and analysis keep (e.g. warm-up left out); profiler_range also
                        ///< switches CUPTI's kernel, copy and NVTX records off outside the windows
  AnalysisOptions analysis;       ///< rows of the top tables, the NVTX range marking a step
  std::string api = "selected";   ///< API calls recorded: none, selected (least overhead), most, all
  bool sync = false;              ///< also CUPTI synchronization records (CUPTI then hooks every runtime call)
  bool nvtx = true;               ///< record NVTX ranges
  std::size_t buffer_mb = 32;     ///< size of each CUPTI activity buffer, MiB (1 to 1024)
  /// Inside a job of several ranks, rank 0 waits this long for the other ranks' files and merges
  /// them (trace_ranks.hpp); 0 = no automatic merge.
  double merge_timeout_seconds = 60;
  std::string merged_output;      ///< the merged trace ("" = <stem>.merged<ext> beside the output)
  /// The injection library; "" = $RIDGE_INJECT_LIBRARY, else ../lib or the folder of the running executable.
  std::string inject_library;

  /// Throws UsageError for contradictory or out-of-range options (before anything runs).
  void validate() const;
};

/// How the traced program ended.
struct ProgramExit {
  int exit_code = 0;  ///< its exit code, or 128 + signal when a signal killed it
  int signal = 0;     ///< the signal that killed it, 0 when it exited
  /// The signal `ridge trace` received and passed on to the program (SIGINT, SIGTERM, SIGHUP,
  /// SIGQUIT sent to ridge), 0 when none. The program may have handled it and exited normally.
  int forwarded_signal = 0;
};

/// What trace_program found.
struct ProgramTrace {
  std::vector<std::string> command;
  ProgramExit program;
  /// Why there is no analysis: tracing failed inside the program, or no trace was written. "" = traced.
  std::string error;
  Analysis analysis;  ///< the program's trace analysed (dropped-record counts included); empty on error
  std::string trace_file;  ///< the Chrome trace written, as given in the options ("" = none asked)
  std::uint64_t events = 0;  ///< events in the trace file
  double write_seconds = 0;  ///< time the program spent writing it, in seconds
  std::string end;           ///< when the trace was written: "exit", or "signal"/"crash" (from a signal handler)
  int end_signal = 0;        ///< the signal whose handler wrote the trace (end "signal"/"crash"), else 0
  // How collection went (CUPTI's own counters).
  bool profiler_gated = false;        ///< collection was switched on and off at cudaProfilerStart/Stop
  std::uint64_t profiler_windows = 0; ///< cudaProfilerStart/Stop windows seen
  double gate_seconds = 0;            ///< time spent switching CUPTI on and off, in seconds
  std::uint64_t cupti_errors = 0;     ///< CUPTI calls that failed while switching
  std::string last_cupti_error;
  /// Traces written by further CUDA processes the program started (<stem>.pid<N><ext>, and
  /// <stem>.rank<R><ext> when the program is a launcher such as mpirun).
  std::vector<std::string> other_traces;
  DistributedInfo distributed;  ///< this process's rank when run under a launcher (rank -1 otherwise)
  std::string merged_trace;     ///< the merged trace of all ranks written at the end ("" = none)
  /// Things worth saying that are not errors (e.g. an unreadable summary file).
  std::vector<std::string> notes;
  /// The program's summary as it wrote it, with "program": {command, exit_code, signal,
  /// forwarded_signal} added.
  nlohmann::json summary;

  /// What `ridge trace` exits with: the program's code; when tracing failed, that code if it is
  /// non-zero, else 1 (runtime error).
  int exit_code() const;
};

/// Runs `options.command` with the injection library, its standard streams and Ctrl-C shared with
/// the caller, waits for it and reads the analysis it wrote. SIGINT, SIGTERM, SIGHUP and SIGQUIT
/// sent to the caller meanwhile are passed on to the program (to its process group when it leads
/// one; a Ctrl-C typed at the terminal reaches it directly), whose injection library then writes
/// what it collected; ProgramExit::forwarded_signal and a note say so. Throws UsageError for bad options or a
/// program that cannot be found or run, Error when the injection library is missing. A program that
/// runs but leaves no trace is not an exception: see ProgramTrace::error.
ProgramTrace trace_program(const ProgramTraceOptions& options);

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
