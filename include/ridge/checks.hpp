#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ridge/ceilings.hpp"
#include "ridge/dtype.hpp"
#include "ridge/measure.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// A record for a measurement: name, method, dtype, params, samples and counted work.
Record to_record(const Measurement& m, const std::string& name, std::optional<DType> dtype, nlohmann::json params,
                 double bytes = 0, double flops = 0);

/// The highest dense peak (FLOP/s) of any GPU ridge knows for this dtype: a rate above it is
/// physically impossible on any device.
double fastest_known_peak_flops(DType dtype);

/// Datasheet ceilings are rounded and clocks boost a little above them: a time or rate within this
/// factor of a ceiling is not called impossible.
inline constexpr double ceiling_slack = 1.05;
/// Caches serve bytes faster than device memory, but never more than this many times the fastest
/// memory bandwidth of any GPU ridge knows.
inline constexpr double cache_bandwidth_multiple = 10.0;

/// Why a rate is physically impossible on every GPU ridge knows (built-in catalog and a user's):
/// above the fastest dense peak of any dtype (with ceiling_slack), or above cache_bandwidth_multiple
/// x the fastest memory bandwidth. "impossible: ..." findings; empty when neither is. A rate <= 0
/// is not given.
std::vector<std::string> impossible_rate_findings(double flops_per_s, double bytes_per_s);

/// Plausibility warnings for a record, appended to record.warnings and returned:
///  - "impossible": faster than the roofline floor for its bytes and FLOPs under `ceilings`: their
///    memory bandwidth and the peak of the record's dtype (the highest peak when that dtype has none);
///  - high spread (CV above `cv_limit`);
///  - working set fits in the L2 (when `l2_bytes` > 0 and params has "working_set_bytes");
///  - SM clock moved during sampling (extra.clocks_during from a ClockMonitor: more than 5%),
///    or by more than 10% between start and end.
std::vector<std::string> add_plausibility_warnings(Record& record, const std::optional<DeviceCeilings>& ceilings,
                                                   double l2_bytes = 0, double cv_limit = 0.10);

/// How far the host's launch latency can move between runs, relative to itself. On an H200 one of
/// ten back-to-back processes of one build (2026-12-03) queued twice as slowly: the naive wall clock
/// read 38 us instead of 19, and the decode step's per-sample events 20 us more than its spin-hold
/// twin (+6% of 325 us). So the latency can add about its whole self (1.0), on top of the work's
/// own spread (about as much again): 2.0.
inline constexpr double host_latency_run_to_run_spread = 2.0;
/// Share of a record's median, above which host latency dominates the number.
inline constexpr double host_latency_dominant_share = 0.5;

/// The gate of a record each of whose samples includes the host's launch latency once
/// (`host_latency_ms`, per sample; per-sample events or a synchronized wall clock while the GPU
/// was idle). Its share of the time per call is host_latency_ms / repeats_per_sample / median.
/// At or above host_latency_dominant_share the record is informational (the number mostly
/// measures the host); below, min_threshold = host_latency_run_to_run_spread x share. Returns
/// nullopt when the latency is unknown (<= 0) or the record has no positive median.
std::optional<RecordGate> host_latency_gate(const Record& record, double host_latency_ms);

/// "launch-bound: ..." when a cuda_events measurement mostly timed the host: the host took at least
/// host_latency_dominant_share of the median per operation just to queue the work
/// (Measurement::host_queue_ms), so the GPU waited on the launches and the number is the host's
/// launch rate, not the work's time. nullopt otherwise, or when the queue time was not taken.
std::optional<std::string> launch_bound_warning(const Measurement& m);
/// What the library says about a measurement on its own: the SM clock still moving when
/// settling ran out, and launch_bound_warning. to_record puts them in the record's warnings.
std::vector<std::string> measurement_warnings(const Measurement& m);

/// Stated and counted work (CountedWork) further apart than this fraction of the stated amount
/// disagree: a plausibility finding. 10%: the counters of a kernel that moves what its author
/// counts land within 1% (ridge's stream kernels, a BF16 GEMM's tensor FLOPs, on the H200).
inline constexpr double counted_work_tolerance = 0.10;

/// Where the work a caller states for one call and what the hardware counters saw it do disagree.
struct WorkCountFinding {
  std::string quantity;     ///< "bytes" (DRAM bytes) or "flops"
  double stated = 0;        ///< per call, as the caller counts it
  double counted = 0;       ///< per call, from the counters (0 when they could not say)
  double ratio = 0;         ///< counted / stated (0 when not comparable)
  bool comparable = true;   ///< false: the counters needed are missing, or the call ran no kernel
  std::string text;         ///< the finding in words, with both numbers and what each counts
};

/// Compares the caller's stated bytes and FLOPs per call (0: not stated, not compared) with the
/// counted work: one finding per quantity whose counted amount differs from the stated by more
/// than `tolerance` of it, or that the counters cannot check. Empty when everything stated agrees.
std::vector<WorkCountFinding> compare_counted_work(double stated_bytes, double stated_flops,
                                                   const CountedWork& counted,
                                                   double tolerance = counted_work_tolerance);

/// Whether a record's samples each include the host's launch latency: cuda_events or wall_sync
/// with one call per sample (repeats_per_sample == 1).
bool includes_host_latency(const Record& record);

/// For records of one case timed by several methods: the host latency is the per-sample-events
/// median minus the fastest launch-free (spin_hold, graph_replay) median; every record that
/// includes it gets host_latency_gate. Returns that latency in ms, or nullopt (nothing gated)
/// when the group lacks either kind of record.
std::optional<double> gate_by_host_latency(std::vector<Record*> same_case);

}  // namespace ridge
