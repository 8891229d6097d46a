#pragma once
// Multi-rank traces (src/trace/model/ranks.cpp): which rank a process is (from its launcher's
// environment), the per-rank file names, the merged Perfetto trace with one process track per rank,
// and the analysis across ranks (communication against computation per rank, the slowest rank of
// each step). CPU-only.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/trace/events.hpp"

namespace ridge::trace {

using EnvironmentMap = std::map<std::string, std::string>;

/// This process's environment as a map (for rank_from_environment).
EnvironmentMap current_environment();

/// The rank, world size and local rank a launcher gave this process, or nullopt outside a job.
/// Looked for in this order (the most specific first: torchrun inside SLURM, mpirun inside an
/// sbatch script): torchrun (RANK, WORLD_SIZE, LOCAL_RANK, TORCHELASTIC_RUN_ID), OpenMPI
/// (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK, OMPI_MCA_ess_base_jobid), MPICH/Hydra and other PMI
/// launchers (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, PMI_JOBID), SLURM (SLURM_PROCID, SLURM_NTASKS,
/// SLURM_LOCALID, SLURM_JOB_ID.SLURM_STEP_ID). `host` is copied into the result. Throws UsageError
/// when a launcher's variables are malformed (not a number, rank outside [0, world size)).
std::optional<DistributedInfo> rank_from_environment(const EnvironmentMap& environment, const std::string& host = "");

/// This process's rank (rank_from_environment on its environment and host name).
std::optional<DistributedInfo> current_rank();

/// The file a rank writes when the world has more than one rank: "runs/trace.json" ->
/// "runs/trace.rank3.json".
std::string rank_trace_path(const std::string& output, int rank);

/// The merged trace's default name: "runs/trace.json" (or "runs/trace.rank0.json") ->
/// "runs/trace.merged.json".
std::string merged_trace_path(const std::string& output);

// ---- merging rank traces into one Perfetto trace -------------------------------------------------

/// One rank as it appears in a merged trace.
struct MergedRank {
  int rank = 0;
  std::string file;          ///< the rank trace it came from
  std::string host;
  std::uint32_t process_id = 0;
  std::string command;
  std::int64_t shift_ns = 0; ///< added to the rank's own timestamps on the merged timeline
  std::uint64_t events = 0;  ///< events taken from the file (metadata events left out)
};

struct MergeResult {
  int world_size = 0;
  std::vector<MergedRank> ranks;  ///< by rank
  std::string job;                ///< the launcher's job id the ranks share ("" = unknown)
  std::vector<std::string> hosts; ///< distinct hosts
  /// Things the user must know: ranks missing from the world, clocks of several hosts.
  std::vector<std::string> notes;
  std::string json;               ///< the merged Chrome trace
};

/// Merges rank traces (ridge's, or PyTorch profiler traces that carry "distributedInfo") into one
/// Chrome trace in which pid = rank: one process track per rank ("rank R (host, pid P)"), its host
/// threads and GPU streams as threads of it. Timestamps stay on the clock each rank recorded (the
/// host clock CUPTI reads): ranks of one host line up exactly; ranks of several hosts line up as
/// well as those hosts' clocks agree (a note says so). Throws UsageError when a text is not a trace,
/// lacks distributedInfo, two share a rank, world sizes or job ids disagree, or there are none.
MergeResult merge_rank_traces(const std::vector<std::pair<std::string, std::string>>& files_and_texts);

/// Reads the files and merges them (merge_rank_traces); writes the result atomically to `output`.
MergeResult merge_rank_trace_files(const std::vector<std::string>& files, const std::string& output);

/// What a merge did, for people: where it wrote, then one line per rank (file, events, host, pid).
std::string format_merge_result(const MergeResult& merge, const std::string& output);

/// The rank files of one run: `rank_trace_path(output, r)` for r in [0, world_size). Waits up to
/// `timeout_seconds` for all of them to exist with a modification time not before `not_before`
/// (seconds since the epoch; older files are from an earlier run). Returns the files found.
std::vector<std::string> wait_for_rank_files(const std::string& output, int world_size, double timeout_seconds,
                                             double not_before);

// ---- analysis across ranks ---------------------------------------------------------------------

/// True for NCCL's kernels (names starting with "nccl", any case: ncclDevKernel_*, ncclKernel_*).
bool is_communication_kernel(std::string_view name);

/// One rank's GPU time split into communication (NCCL kernels) and computation (every other kernel).
struct RankCommunication {
  int rank = 0;
  std::string host;
  std::uint64_t communication_kernels = 0, computation_kernels = 0;
  Nanoseconds communication_ns = 0;  ///< union of the NCCL kernels' intervals
  Nanoseconds computation_ns = 0;    ///< union of the other kernels' intervals
  Nanoseconds overlap_ns = 0;        ///< time both ran at once (the intersection of the two unions)
  Nanoseconds exposed_communication_ns = 0;  ///< communication with no computation beside it
  Nanoseconds gpu_busy_ns = 0;       ///< union of all kernels
  double overlap_fraction_of_communication = 0;  ///< overlap / communication (0 without communication)
  std::uint64_t steps = 0;           ///< NVTX step ranges found on this rank
};

/// One step (the i-th NVTX range of the step name on every rank): who took longest.
struct StepAcrossRanks {
  std::size_t index = 0;
  int slowest_rank = 0;
  Nanoseconds slowest_ns = 0;       ///< the slowest rank's step duration (host range)
  double median_ns = 0;             ///< median step duration over the ranks
  Nanoseconds fastest_ns = 0;
  double lead_over_median_ns = 0;   ///< slowest - median
  std::vector<Nanoseconds> duration_ns_by_rank;  ///< in the order of RankAnalysis::ranks
};

struct RankAnalysis {
  int world_size = 0;
  std::vector<RankCommunication> ranks;  ///< by rank
  std::string step_range;                ///< "" = no per-step comparison asked
  std::vector<StepAcrossRanks> steps;    ///< steps present on every rank
  std::vector<std::string> findings;     ///< e.g. a rank that is slowest in most steps, exposed communication
};

/// Analyses rank traces (each with `distributed` set; rank order is taken from it). `step_range`
/// names the NVTX range that marks a step ("" = no per-step comparison).
RankAnalysis analyze_ranks(const std::vector<Trace>& ranks, const std::string& step_range = "");

/// The rank traces in `files`: one merged trace (split back into its ranks) or several rank traces.
/// Throws UsageError when a file is not a trace or, with several files, one lacks distributedInfo.
std::vector<Trace> load_rank_traces(const std::vector<std::string>& files);

/// True when the file is a merged trace written by merge_rank_traces.
bool is_merged_trace_file(const std::string& path);

std::string format_rank_analysis(const RankAnalysis& analysis);
nlohmann::json to_json(const RankAnalysis& analysis);

}  // namespace ridge::trace
