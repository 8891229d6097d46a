#pragma once
// Beyond one GPU: NCCL collectives (`ridge collectives`), GPU-to-GPU and host copies (`ridge p2p`),
// and how ranks are launched (threads in one process, one process per GPU under MPI, or
// torchrun/SLURM-style environment variables). NCCL and MPI are loaded at run time, so nothing here
// needs either to build. The CPU parts (bus factors, shapes, expected values, launch detection,
// the NCCL library lookup, record annotation, knees, matrices, plots) are unit-tested on any
// machine. (Implementation: src/collectives/*.cpp, GPU side in src/collectives/cuda/.)
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ridge/catalog.hpp"
#include "ridge/dtype.hpp"
#include "ridge/measure.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"
#include "ridge/sweep.hpp"

namespace ridge {

// ---- operations and nccl-tests' bandwidth definitions ------------------------------------------

/// The collectives of `ridge collectives` (send_recv: each rank sends to rank+1 and receives from
/// rank-1, a ring, as nccl-tests' sendrecv does; alltoall: grouped sends and receives).
enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, send_recv };
std::string to_string(CollectiveOp op);
/// "all_reduce" (also "allreduce", "all-reduce"), ..., "send_recv" (also "sendrecv"); throws UsageError.
CollectiveOp collective_op_from_string(const std::string& name);
/// Every op, in the order above.
const std::vector<CollectiveOp>& all_collective_ops();

/// nccl-tests' bus factor: busbw = algbw x factor. 2(n-1)/n for all_reduce; (n-1)/n for
/// all_gather, reduce_scatter and alltoall; 1 for broadcast, reduce and send_recv. At n = 1 the
/// factor of the first four is 0 (no byte crosses a link). Throws UsageError for ranks < 1.
double bus_factor(CollectiveOp op, int ranks);
/// The factor as a formula: "2(n-1)/n", "(n-1)/n" or "1".
std::string bus_factor_formula(CollectiveOp op);

/// algbw = size / time and busbw = algbw x bus_factor, bytes/s.
struct CollectiveRates {
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
};
/// Rates of one call moving `bytes` (the size as nccl-tests counts it) in `seconds` over `ranks`.
CollectiveRates collective_rates(CollectiveOp op, double bytes, double seconds, int ranks);

/// The buffers of one call at a size, in elements, as nccl-tests sizes them: `bytes` is the
/// larger buffer (all_gather: the output, n x the input; reduce_scatter: the input, n x the output;
/// alltoall: each rank's whole buffer, one chunk per peer).
struct CollectiveShape {
  std::int64_t send_count = 0;  ///< elements in each rank's send buffer
  std::int64_t recv_count = 0;  ///< elements in each rank's receive buffer
  std::int64_t chunk = 0;       ///< elements per rank's block (all_gather, reduce_scatter, alltoall); else = send_count
  double bytes = 0;             ///< the size algbw divides, after rounding to whole elements and chunks
};
/// The shape for a requested size: whole elements, rounded down to a multiple of the rank count
/// where the op splits its buffer. nullopt when the size holds less than one element per rank.
std::optional<CollectiveShape> collective_shape(CollectiveOp op, std::int64_t bytes, DType dtype, int ranks);

/// The dtypes collectives run: fp32, fp16, bf16, fp64.
const std::vector<DType>& collective_dtypes();

/// The per-rank fill every check is computed from: rank r's send buffer holds, at element i, an
/// integer in [-4, 4] hashed from (r, i) (exact in every dtype, and so are sums over up to 512
/// ranks). Zeros are about 1 in 9, never a whole buffer; no period.
double collective_fill_value(int rank, std::int64_t index);
/// What element `index` of rank `rank`'s receive buffer must hold after one call of `op` over
/// `ranks` ranks with that fill (`chunk` as in CollectiveShape; root 0 for broadcast and reduce).
/// nullopt where the op leaves the element undefined (reduce on a rank other than the root).
std::optional<double> collective_expected_value(CollectiveOp op, int rank, int ranks, std::int64_t chunk,
                                                std::int64_t index);

/// How one rank's output compared with collective_expected_value.
struct CollectiveCheck {
  bool passed = false;
  std::int64_t checked = 0;
  std::int64_t mismatches = 0;
  std::int64_t first_bad_index = -1;  ///< -1: none
  double first_bad_expected = 0;      ///< what the first bad element should have held
  std::string summary() const;  ///< "checked N elements: ok", or the first mismatch
};

// ---- launch ------------------------------------------------------------------------------------

/// How the ranks of a run were started.
enum class LaunchKind {
  threads,  ///< one process, one thread per visible GPU
  mpi,      ///< one process per GPU under mpirun/srun (MPI through libridge_mpi.so)
  env,      ///< one process per GPU started by torchrun/SLURM: RANK, WORLD_SIZE, LOCAL_RANK
};
std::string to_string(LaunchKind kind);

/// A rank's place in the run.
struct LaunchInfo {
  LaunchKind kind = LaunchKind::threads;
  int rank = 0;        ///< this process's rank (threads: 0, the process drives every rank)
  int world_size = 1;  ///< processes (threads: 1; the GPU count is the rank count there)
  int local_rank = 0;  ///< rank among the processes of this node: picks the GPU
  std::string source;  ///< the variables it was read from, e.g. "OMPI_COMM_WORLD_RANK/SIZE"
};

/// The process environment as a map (for detect_launch and the NCCL lookup).
std::map<std::string, std::string> environment_map();

/// Reads how this process was launched. `launcher`: "auto" (MPI variables: OMPI_COMM_WORLD_*,
/// PMI_RANK/PMI_SIZE, PMIX_RANK, MV2_COMM_WORLD_*; then torchrun's RANK/WORLD_SIZE; then SLURM_PROCID/
/// SLURM_NTASKS; else threads), "threads", "mpi" or "env". Throws UsageError for another launcher,
/// for "env" without rank variables, and for malformed or inconsistent numbers.
LaunchInfo detect_launch(const std::map<std::string, std::string>& env, const std::string& launcher = "auto");

// ---- NCCL at run time ----------------------------------------------------------------------------

/// The variable that turns NVLink SHARP / multicast (NVLS) on in NCCL; ridge forces it to 0.
inline constexpr const char* nccl_nvls_variable = "NCCL_NVLS_ENABLE";
/// Sets NCCL_NVLS_ENABLE=0 in this process (so NCCL, loaded later, and every child inherit it).
/// Returns a note for the user when it overrode another value, else empty.
std::string force_nccl_nvls_off();
/// `env` ("NAME=VALUE" entries, e.g. for a child process) with NCCL_NVLS_ENABLE=0 in place of any value.
std::vector<std::string> with_nccl_nvls_off(std::vector<std::string> env);

/// Where NCCL is looked for, in order: $RIDGE_NCCL_LIBRARY (only it, when set); the dynamic
/// loader's search for libnccl.so.2 (LD_LIBRARY_PATH, ld.so.cache); then nvidia/nccl/lib/libnccl.so.2
/// under $VIRTUAL_ENV's site-packages and under each of `python_site_dirs` (the `nvidia-nccl-cu13`
/// wheel, e.g. PyTorch's).
std::vector<std::string> nccl_library_candidates(const std::map<std::string, std::string>& env,
                                                 const std::vector<std::string>& python_site_dirs);
/// The active python3's site-packages folders (empty when there is no python3).
std::vector<std::string> python_site_packages();
/// NCCL's version code (e.g. 22805) as "2.28.5".
std::string nccl_version_text(int code);

/// Where the MPI plugin is looked for: $RIDGE_MPI_PLUGIN when set, else libridge_mpi.so beside the
/// running executable, in ../lib, then the dynamic loader's search.
std::vector<std::string> mpi_plugin_candidates(const std::map<std::string, std::string>& env,
                                               const std::string& executable_dir);

// ---- `ridge collectives` -----------------------------------------------------------------------

/// In-place (the output overwrites the input: all_reduce's recv = send; all_gather's send is the
/// rank's block of recv; reduce_scatter's recv is the rank's block of send) or out-of-place.
enum class Placement { out_of_place, in_place };
std::string to_string(Placement placement);
/// "out" (also "out_of_place", "out-of-place") or "in" (also "in_place", "in-place"); throws UsageError.
Placement placement_from_string(const std::string& name);

/// Options of run_collectives, with the defaults of `ridge collectives`.
struct CollectivesOptions {
  std::vector<CollectiveOp> ops = all_collective_ops();
  std::vector<std::int64_t> sizes = geometric_sizes(8, 1 << 29, 4);  ///< bytes per call as nccl-tests counts them, up to 8 GiB
  std::vector<DType> dtypes = {DType::fp32};                          ///< of collective_dtypes()
  std::vector<Placement> placements = {Placement::out_of_place, Placement::in_place};
  std::optional<Method> method;  ///< nullopt: automatic (graph replay under 1 ms per call, events above); else events or graph
  int samples = 20;
  int warmup = 5;
  std::string launcher = "auto";  ///< auto, threads, mpi, env
  int gpus = 0;                   ///< threads launch: how many visible GPUs (0 = all)
  std::string rendezvous;         ///< env launch: a folder every rank sees (NCCL id and results)
  bool quick = false;             ///< all_reduce, all_gather, reduce_scatter; 2^10..2^28 every 16x; 10 samples
};

/// The options checked.
struct CollectivesPlan {
  CollectivesOptions options;  ///< with quick applied and repeats removed from the lists
};
/// Checks every option; needs no GPU. Throws UsageError naming the bad field ("dtypes: ...").
CollectivesPlan plan_collectives(const CollectivesOptions& options);

/// One rank, as rank 0 gathered it.
struct RankInfo {
  int rank = 0;
  int local_rank = 0;
  std::string hostname;
  DeviceDescription device;
  ClockReading clocks_start, clocks_end;  ///< this rank's GPU, before and after the run
};
nlohmann::json to_json(const RankInfo& info);
RankInfo rank_info_from_json(const nlohmann::json& j);

/// One curve: an op, dtype and placement over the sizes.
struct CollectiveCurve {
  CollectiveOp op = CollectiveOp::all_reduce;
  DType dtype = DType::fp32;
  Placement placement = Placement::out_of_place;
  std::vector<std::size_t> records;  ///< indices into CollectivesRun::records, by size
  double peak_busbw_bytes_per_s = 0;
  double peak_algbw_bytes_per_s = 0;
  /// True when the bus factor is 0 (world size 1): knees are then found on algbw.
  bool knees_on_algbw = false;
  std::vector<Knee> knees;  ///< sizes (bytes) reaching 70% and 90% of the peak
};

/// The result of `ridge collectives`. Only the root (rank 0) holds records and their analysis.
struct CollectivesRun {
  CollectivesPlan plan;
  LaunchInfo launch;
  int ranks = 1;       ///< NCCL ranks (GPUs) in the communicator
  bool root = true;    ///< this process is rank 0
  std::vector<RankInfo> rank_info;  ///< every rank, by rank
  std::string nccl_library, nccl_version;
  std::string nvls_note;             ///< what force_nccl_nvls_off said
  std::optional<CatalogEntry> datasheet;  ///< rank 0's GPU's catalog entry (its link bandwidths)
  std::vector<Record> records;       ///< one per (op, dtype, placement, size): every rank combined
  std::vector<CollectiveCurve> curves;
  std::vector<Finding> findings;
  Plot plot;
  double seconds = 0;
};

/// Launches (threads, MPI or environment), loads NCCL, and for every op, dtype, placement and size:
/// fills each rank's buffer, runs the op once and checks every rank's output on its GPU, then
/// times it on every rank (same calls on each), and gathers the records on rank 0. Throws
/// UsageError, NoGpuError, MissingLibraryError (NCCL or the MPI plugin), VerificationError.
CollectivesRun run_collectives(const CollectivesOptions& options, const SweepCallbacks& callbacks = {});

// CPU parts (unit-tested):

/// The params of a collectives record.
nlohmann::json collective_params(CollectiveOp op, const CollectiveShape& shape, Placement placement, int ranks);
/// One record from every rank's measurement of the same point (same calls on each rank): sample
/// i is the mean over ranks of their sample i (nccl-tests averages its time over ranks), each
/// rank's median goes to extra.rank_median_ms, and extra gets algbw, busbw and the bus factor.
/// Throws Error when the ranks' sample counts differ.
Record combine_rank_records(const std::vector<Record>& per_rank, CollectiveOp op, int ranks);
/// The bus and link ceilings of a collectives plot: NVLink and PCIe, per direction (bytes/s).
struct LinkCeilings {
  double nvlink_bytes_per_s = 0, pcie_bytes_per_s = 0;
};
LinkCeilings link_ceilings(const std::optional<CatalogEntry>& entry);
/// Curves, peaks, knees (70% and 90% of the peak busbw; of the peak algbw where busbw is 0 by
/// definition), findings, and the busbw (or algbw) vs size plot with the link ceilings.
void analyze_collectives(CollectivesRun& run);
/// The definitions the output states: algbw, busbw and each op's factor at this rank count.
std::vector<std::string> collective_definitions(const std::vector<CollectiveOp>& ops, int ranks);

// ---- `ridge p2p` -------------------------------------------------------------------------------

/// Options of run_p2p.
struct P2pOptions {
  int gpus = 0;                            ///< visible GPUs to use (0 = all)
  std::int64_t bytes = 256LL << 20;        ///< bytes per bandwidth copy
  std::int64_t latency_bytes = 8;          ///< bytes per latency copy
  int samples = 20;
  int warmup = 3;
  bool host = true;  ///< also host-to-device and device-to-host, pinned and pageable
};
/// Throws UsageError for bad values.
void validate(const P2pOptions& options);

/// Names and params of p2p records: name "p2p.<engine>" (ce, sm, host), params src, dst (a GPU
/// index, or -1 for the host), direction ("one_way", "both_ways"), memory ("device", "pinned",
/// "pageable"), bytes, metric ("bandwidth", "latency").
nlohmann::json p2p_params(int src, int dst, const std::string& direction, const std::string& memory,
                          std::int64_t bytes, const std::string& metric);

/// One matrix of the p2p output: value[src][dst], NaN where not measured.
struct P2pMatrix {
  std::string title;  ///< e.g. "copy engine, one way, GB/s"
  int gpus = 0;
  std::vector<std::vector<double>> value;
};
/// The matrix of `records` with name `name`, direction and metric: GB/s for bandwidth (bytes / median),
/// microseconds for latency (the median).
P2pMatrix p2p_matrix(const std::vector<Record>& records, int gpus, const std::string& name,
                     const std::string& direction, const std::string& metric, const std::string& title);

struct P2pRun {
  P2pOptions options;
  int gpus = 0;
  std::vector<DeviceDescription> devices;
  std::vector<std::vector<bool>> peer_access;  ///< [src][dst]: cudaDeviceCanAccessPeer (diagonal true)
  std::vector<Record> records;
  std::vector<P2pMatrix> matrices;  ///< CE and SM, one way and both ways, bandwidth and latency
  std::vector<Finding> findings;    ///< CE vs SM at the largest size per link, host rows
  double seconds = 0;
};
/// Every copy is checked (the destination compared with the source's pattern) before it is timed.
/// Throws NoGpuError, VerificationError.
P2pRun run_p2p(const P2pOptions& options, const SweepCallbacks& callbacks = {});
/// Matrices and findings from the records (CPU).
void analyze_p2p(P2pRun& run);

}  // namespace ridge
