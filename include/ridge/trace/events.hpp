#pragma once
// The trace event model: kernels, copies, API calls, NVTX ranges and the Trace that holds them
// (src/trace/model/events.cpp). CPU-only: the CUPTI collector fills a Trace; everything else reads one.
// Times are nanoseconds on one clock (CUPTI's timestamp: host API calls and GPU activity alike).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ridge/trace/kernel_counters.hpp"
#include "ridge/trace/schedule.hpp"

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
/// launcher's environment (ridge/trace/ranks.hpp: rank_from_environment). Written into the Chrome trace
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
  KernelCounters counters;            ///< hardware counters of the profiled launches (`--counters`)
  /// The schedule the trace was recorded by (`--schedule`), and the steps it recorded, in order:
  /// their numbers in the program and spans. Empty without a schedule.
  std::optional<TraceSchedule> schedule;
  std::vector<RecordedStep> recorded_steps;

  /// Earliest timestamp of any event (collection_start when there are none).
  Nanoseconds origin() const;
  /// Latest end of any event.
  Nanoseconds last_end() const;
  std::size_t event_count() const;
  /// Counts `count` events under `reason` (added to an existing entry of the same reason).
  void count_rejected(const std::string& reason, std::uint64_t count = 1);
};

/// Each kernel record's counter row, for the trace writers and the measured roofline. A row belongs
/// to the kernel of its launch's correlation id whose grid and block are the launch's; another
/// kernel with that id is the profiler's own (profiler_kernel), never given the row.
class CounterRowIndex {
 public:
  explicit CounterRowIndex(const KernelCounters& counters);
  /// The row of `k`, nullptr when its launch was not profiled or `k` is the profiler's kernel.
  const CounterRow* find(const Kernel& k) const;
  /// Whether `k` shares a profiled launch's correlation id without being that launch's kernel.
  bool profiler_kernel(const Kernel& k) const;

 private:
  std::unordered_map<std::uint32_t, const CounterRow*> by_correlation_;
};

/// After collection: copies external ids onto the events they correlate with, sorts every event
/// list by start time and computes NVTX nesting depth per thread.
void finalize(Trace& trace);

/// Demangles a C++ symbol (returns it unchanged when it is not a mangled name).
std::string demangle(const char* symbol);

/// Strips CUPTI's version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string strip_api_version(std::string_view name);

}  // namespace ridge::trace
