#pragma once
// The GEMM sweep of `ridge matmul` as one call: square sizes (or explicit shapes) per dtype, each
// verified and timed, placed on the device's roofline, with the size that reaches 70% / 90% of
// peak. (Implementation: src/sweeps/matmul_sweep.cpp for the analysis, src/sweeps/cuda/matmul_sweep.cpp
// for the run.)
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/dtype.hpp"
#include "ridge/gemm.hpp"
#include "ridge/measure.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"
#include "ridge/sweep.hpp"

namespace ridge {

/// Options of run_matmul_sweep (`ridge matmul`), with its defaults.
struct MatmulSweepOptions {
  int device = 0;
  std::vector<DType> dtypes = {DType::bf16};  ///< of fp32, tf32, fp16, bf16, fp8
  std::vector<std::int64_t> sizes = geometric_sizes(256, 8192, 2);  ///< square n (ignored when shapes is set)
  std::vector<MatmulDims> shapes;  ///< explicit m x n x k shapes instead of square sizes
  std::optional<Method> method;    ///< nullopt: automatic (graph replay under 1 ms, events above)
  bool cold = false;               ///< flush the L2 before each sample
  int samples = 20;
  int warmup = 5;
  int tune_candidates = 8;         ///< cuBLASLt heuristic algorithms timed per shape (1 = its first choice)
  std::string ceilings = "auto";   ///< measured ceilings: auto (cached only), measure, refresh, none
  bool quick = false;              ///< report mode: 512, 2048, 8192 and at most 10 samples
};

/// The options checked.
struct MatmulPlan {
  MatmulSweepOptions options;  ///< as given, with quick applied and repeats removed from the lists
  std::vector<SweepPoint> points;  ///< dtype x shape
  bool square = true;              ///< square sizes (false: explicit shapes)
};
/// Checks every option (no GPU needed). Throws UsageError naming the bad field ("dtypes: ...").
MatmulPlan plan_matmul_sweep(const MatmulSweepOptions& options);

struct MatmulSetup {
  MatmulPlan plan;
  DeviceDescription device;
  CeilingsLookup ceilings;  ///< the matched datasheet and the measured ceilings (per options.ceilings)
};

/// Where one GEMM record sits under the datasheet and measured roofs (the placement under one set
/// of ceilings is RooflinePlacement, ridge/roofline.hpp). Fractions and rates are NaN when the roof
/// is unknown.
struct GemmPlacement {
  double intensity_flop_per_byte = 0;
  double datasheet_attainable_flops_per_s = 0;
  double fraction_of_datasheet_attainable = 0;
  double fraction_of_datasheet_peak = 0;
  double measured_attainable_flops_per_s = 0;
  double fraction_of_measured_attainable = 0;
  double fraction_of_measured_peak = 0;
  std::string bound;  ///< "memory" or "compute" (by the datasheet roof, else the measured); empty: unknown
};

/// The sizes at which one dtype reaches 70% and 90% of one peak.
struct MatmulKnees {
  DType dtype = DType::bf16;
  std::string ceiling;  ///< "datasheet" or "measured"
  double peak_flops_per_s = 0;
  std::string peak_phrase;  ///< the peak and its source, as peak_phrase() words it
  std::vector<Knee> knees;       ///< sizes n (square records only)
  double best_flops_per_s = 0;   ///< the fastest square record of the dtype
  double best_n = 0;
};

struct MatmulSweep {
  MatmulSetup setup;
  std::vector<Record> records;                ///< in measuring order
  std::vector<GemmPlacement> placements;  ///< one per record
  std::vector<MatmulKnees> knees;             ///< per dtype, datasheet then measured
  std::vector<Finding> findings;
  Plot rate_plot;      ///< TFLOP/s against n (or FLOPs per call for shapes), with the peaks
  /// The records at their intensity under the roofs (roofline_plot: the measured ceilings, the
  /// datasheet's behind them; the datasheet's alone when nothing was measured)
  Plot roofline_plot;
  double seconds = 0;
};

/// Checks the options, requires the GPU, looks up the device and its ceilings. Throws UsageError
/// before touching the GPU, NoGpuError.
MatmulSetup prepare_matmul_sweep(const MatmulSweepOptions& options);
/// Runs the sweep: each GEMM tuned, checked against an fp64 reference, then timed; each record
/// goes to callbacks.on_record as soon as it is measured. Throws VerificationError for a wrong GEMM.
MatmulSweep run_matmul_sweep(const MatmulSetup& setup, const SweepCallbacks& callbacks = {});
MatmulSweep run_matmul_sweep(const MatmulSweepOptions& options, const SweepCallbacks& callbacks = {});

// CPU parts (unit-tested without a GPU):

/// Places a measured GEMM record on the roofs of its dtype, writes the placement and the derived
/// values (tflop_per_s, empty_launch_ms, cache_resident) into its extra and adds its plausibility
/// warnings. `empty_launch_ms`: an empty launch timed the same way.
GemmPlacement annotate_gemm_record(Record& record, const CeilingsLookup& ceilings, double empty_launch_ms,
                                   double l2_bytes, bool cold);
/// The 70% and 90% knees of the square records of `dtype` against `peak_flops_per_s`.
std::vector<Knee> matmul_knees(const std::vector<Record>& records, DType dtype, double peak_flops_per_s);
/// The knees and best square record of `dtype` against the peak of `ceilings` (labelled `label`).
MatmulKnees matmul_knees_against(const std::vector<Record>& records, DType dtype, const DeviceCeilings& ceilings,
                                 const std::string& label);
/// One sentence: "Against the BF16 peak of 787 TFLOP/s measured on this GPU (...), bf16 reaches 70%
/// at n ≈ 1380 and 90% at n ≈ 1872. Best: 783 TFLOP/s at n = 4096 (99.5% of that peak)."
std::string knee_sentence(const MatmulKnees& knees);
/// Knees, findings and plots from sweep.records; records the knees in each record's extra. A
/// measured peak below a rate the sweep attained is raised to it first (raise_to_attained; a finding says so).
void analyze_matmul_sweep(MatmulSweep& sweep);

}  // namespace ridge
