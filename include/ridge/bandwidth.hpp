#pragma once
// The streaming kernels of `ridge bandwidth` (x + y, plus copy, scale, triad and a
// read-only sum) in several variants, each checked against a host reference before it is timed.
// The sweep of `ridge bandwidth` is one call, run_bandwidth_sweep, whose result holds the records
// and their analysis (curves, launch-bound ranges, knees, best variants, findings, a plot).
// (Implementation: src/sweeps/bandwidth_sweep.cpp for the analysis, src/sweeps/cuda/bandwidth_sweep.cpp
// for the run; the kernels and their checked buffers are internal, ridge/detail/stream_bench.hpp.)
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/measure.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"
#include "ridge/sweep.hpp"

namespace ridge {

/// How a kernel maps elements to threads.
enum class StreamVariant {
  scalar,       ///< one fp32 element per thread, one block per 256 elements
  vec4,         ///< one 16-byte float4 per thread, the last n % 4 elements by extra threads
  grid_stride,  ///< a grid sized to fill the SMs once (SMs x resident blocks), float4 in a loop
  /// Deliberately wrong (skips the last element): exists so tests can prove the check catches a
  /// bad kernel. Not accepted on the command line.
  broken_for_tests,
};
std::string to_string(StreamVariant v);
/// "scalar", "vec4", "grid_stride" (also "grid-stride"); throws UsageError for anything else,
/// broken_for_tests included.
StreamVariant stream_variant_from_string(const std::string& name);
/// The variants a user can ask for, in the order above.
const std::vector<StreamVariant>& user_stream_variants();
/// One sentence on what the variant does.
std::string describe(StreamVariant v);

/// Where a streaming record sits in its sweep: op, variant and elements per array.
struct StreamPoint {
  StreamOp op = StreamOp::add;
  StreamVariant variant = StreamVariant::scalar;
  std::int64_t n = 0;
};
/// The params of a streaming record (n, elements, op, variant, working_set_bytes, cold).
nlohmann::json stream_params(const StreamPoint& point, bool cold);
/// Reads a streaming record's point back. Throws Error when the record is not a streaming one.
StreamPoint stream_point(const Record& record);

// ---- the bandwidth sweep --------------------------------------------------------------------------

/// Options of run_bandwidth_sweep (`ridge bandwidth`), with its defaults.
struct BandwidthSweepOptions {
  int device = 0;
  std::vector<StreamOp> ops = all_stream_ops();
  std::vector<StreamVariant> variants = user_stream_variants();  ///< broken_for_tests is refused
  std::vector<std::int64_t> sizes = geometric_sizes(1 << 10, 1 << 28, 2);  ///< elements per array, 1..2^34
  std::optional<Method> method;  ///< nullopt: automatic (graph replay under 1 ms, events above)
  bool cold = false;             ///< flush the L2 before each sample (one call per sample)
  int samples = 20;
  int warmup = 3;
  std::string ceilings = "auto";  ///< measured ceilings: auto (cached only), measure, refresh, none
  bool quick = false;             ///< report mode: add only, 2^10..2^28 every 4x, at most 10 samples
};

/// The options checked: what a sweep runs.
struct BandwidthPlan {
  BandwidthSweepOptions options;  ///< as given, with quick applied and repeats removed from the lists
  std::vector<SweepPoint> points;  ///< ops x variants x sizes, sizes innermost
};
/// Checks every option (no GPU needed). Throws UsageError naming the bad field ("sizes: ...").
BandwidthPlan plan_bandwidth_sweep(const BandwidthSweepOptions& options);

/// The memory bandwidths a bandwidth sweep compares with, read from CeilingsLookup (ridge/catalog.hpp):
/// the datasheet's and the measured HBM bandwidth, bytes/s; 0 when unknown.
double datasheet_memory_bytes_per_s(const CeilingsLookup& ceilings);
double measured_memory_bytes_per_s(const CeilingsLookup& ceilings);
/// The bandwidth knees are found against: the measured HBM bandwidth when known, else the
/// datasheet's (bytes/s); 0 = none.
double knee_reference_bytes_per_s(const CeilingsLookup& ceilings);
/// Which one knee_reference_bytes_per_s is: "measured HBM" or "datasheet".
std::string knee_reference_name(const CeilingsLookup& ceilings);

/// What the sweep found out before measuring: the plan, the device and the ceilings.
struct BandwidthSetup {
  BandwidthPlan plan;
  DeviceDescription device;
  CeilingsLookup ceilings;  ///< the matched datasheet and the measured ceilings (per options.ceilings)
};

/// A record is launch-bound when its median is within this factor of an empty launch's.
inline constexpr double launch_bound_factor = 2.0;

/// One (op, variant) curve over the sizes.
struct BandwidthCurve {
  StreamOp op = StreamOp::add;
  StreamVariant variant = StreamVariant::scalar;
  std::vector<std::size_t> records;  ///< indices into BandwidthSweep::records, by size
  /// The largest size of the run of launch-bound sizes the curve starts with; nullopt: none.
  std::optional<std::int64_t> launch_bound_up_to;
  std::int64_t largest_n = 0;        ///< elements per array at the largest size
  double largest_bytes_per_s = 0;    ///< the rate there
  double fraction_of_datasheet = 0;  ///< of the rate there; NaN when unknown
  double fraction_of_measured = 0;   ///< NaN when unknown
  /// Sizes reaching 70% and 90% of the reference ceiling (elements); empty when no ceiling is known.
  std::vector<Knee> knees;
};

/// The result of a bandwidth sweep: the records and what they mean.
struct BandwidthSweep {
  BandwidthSetup setup;
  std::vector<Record> records;  ///< in measuring order; extra holds the derived values and knees
  std::vector<BandwidthCurve> curves;
  /// Per op (in op order), the curve whose variant is fastest at the largest size.
  std::vector<std::size_t> best_curve_per_op;
  std::vector<Finding> findings;  ///< the answers in words
  Plot plot;                      ///< GB/s against size per curve, with the ceilings and the L2 line
  double seconds = 0;             ///< wall time of the whole sweep
};

/// Checks the options, requires the GPU and looks up the device and its ceilings (measuring them
/// only when options.ceilings asks). Throws UsageError before touching the GPU, NoGpuError.
BandwidthSetup prepare_bandwidth_sweep(const BandwidthSweepOptions& options);
/// Runs the sweep: every op and variant is checked against a host reference, then timed at every
/// size; each record goes to callbacks.on_record as soon as it is measured. Throws
/// VerificationError when a kernel is wrong.
BandwidthSweep run_bandwidth_sweep(const BandwidthSetup& setup, const SweepCallbacks& callbacks = {});
/// prepare_bandwidth_sweep, then run_bandwidth_sweep.
BandwidthSweep run_bandwidth_sweep(const BandwidthSweepOptions& options, const SweepCallbacks& callbacks = {});

// CPU parts of the sweep (unit-tested without a GPU):

/// Adds the derived values of one measured streaming record to its extra (gb_per_s, fractions of
/// the ceilings, cache_resident, empty_launch_ms, launch_bound) and its plausibility warnings.
/// `empty_launch_ms`: an empty launch timed the same way.
void annotate_stream_record(Record& record, double empty_launch_ms, const CeilingsLookup& ceilings,
                            double l2_bytes, bool cold);
/// Groups sweep.records into curves, finds launch-bound ranges, knees and the best variant per op,
/// writes the findings and the plot, and records the ranges and knees in each record's extra.
void analyze_bandwidth_sweep(BandwidthSweep& sweep);

}  // namespace ridge
