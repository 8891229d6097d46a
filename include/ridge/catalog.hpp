#pragma once
// The device catalog: datasheet figures (dense, sparsity excluded), each with its source.
// Data: data/catalog.json, compiled into ridge; a user's file can replace it (RIDGE_CATALOG or
// --catalog). (Implementation: src/core/catalog.cpp.)
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ridge/dtype.hpp"
#include "ridge/result.hpp"

namespace ridge {

struct CatalogEntry {
  std::string key;   ///< e.g. "h200-sxm"
  std::string name;  ///< e.g. "NVIDIA H200 SXM"
  std::vector<std::string> match_names;  ///< substrings of cudaDeviceProp::name that identify it
  int sm_count = 0;
  double memory_bytes = 0;
  double bandwidth_bytes_per_s = 0;
  double l2_bytes = 0;
  /// Dense peak FLOP/s per dtype ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", plus "fp64_vector"
  /// and "fp4"); absent = not supported or not published. "fp64" is the highest FP64 rate (tensor cores
  /// where the part has them); fp16/bf16/fp8 are with FP32 accumulate, as ridge's GEMMs run them.
  std::map<std::string, double> peak_flops;
  /// Sparse peaks where the datasheet gives them (must be >= dense).
  std::map<std::string, double> sparse_peak_flops;
  std::string notes;   ///< e.g. "GeForce: FP16 with FP32 accumulate runs at half rate"
  std::string source;  ///< where the figures come from (datasheet title and URL)

  /// Dense peak for a dtype; nullopt when the part lacks it.
  std::optional<double> peak(DType dtype) const;
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

}  // namespace ridge
