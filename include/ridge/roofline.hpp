#pragma once
// The roofline model: the math (intensity, attainable rate, ridge point, floors, Amdahl), placing
// operations under a device's ceilings, the one roofline plot builder, and `ridge roofline` as a
// library call. (Implementation: src/roofline/roofline.cpp, roofline_plot.cpp, roofline_analysis.cpp,
// cuda/roofline_run.cpp.)
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ridge/bound.hpp"
#include "ridge/catalog.hpp"
#include "ridge/dtype.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// FLOPs per byte of [M,K] @ [K,N] when each operand is read once and C written once.
/// FLOPs = 2*m*n*k; bytes = (m*k + k*n + m*n) * bytes_per_element. Throws UsageError for sizes <= 0.
double matmul_intensity(double m, double n, double k, double bytes_per_element = 2);

/// FLOPs of [M,K] @ [K,N]: 2*m*n*k.
double matmul_flops(double m, double n, double k);
/// Bytes of [M,K] @ [K,N] if each operand is read once and C written once.
double matmul_bytes(double m, double n, double k, double bytes_per_element = 2);

/// The roofline: min(peak_flops, intensity * bandwidth). FLOP/s, with bandwidth in bytes/s and
/// intensity in FLOP/byte. Throws UsageError on negative intensity or non-positive ceilings.
double attainable_flops(double intensity, double peak_flops, double bandwidth);

/// Ridge point I* = peak_flops / bandwidth, in FLOP/byte. Throws UsageError unless both are finite and > 0.
double ridge_point(double peak_flops, double bandwidth);

/// Upper bound on decode tokens/s when each step reads all weights once (shared by the batch)
/// plus each sequence's own KV cache: batch * bandwidth / (weight_bytes + batch * kv_bytes).
double decode_ceiling(double weight_bytes, double bandwidth, double batch = 1, double kv_bytes_per_sequence = 0);

/// Amdahl's law: whole-program speedup when a fraction f of the time runs s times faster.
/// s may be +infinity (the part vanishes). Throws UsageError for f outside [0,1] or s <= 0.
double amdahl_speedup(double fraction, double speedup);

/// The inverse: the speedup the fraction needs for the whole program to reach `target`.
/// Returns std::nullopt when the target is unreachable (target >= 1/(1-f)); +inf is never returned.
std::optional<double> amdahl_required_speedup(double fraction, double target);

/// The ceiling for an infinitely fast part: 1 / (1 - f) (infinity when f == 1).
double amdahl_limit(double fraction);

/// Memory-bound when intensity is below the ridge point, else compute-bound (never `neither`: that
/// takes a measurement). Throws UsageError for a NaN, infinite or negative intensity or ceilings
/// that are not finite and > 0.
Bound classify(double intensity, double peak_flops, double bandwidth);

/// Measured rate over the attainable rate at the op's intensity, in [0, inf); > 1 is impossible.
double roofline_efficiency(double measured_flops_per_s, double intensity, double peak_flops, double bandwidth);

/// Fastest physically possible time, in seconds, for an op moving `bytes` and doing `flops` on a
/// device with the given ceilings: max(bytes / bandwidth, flops / peak_flops).
double roofline_floor_s(double bytes, double flops, double peak_flops, double bandwidth);

// Every function above throws UsageError naming the argument for NaN, infinite or negative input
// (or an input <= 0 where it must be positive); amdahl_speedup alone takes speedup = +inf.

// ---- operations on a roofline --------------------------------------------------------------------

/// An operation to place on a roofline.
struct RooflineOperation {
  std::string label;  ///< e.g. "matmul bf16 n=4096"; drawn beside its marker
  std::string dtype;  ///< picks its roof (DeviceCeilings::roof_for): "fp32", "bf16", ...
  double intensity_flop_per_byte = 0;
  double flops_per_s = 0;  ///< achieved FLOP/s (for a model: the attainable rate)
  std::string series;      ///< plot series it is drawn in; empty = the plot's default series
  std::string file;        ///< the result file it was read from, if any
  double marker_area = 1;  ///< its marker's area relative to the default (PlotPoint::area)
  /// Throws UsageError naming the operation and the field unless intensity and rate are finite
  /// and > 0 (a log-log roofline cannot show anything else).
  void validate() const;
};

/// A record with counted FLOPs and bytes as an operation: label "<name> <dtype> n=<n>" (or the
/// m x n x k shape, or 2^k elements); nullopt when it lacks FLOPs, bytes or a time.
std::optional<RooflineOperation> roofline_operation(const Record& record);

/// The records with FLOPs and bytes of ridge result files, as operations (file set on each).
/// Throws UsageError for a file that is not a ridge result file. Records that are not operations
/// (no FLOPs, bytes or time) are left out; `skipped` (if given) gets one line per file saying how many.
std::vector<RooflineOperation> load_roofline_operations(const std::vector<std::string>& files,
                                                        std::vector<std::string>* skipped = nullptr);

/// An operation placed under a set of ceilings.
struct RooflinePlacement {
  RooflineOperation operation;
  double roof_flops_per_s = 0;        ///< the peak of the roof it runs under
  double attainable_flops_per_s = 0;  ///< min(roof, intensity x memory bandwidth)
  double efficiency = 0;              ///< achieved / attainable; above 1 is impossible
  Bound bound = Bound::memory;
  /// More than 5% above the attainable rate: the measurement is wrong (or the ceilings are).
  bool above_roof() const { return efficiency > 1.05; }
};

/// Places an operation under `ceilings` (roof: DeviceCeilings::roof_for its dtype). Throws
/// UsageError for an invalid operation (RooflineOperation::validate), ceilings without a memory
/// bandwidth, or a dtype the ceilings have no peak for (never another dtype's roof).
RooflinePlacement place_on_roofline(const DeviceCeilings& ceilings, const RooflineOperation& op);

/// Ridge points I* (FLOP/byte) of one dtype under two sets of ceilings; 0 = unknown.
struct RidgePoints {
  std::string dtype;
  double datasheet = 0, measured = 0;
};
/// Ridge points of fp64, fp32, tf32, fp16, bf16, fp8_e4m3, for each dtype either set knows.
std::vector<RidgePoints> ridge_points(const std::optional<DeviceCeilings>& datasheet,
                                      const std::optional<DeviceCeilings>& measured);

// ---- the roofline plot -----------------------------------------------------------------------------

struct RooflinePlotOptions {
  std::string title;
  /// Roofs to draw, by dtype name; empty = each of fp64, fp32, tf32, fp16, bf16, fp8_e4m3 the
  /// ceilings know.
  std::vector<std::string> dtypes;
  /// A second set drawn dashed grey behind the first (e.g. the datasheet behind measured ceilings):
  /// its memory slope and the roofs of `overlay_dtypes`.
  std::optional<DeviceCeilings> overlay;
  /// The overlay's roofs to draw, by dtype name; empty = its highest 16-bit roof, for scale.
  std::vector<std::string> overlay_dtypes;
  /// Intensity range (FLOP/byte); 0 = from 0.01 to 1e4, widened to the operations' decades.
  double x_min = 0, x_max = 0;
  std::string operations_name = "measured operations";  ///< legend entry of operations with no series
  int width = 900, height = 560;
};

/// The log-log roofline (x: FLOP/byte, y: FLOP/s): the memory slope (and the L2 slope when known)
/// up to the highest roof, one flat roof per dtype from its ridge point (roofs within 8% share a
/// label, which carries I*), the ridge points as markers, the overlay, and the operations (one
/// series per RooflineOperation::series). Render it with render_svg. Throws UsageError for an
/// invalid operation (RooflineOperation::validate), naming it. Findings go to Plot::warnings (drawn
/// in the SVG): an operation above its roof (impossible; its label says so too) and one whose
/// dtype has no roof in `ceilings` (drawn, compared with nothing).
Plot roofline_plot(const DeviceCeilings& ceilings, const std::vector<RooflineOperation>& operations,
                   const RooflinePlotOptions& options = {});

// ---- an operation placed by its shape alone, nothing run ------------------------------------------------

/// A [m,k] @ [k,n] GEMM placed on a device's roofline from its shape: "what is its arithmetic
/// intensity, and is it memory-bound there?", answered without a GPU.
struct ShapePlacement {
  std::string label;                   ///< e.g. "matmul 16x4096x4096 bf16"
  std::string dtype;
  double m = 0, n = 0, k = 0;
  double flops = 0;                    ///< per call: 2 m n k
  double bytes = 0;                    ///< per call: A and B read once, C written once
  double intensity_flop_per_byte = 0;
  double roof_flops_per_s = 0;         ///< the dtype's peak (DeviceCeilings::roof_for)
  double memory_bytes_per_s = 0;
  double attainable_flops_per_s = 0;   ///< min(roof, intensity x memory bandwidth)
  double ridge_point = 0;              ///< roof / memory bandwidth (FLOP/byte)
  Bound bound = Bound::memory;
  double floor_s = 0;                  ///< the fastest possible time per call (roofline_floor_s)
  std::string placed_on;               ///< the ceilings' source_text, e.g. "datasheet of NVIDIA H100 SXM"
};

/// Places the GEMM on `ceilings`. Throws UsageError for sizes that are not finite and > 0, or
/// ceilings that lack a memory bandwidth or a peak for this dtype (BF16 on a T4 is refused, never
/// placed under FP32's roof).
ShapePlacement place_matmul(const DeviceCeilings& ceilings, double m, double n, double k, DType dtype);
/// The same for a dtype name, any spelling peak_dtype_name accepts ("bfloat16", and "fp4" for the
/// peaks DType lacks); UsageError for an unknown name.
ShapePlacement place_matmul(const DeviceCeilings& ceilings, double m, double n, double k, const std::string& dtype);
/// The placement as an operation for roofline_plot (drawn at its attainable rate).
RooflineOperation to_operation(const ShapePlacement& placement);
/// One line: the label, intensity, attainable FLOP/s (and the roof), ridge point, bound and the
/// fastest possible time per call.
std::string describe(const ShapePlacement& placement);

// ---- `ridge roofline` as a library call ------------------------------------------------------------

struct RooflineOptions {
  /// A GPU index ("0") to measure, or a catalog key ("h100-sxm") for a model-only roofline.
  std::string device = "0";
  bool refresh = false;                  ///< measure the ceilings again instead of using the cache
  std::vector<std::string> point_files;  ///< ridge result files whose records are placed
  std::string catalog;                   ///< a catalog file replacing the built-in one
  /// GEMM shapes to place by shape alone, "m,n,k" separated by ';' (e.g. "16,4096,4096").
  std::string matmul_shapes;
  std::string matmul_dtype = "bf16";     ///< their dtype
  /// True when `device` is a catalog key rather than a GPU index.
  bool model_only() const;
  /// Throws UsageError for refresh with a catalog key, or a GPU index that cannot be one.
  void validate() const;
};

/// What `ridge roofline` shows: the ceilings, the ridge points, the placed operations, the plot.
struct RooflineAnalysis {
  std::optional<DeviceDescription> device;  ///< the GPU measured; nullopt when model-only
  std::optional<CatalogEntry> datasheet;    ///< nullopt when the GPU is not in the catalog
  std::optional<MeasuredCeilings> measured; ///< nullopt when model-only
  std::vector<CeilingComparison> ceilings;  ///< datasheet vs measured, row by row
  std::vector<RidgePoints> ridge_points;
  /// The operations placed under the measured ceilings, else the datasheet's ("placed_on" says which).
  /// An operation whose dtype has no roof there is drawn but not placed: `warnings` says so.
  std::vector<RooflinePlacement> placements;
  std::string placed_on;  ///< "measured" or "datasheet"
  /// The GEMM shapes of RooflineOptions::matmul_shapes, placed on the same ceilings.
  std::vector<ShapePlacement> shapes;
  Plot plot;
  /// The measured ceilings' raw records, with extra.datasheet_bytes_per_s / datasheet_flops_per_s.
  std::vector<Record> records;
  /// What the reader must know: operations above the roof (impossible) or with no roof of their
  /// dtype (not placed). The same lines are drawn in the plot (Plot::warnings).
  std::vector<std::string> warnings;
  bool model_only() const { return !device; }
};

/// The analysis from ceilings already at hand (no GPU needed). Needs `datasheet` or `measured`.
/// `shapes` are placed by shape alone (place_matmul) and drawn with the operations.
RooflineAnalysis analyze_roofline(const std::optional<DeviceDescription>& device,
                                  const std::optional<CatalogEntry>& datasheet,
                                  const std::optional<MeasuredCeilings>& measured,
                                  const std::vector<RooflineOperation>& operations,
                                  const std::vector<std::array<double, 3>>& shapes = {},
                                  DType shape_dtype = DType::bf16);

/// `ridge roofline`: loads the catalog file and the operations (usage errors before any GPU work),
/// then for a catalog key the datasheet alone, for a GPU index its datasheet match and its measured
/// ceilings (cached, or measured: seconds). `on_progress` hears what is being done ("" when done).
RooflineAnalysis run_roofline(const RooflineOptions& options,
                              const std::function<void(const std::string&)>& on_progress = {});

}  // namespace ridge
