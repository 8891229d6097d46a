#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ridge/stats.hpp"
#include "ridge/trace/launch_work.hpp"

// The CUDA stream type, declared the way cuda_runtime_api.h declares it, so this header stays
// host-only: `ridge::cuda_stream` and `cudaStream_t` are the same type.
struct CUstream_st;

namespace ridge {

using cuda_stream = CUstream_st*;

/// How a number was obtained. Every result names its method. The first six are timers; the last
/// two name records that no timer produced.
enum class Method {
  cpu_wall,      ///< wall clock around CPU-only work (no GPU involved)
  wall_naive,    ///< wall clock with no synchronization: times the launch queue, NOT the work
  wall_sync,     ///< wall clock, device synchronized before start and after the work
  cuda_events,   ///< an event pair around each sample on the stream (includes launch latency)
  spin_hold,     ///< events, with the stream held by a spin kernel until the sample is queued
  graph_replay,  ///< the repetitions captured in one CUDA graph; events around its replay
  cupti_trace,   ///< not a timer: kernel durations read from a CUPTI activity trace
  none,          ///< not a timer: a check that carries no time (compare never judges it)
};
/// Every Method, in declaration order (the record reader accepts each one's to_string name).
inline constexpr Method all_methods[] = {Method::cpu_wall,    Method::wall_naive,   Method::wall_sync,
                                         Method::cuda_events, Method::spin_hold,    Method::graph_replay,
                                         Method::cupti_trace, Method::none};
/// Whether a timer produces numbers of this method (false for cupti_trace and none).
bool is_timer(Method m);
/// Throws UsageError naming `field` unless a timer produces numbers of method `m`.
void require_timer(Method m, const char* field = "method");
std::string to_string(Method m);
/// Every name method_from_string accepts, each with its method: the timers' full names and the
/// short aliases ("events", "spin", "graph", "wall", "sync", "naive"). The one list of them.
const std::vector<std::pair<std::string, Method>>& method_names();
/// Parses a name of method_names() (timers only). Throws UsageError on an unknown name.
Method method_from_string(const std::string& name);
/// One sentence saying what the method's number means.
std::string describe(Method m);

/// What one call of a timed callable did on the GPU, read from hardware counters in a pass of its
/// own after the timed samples (count_work): CUPTI's range profiler replays each kernel once per
/// pass, which distorts time, so these numbers never come from a timed call.
struct CountedWork {
  /// The most kernels one counted call may launch (ranges of the profiler's counter data image).
  static constexpr std::size_t max_kernels = 4096;

  std::string metric_set = "roofline";  ///< the metric set read (trace::counter_set_metrics)
  /// Summed over the call's kernels: DRAM bytes read and written, L2 bytes, FLOPs by precision (an
  /// FMA counts two; tensor-core FLOPs by source type), the profiled passes' durations (ns) and
  /// their SM clock (Hz, weighted by duration). `work.missing` names metrics the GPU did not give.
  trace::LaunchWork work;
  std::uint64_t kernels = 0;  ///< kernels the call launched (one profiler range each)
  std::size_t passes = 0;     ///< replay passes each kernel ran
  std::vector<std::string> metrics_not_offered;  ///< of the set, the metrics this GPU lacks
};

nlohmann::json to_json(const CountedWork& counted);
/// Reads to_json's form; throws UsageError naming what is malformed.
CountedWork counted_work_from_json(const nlohmann::json& j);

/// Raw samples (milliseconds per operation) and their summary.
struct Measurement {
  Method method = Method::cuda_events;
  std::vector<double> samples_ms;
  Summary summary;
  int repeats_per_sample = 1;
  bool l2_flushed = false;
  std::string stop_reason;  ///< why sampling stopped: "samples", "converged", "time_budget", "max_samples"
  /// The SM clock (MHz) each sample ran at, one per samples_ms entry; empty when not recorded
  /// (measure_interleaved records it where NVML reads the clock).
  std::vector<double> sample_sm_mhz;
  /// Samples taken below CudaOptions::throttle_threshold and dropped (not in samples_ms).
  int throttled_samples_dropped = 0;
  double rest_before_sample_s = 0;  ///< CudaOptions::rest_before_sample_s it was taken with
  /// Launch-free methods: how long the work ran back to back before sampling, until the SM clock
  /// stopped moving (CudaOptions::settle_max_s), in ms; 0 when not settled (no NVML, or off).
  double settle_ms = 0;
  double settled_sm_mhz = -1;  ///< the SM clock sampling started at; -1 when not read
  bool settle_reached_steady = false;  ///< false: settle_max_s ran out with the clock still moving
  /// cuda_events: the host's time to queue one operation (median over samples of the wall time from
  /// the start event's record to the end event's, over repeats_per_sample), in ms; -1 when not timed.
  /// Near the median it says the GPU waited on the host (see launch_bound_warning).
  double host_queue_ms = -1;
  /// measure_with_counters: what one call did, from hardware counters (bytes, FLOPs, kernels);
  /// unset when no counters were read.
  std::optional<CountedWork> counted;
};

/// Options of measure_wall; defaults as in the usual Python helper: samples=10, warmup=3.
struct WallOptions {
  int samples = 10;
  int warmup = 3;
  std::optional<bool> cuda;  ///< synchronize the GPU? unset = whenever a usable GPU exists
};

/// Options of the GPU-side timers; defaults as in the usual Python helper: warmup=5, samples=20, repeats=1.
/// The Python timers read these defaults and limits through the binding.
struct CudaOptions {
  /// The most operations per sample repeats == 0 chooses (auto_repeats).
  static constexpr int max_auto_repeats = 10000;
  /// Calls captured in one graph where the caller gives no count (Python's measure_graph): one
  /// replay's launch then spreads over enough calls to vanish.
  static constexpr int graph_repeats = 10;
  static constexpr double max_throttle_recovery_s = 60;
  static constexpr double max_rest_before_sample_s = 10;

  int warmup = 5;
  int samples = 20;  ///< samples taken at least (and exactly, unless adaptive)
  /// Operations per sample. 0 = choose automatically so a sample lasts about `target_sample_ms`.
  int repeats = 1;
  cuda_stream stream = nullptr;  ///< nullptr: the legacy default stream (graphs use a private stream)
  bool flush_l2 = false;         ///< cold cache: overwrite the L2 before each sample, outside the timed window
  /// Adaptive stop: keep sampling until the median's confidence interval half-width is below this
  /// fraction of the median (e.g. 0.01), or the time budget runs out. 0 disables.
  double target_ci_relative = 0;
  double time_budget_s = 10;  ///< adaptive mode only: stop after this much time
  int max_samples = 10000;
  double target_sample_ms = 0.5;  ///< used when repeats == 0
  double spin_timeout_s = 5;      ///< a held queue is released by the GPU itself after this long
  /// Throttle recovery, as nvbench's throttle threshold and recovery delay (launch-free methods:
  /// spin, graph). After each held batch the SM clock is read (NVML); a batch taken below this
  /// fraction of the device's rated SM clock is dropped and the GPU rests throttle_recovery_s.
  /// Each kept sample's clock goes into Measurement::sample_sm_mhz. 0: off; e.g. 0.75.
  double throttle_threshold = 0;
  double throttle_recovery_s = 0.05;
  /// Leave the GPU idle this long before each held batch (launch-free methods: spin, graph), as a
  /// loop with host work between samples does (nvbench's cold loop from Python idles ~1.6 ms per
  /// 8192^3 matmul). A power-limited kernel then runs at the clocks it gets after a pause, not
  /// under sustained load: 9% faster for that matmul on the H200. 0: back to back.
  double rest_before_sample_s = 0;
  /// Settle (launch-free methods: spin, graph): before sampling, run the work back to back until
  /// the SM clock stops moving, at most this long. A GPU coming from idle ramps its clock over tens
  /// of ms; a few microseconds of work sampled during the ramp reads up to 20% slow and widens
  /// every comparison of it (nvbench warms up for the same reason). 0: off. Needs NVML.
  double settle_max_s = 0.25;
  /// Settled: the last settle_readings SM clock readings lie within settle_tolerance of each other.
  double settle_tolerance = 0.01;
  int settle_readings = 4;

  /// Throws UsageError naming the first field out of its range (NaN and infinity included):
  /// samples < 1, warmup < 0, repeats < 0, max_samples < samples, target_ci_relative < 0,
  /// time_budget_s, target_sample_ms or spin_timeout_s <= 0, throttle_threshold outside [0, 1],
  /// throttle_recovery_s outside [0, max_throttle_recovery_s], rest_before_sample_s outside
  /// [0, max_rest_before_sample_s]. Every timer calls it first.
  void validate() const;
};

/// Operations per sample for repeats == 0: enough calls of `per_call_ms` to last about
/// `target_sample_ms`, within [1, CudaOptions::max_auto_repeats].
int auto_repeats(double per_call_ms, double target_sample_ms);

using HostFn = std::function<void()>;
using StreamFn = std::function<void(cuda_stream)>;

/// Median wall-clock milliseconds of fn(), synchronizing the GPU before starting and after
/// finishing each sample, so queued work is neither excluded nor borrowed. Works without a GPU
/// (then method is cpu_wall).
Measurement measure_wall(const HostFn& fn, WallOptions options = {});

/// The wrong way, kept for the demonstration: wall clock around fn() with no synchronization.
/// For asynchronous GPU work this measures how long it took to queue the work.
Measurement measure_naive(const HostFn& fn, int samples = WallOptions{}.samples, int warmup = WallOptions{}.warmup);

/// GPU-side milliseconds between two CUDA events around `repeats` calls of fn on the stream.
Measurement measure_cuda(const StreamFn& fn, CudaOptions options = {});
Measurement measure_cuda(const HostFn& fn, CudaOptions options = {});

/// Like measure_cuda, but a spin kernel holds the stream until each batch of samples is fully
/// queued, so the host's launch latency stays out of the numbers (the nvbench technique). With
/// flush_l2 each sample is a batch of its own (flush, synchronize, hold, sample, release), as in
/// nvbench's cold measurement: flushed samples queued back to back read higher and noisier.
Measurement measure_spin(const StreamFn& fn, CudaOptions options = {});

/// Captures `repeats` calls of fn (which must launch on the stream it is given) into one CUDA
/// graph and times its replays with events; reports time per call.
Measurement measure_graph(const StreamFn& fn, CudaOptions options = {});

/// Dispatches to the measurer for `method` (wall_naive and wall_sync run fn on options.stream
/// and synchronize as their method says).
Measurement measure(Method method, const StreamFn& fn, CudaOptions options = {});

// ---- hardware counters of a timed callable (defined in the tracer library, ridge_trace: CUPTI) ---

/// Throws CountersUnavailableError, saying why and what to do, when this process cannot read the
/// current GPU's hardware counters now: ridge's tracer is recording, another CUPTI client is
/// attached (Nsight Systems, Nsight Compute: CUPTI allows one per process), counters are not
/// permitted (ERR_NVGPUCTRPERM) or the GPU offers none (virtualized, MIG). NoGpuError without a GPU.
void require_work_counting();

/// Calls fn(stream) once under CUPTI's range profiler (auto range, kernel replay: each kernel is
/// replayed once per pass, its memory saved and restored) and sums the roofline counters over the
/// kernels it launched. Counts every kernel launched in the current context meanwhile, from any
/// thread. Throws as require_work_counting, and ridge::Error when the call launched more than
/// CountedWork::max_kernels kernels.
CountedWork count_work(const StreamFn& fn, cuda_stream stream = nullptr);

/// measure(method, fn, options), then one more call of fn counted by count_work (never during the
/// timed samples: replay distorts time), in Measurement::counted. Checks first
/// (require_work_counting) that counters can be read, before anything is timed.
Measurement measure_with_counters(Method method, const StreamFn& fn, CudaOptions options = {});

/// One method of an interleaved comparison. `measure(samples, warmup)` takes `samples` samples
/// after `warmup` untimed calls (e.g. a lambda around measure_cuda or measure_spin).
struct InterleavedMethod {
  std::string name;
  std::function<Measurement(int samples, int warmup)> measure;
};

/// Options of measure_interleaved.
struct InterleaveOptions {
  int samples = 20;  ///< samples per method
  int warmup = 5;    ///< untimed calls per method, once, before the first round
  int block = 1;     ///< samples a method takes per turn (1: strict round-robin)
  /// Reads the SM clock in MHz (NVML); called before the first round and after every block, outside
  /// the timed windows. Empty, or a value <= 0: no clocks recorded.
  std::function<double()> read_sm_mhz;

  /// Throws UsageError: samples < 1, warmup < 0, block < 1.
  void validate() const;
};

/// The order measure_interleaved runs its turns in: (method index, samples) per turn. Each round
/// gives every method one block, starting one method later each round (so no method always follows
/// the same one); the last round's blocks are cut to what is left.
std::vector<std::pair<int, int>> interleaved_turns(int methods, int samples, int block);

/// Times several methods in turns, so a clock or power change during sampling hits them all
/// alike (one block of samples each, round-robin; see interleaved_turns), instead of one method's
/// samples after another's. Each method's warm-up runs once first, its sample discarded. Returns
/// one Measurement per method, in the methods' order: all its samples in the order taken, their
/// summary, and (with read_sm_mhz) each sample's SM clock: the lower of the readings before and
/// after its block. Needs no GPU itself: the methods decide what they run.
std::vector<Measurement> measure_interleaved(const std::vector<InterleavedMethod>& methods,
                                             const InterleaveOptions& options);

}  // namespace ridge
