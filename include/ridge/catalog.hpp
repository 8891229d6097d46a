#pragma once
// The device catalog: datasheet figures (dense, sparsity excluded), each with its source.
// Data: data/catalog.json, compiled into ridge; a user's file can replace it (RIDGE_CATALOG or
// --catalog). Also where datasheet and measured ceilings meet: the comparison of the two and the
// lookup a command uses to pick what to compare with. (Implementation: src/roofline/catalog.cpp,
// src/roofline/ceilings.cpp, src/roofline/cuda/ceilings_lookup.cpp.)
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ridge/ceilings.hpp"
#include "ridge/dtype.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// One device's datasheet: its identity and its ceilings.
struct CatalogEntry {
  std::string key;   ///< e.g. "h200-sxm"
  std::string name;  ///< e.g. "NVIDIA H200 SXM"
  std::vector<std::string> match_names;  ///< substrings of cudaDeviceProp::name that identify it
  int sm_count = 0;
  double memory_bytes = 0;  ///< device memory, bytes (decimal GB on the datasheet)
  double l2_bytes = 0;      ///< L2 size, bytes; 0 = not given
  /// The datasheet's ceilings (source datasheet, source_text "datasheet of <name>"): memory
  /// bandwidth and dense peak FLOP/s per dtype ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3",
  /// plus "fp64_vector" and "fp4"); absent = not supported or not published. "fp64" is the highest
  /// FP64 rate (tensor cores where the part has them).
  DeviceCeilings ceilings;
  /// Sparse peaks (FLOP/s) where the datasheet gives them (must be >= dense).
  std::map<std::string, double> sparse_peak_flops;
  /// GPU-to-GPU NVLink and host PCIe bandwidth, bytes/s, both directions together as datasheets
  /// give them (per direction: half); 0 = none or not published.
  double nvlink_bytes_per_s = 0;
  double pcie_bytes_per_s = 0;
  std::string interconnect_source;  ///< where the link figures come from (document and URL)
  std::string notes;   ///< e.g. "GeForce: FP16 with FP32 accumulate runs at half rate"
  std::string source;  ///< where the figures come from (datasheet title and URL)

  /// Dense peak for a dtype (FLOP/s); nullopt when the part lacks it.
  std::optional<double> peak(DType dtype) const { return ceilings.peak(dtype); }
};

/// The built-in catalog, or the file named by $RIDGE_CATALOG when set.
const std::vector<CatalogEntry>& catalog();
/// The catalog compiled into ridge (data/catalog.json), whatever the active one is.
const std::vector<CatalogEntry>& builtin_catalog();
/// Keys of the active catalog, comma-separated, for messages.
std::string catalog_keys();
/// Parses a catalog JSON document; throws UsageError naming the entry and field that is wrong.
std::vector<CatalogEntry> parse_catalog(const std::string& json_text);
/// Replaces the active catalog with a user's file.
void load_catalog_file(const std::string& path);

/// Entry by key ("h100-sxm"); throws UsageError listing the known keys when absent.
const CatalogEntry& catalog_entry(const std::string& key);
/// Best catalog match for a running device; nullopt if none. The entry whose longest match_names
/// substring occurs in the device's name wins (ties: closest memory size), provided its SM count
/// equals the device's (a MIG slice or a cut-down variant is not the datasheet part). A device
/// whose name matches nothing matches an entry with the same SM count and memory within 15%.
std::optional<CatalogEntry> match_device(const DeviceDescription& device);

/// One row of a datasheet-vs-measured comparison (a value of 0 = unknown or not measured).
struct CeilingComparison {
  std::string ceiling;  ///< "memory bandwidth", "L2 bandwidth", "FP32 peak", "BF16 peak", ...
  std::string dtype;    ///< the dtype of a peak row; empty for bandwidth rows
  bool bandwidth = false;  ///< true: values are bytes/s; false: FLOP/s
  double datasheet = 0, measured = 0;
  /// measured / datasheet; NaN when either is unknown (format_percent prints "-").
  double fraction_of_datasheet() const;
  std::string note;  ///< how it was measured, or why it was not
};

/// Datasheet and measured ceilings side by side: memory and L2 bandwidth, then the peaks of
/// fp64, fp32, tf32, fp16, bf16, fp8_e4m3 that either knows, each with a note on how it was
/// measured (the FP32 note compares with the datasheet at the clock the FMA kernel ran at).
std::vector<CeilingComparison> compare_ceilings(const std::optional<CatalogEntry>& datasheet,
                                                const std::optional<MeasuredCeilings>& measured);

/// Where a command's measured ceilings come from.
enum class CeilingsMode {
  cached,   ///< "auto": the cached measurement if one exists; never starts one (tens of seconds)
  measure,  ///< "measure": cached, or measured now
  refresh,  ///< "refresh": measured now
  none,     ///< "none": datasheet only
};
/// Parses "auto", "measure", "refresh", "none"; throws UsageError for anything else.
CeilingsMode ceilings_mode_from_string(const std::string& mode);

/// The ceilings a command compares its results with, for one device.
struct CeilingsLookup {
  std::optional<CatalogEntry> datasheet;      ///< the matched catalog entry; nullopt when none
  std::optional<MeasuredCeilings> measured;   ///< per the mode; nullopt when none
  /// Why there are no measured ceilings and how to get them (empty when there are, or mode none).
  std::string note;
  /// The ceilings to compare with: measured when present, else the datasheet's; nullopt when neither.
  std::optional<DeviceCeilings> best() const;
  /// The datasheet's ceilings; nullopt when no entry matched.
  std::optional<DeviceCeilings> datasheet_ceilings() const;
};

/// The datasheet entry matched for `device` (nullopt when none; a broken user catalog file throws
/// UsageError) and its measured ceilings per `mode` (measuring needs GPU `index`).
CeilingsLookup ceilings_for(int index, const DeviceDescription& device, CeilingsMode mode);
/// The ceilings for a device known only by name (a saved trace's): this machine's GPU 0 per `mode`
/// when its name is `name` (or `name` is empty), else the catalog entry whose longest match name
/// occurs in `name` (datasheet only), with a note saying which.
CeilingsLookup ceilings_for_device_named(const std::string& name, CeilingsMode mode);

}  // namespace ridge
