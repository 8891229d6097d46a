#pragma once
// A device's ceilings: what its memory and arithmetic units deliver at most. One type for the
// datasheet's figures (the catalog, catalog.hpp) and for measured ones (the probes), plus the
// cache of measured ceilings. The lookup that picks what a command compares with is in catalog.hpp.
// (Implementation: src/roofline/ceilings.cpp; the probes: src/roofline/cuda/ceilings.cpp.)
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ridge/dtype.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// Where a set of ceilings comes from.
enum class CeilingsSource {
  datasheet,  ///< the vendor's published figures (the catalog)
  measured,   ///< measured on this GPU by ridge's probes
  user,       ///< given by the user (e.g. `ridge decode --bandwidth`)
};
std::string to_string(CeilingsSource source);

/// The dtypes ceilings tables, ridge points and roofline plots list, in this order:
/// fp64, fp32, tf32, fp16, bf16, fp8_e4m3.
const std::vector<std::string>& ceiling_dtypes();

/// The dtype names a peak may be listed under: fp64, fp64_vector, fp32, tf32, fp16, bf16,
/// fp8_e4m3, fp4 (catalog files, DeviceCeilings::peak_flops_per_s).
const std::vector<std::string>& peak_dtype_names();

/// The peak dtype name (one of peak_dtype_names()) of any name ridge accepts for a dtype: the
/// DType names and their PyTorch/NumPy spellings (dtype_from_string: "bfloat16", "half",
/// "float8_e4m3fn", ...), "fp4" ("nvfp4", "float4_e2m1fn_x2") and "fp64_vector". Throws UsageError
/// listing the accepted names for any other name.
std::string peak_dtype_name(const std::string& name);
/// Bytes of one stored element of a peak dtype name (fp4: 0.5), any accepted spelling.
double peak_dtype_bytes(const std::string& name);

/// A dtype name as ceilings tables and roofline plots show it: "bf16" -> "BF16", "fp8_e4m3" -> "FP8".
std::string dtype_title(const std::string& dtype);

/// The ceilings of one device, whether from its datasheet or measured: the same fields either way.
struct DeviceCeilings {
  CeilingsSource source = CeilingsSource::datasheet;
  /// Says where the figures come from, for messages: "datasheet of NVIDIA H200 SXM",
  /// "measured on this GPU (2026-11-29T10:00:00Z)".
  std::string source_text;
  /// Device-memory (HBM/GDDR) bandwidth in bytes/s, counting reads + writes; 0 = unknown.
  double memory_bytes_per_s = 0;
  /// L2 bandwidth in bytes/s; 0 = unknown (datasheets do not publish it).
  double l2_bytes_per_s = 0;
  /// Dense peak FLOP/s per dtype name ("fp64", "fp64_vector", "fp32", "tf32", "fp16", "bf16",
  /// "fp8_e4m3", "fp4"); absent = unsupported, unpublished or not measured. fp16/bf16/fp8 are with
  /// FP32 accumulate, as ridge's GEMMs run them.
  std::map<std::string, double> peak_flops_per_s;
  /// Cost of an empty kernel launch in microseconds (stream held by a spin kernel); 0 = unknown.
  double empty_launch_us = 0;

  /// Peak FLOP/s for a dtype name, any spelling peak_dtype_name accepts; 0 when absent or unknown.
  double peak_flops(const std::string& dtype) const;
  /// Peak FLOP/s for a dtype; nullopt when absent.
  std::optional<double> peak(DType dtype) const;
  /// The highest peak of any dtype (FLOP/s); 0 when none is known.
  double highest_peak_flops() const;
  /// The roof an operation of `dtype` is placed under (FLOP/s): its own peak (any spelling
  /// peak_dtype_name accepts), never another dtype's. Throws UsageError for an unknown name, and
  /// naming the dtype, the ceilings and the dtypes they list when they have no peak for it (e.g.
  /// BF16 on a T4).
  double roof_for(const std::string& dtype) const;
  /// Ridge point I* = peak / memory bandwidth (FLOP/byte) for a dtype name; 0 when either is unknown.
  /// roof_for's checks apply to `ridge_point_of`, which throws instead of answering 0.
  double ridge_point(const std::string& dtype) const;
  /// Ridge point I* (FLOP/byte) of a dtype these ceilings have a peak for; UsageError (roof_for's)
  /// otherwise, or when the memory bandwidth is unknown.
  double ridge_point_of(const std::string& dtype) const;
  /// True when both a memory bandwidth and at least one peak are known.
  bool usable() const;
  /// Throws UsageError naming the field when a figure is not a finite number (memory bandwidth
  /// > 0; L2 bandwidth and empty launch >= 0) or a peak is listed under an unknown dtype name or
  /// is not finite and > 0.
  void validate() const;
};

/// "the BF16 peak of 787 TFLOP/s measured on this GPU (2026-12-01T18:11:37Z)", "the BF16 peak of
/// 990 TFLOP/s from the datasheet of NVIDIA H200 SXM": a peak and where it comes from, for sentences.
std::string peak_phrase(const DeviceCeilings& c, const std::string& dtype);

/// A measured peak is what ridge's probes reached, so a GEMM of the same run can beat it. Raises
/// each measured peak to the best rate a record of its dtype attained (records with FLOPs that
/// were really timed: not the unsynchronized wall clock, trace counters, informational records or
/// failed checks), and returns one sentence per raised peak saying so; datasheet and user ceilings
/// are left alone.
std::vector<std::string> raise_to_attained(DeviceCeilings& c, const std::vector<Record>& records);

/// JSON form: {"source", "source_text", "memory_bytes_per_s", "l2_bytes_per_s",
/// "peak_flops_per_s": {dtype: FLOP/s}, "empty_launch_us"}; unknown values are left out.
nlohmann::json to_json(const DeviceCeilings& c);
/// Reads to_json's form and validates it; throws UsageError naming what is wrong.
DeviceCeilings device_ceilings_from_json(const nlohmann::json& j);

/// What the device's measurements are specific to: ceilings plus how they were measured.
struct MeasuredCeilings {
  std::string device_uuid;
  std::string device_name;
  std::string measured_at_utc;
  /// The measured figures (source measured): memory = best of copy / read-only / triad on >= 8x L2,
  /// bytes = reads + writes; L2 with a working set well inside it; fp32 = FMA peak (2 FLOP per
  /// FMA); tensor dtypes from large cuBLASLt GEMMs; empty launch with the stream held by a spin kernel.
  DeviceCeilings ceilings;
  std::string hbm_kernel;      ///< which kernel reached the memory bandwidth
  /// SM clock during the FMA kernel, from its own cycle counter over the global timer (MHz).
  double fp32_observed_sm_mhz = 0;
  double max_sm_clock_mhz = 0;  ///< the device's rated maximum SM clock (cudaDevAttrClockRate)
  double empty_launch_graph_us = 0;  ///< an empty kernel replayed from a CUDA graph (per node)
  ClockReading clocks;          ///< during the measurement
  std::vector<std::string> notes;  ///< e.g. dtypes skipped because the device lacks them
  std::vector<Record> records;  ///< the raw measurements behind each number
  double measure_seconds = 0;   ///< wall time the measurement took
  bool from_cache = false;      ///< loaded from the cache file rather than measured now (not saved)
  std::string cache_file;       ///< where it is cached (not saved)
};

/// The folder ridge caches measurements in: $RIDGE_CACHE_DIR, else $XDG_CACHE_HOME/ridge, else
/// $HOME/.cache/ridge, else <temp>/ridge-cache. Not created here.
std::filesystem::path cache_folder();

/// Where the ceilings of the device with `uuid` are cached: cache_folder()/ceilings-<uuid>.json
/// (characters other than letters, digits, '-' and '_' in the UUID become '_').
std::string ceilings_cache_path(const std::string& uuid);

/// The cached measured ceilings of the device with `uuid`, without measuring anything. nullopt
/// when there is no cache file, or when it cannot be used: then `problem` (if given) says why.
std::optional<MeasuredCeilings> cached_ceilings(const std::string& uuid, std::string* problem = nullptr);

/// The cache protocol, apart from the GPU: returns the cached ceilings of `uuid` unless `refresh`,
/// else calls `measure` and caches what it returns. Measuring holds an exclusive lock on
/// `<cache file>.lock` (flock), so a second process that also finds no cache waits for the first
/// and then uses its file instead of measuring on a GPU that is busy being measured; `waited` (if
/// given) says whether it waited. A cache that cannot be read is measured over, with a note; a
/// cache that cannot be written leaves a note, not an error.
MeasuredCeilings cached_or_measured_ceilings(const std::string& uuid, bool refresh,
                                             const std::function<MeasuredCeilings()>& measure, bool* waited = nullptr);

/// Measured ceilings of `device`: from the cache (ceilings_cache_path) unless `refresh` or absent;
/// otherwise measured (seconds) and cached. Every probe's output is checked before it is timed
/// (VerificationError when wrong). A cache file that cannot be read is measured over, with a note.
MeasuredCeilings measured_ceilings(int device, bool refresh = false);

/// The cache file's form (schema "ridge-ceilings-1": the keys hbm_bytes_per_s, l2_bytes_per_s,
/// fp32_flops_per_s, tensor_flops_per_s, empty_launch_us... at the top level).
nlohmann::json to_json(const MeasuredCeilings& c);
/// Reads the cache file's form; throws UsageError when it is another schema or lacks a figure.
MeasuredCeilings ceilings_from_json(const nlohmann::json& j);

}  // namespace ridge
