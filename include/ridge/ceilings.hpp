#pragma once
// Measured ceilings of a device: what its memory and arithmetic units actually deliver.
// (Implementation: src/gpu/ceilings*.)
#include <map>
#include <string>
#include <vector>

#include "ridge/result.hpp"

namespace ridge {

struct MeasuredCeilings {
  std::string device_uuid;
  std::string device_name;
  std::string measured_at_utc;
  double hbm_bytes_per_s = 0;  ///< best of copy / read-only / triad on >= 8x L2, bytes = reads + writes
  std::string hbm_kernel;      ///< which kernel reached it
  double l2_bytes_per_s = 0;   ///< working set well inside the L2
  double fp32_flops_per_s = 0; ///< FMA peak (2 FLOP per FMA)
  /// SM clock during the FMA kernel, from its own cycle counter over the global timer (MHz).
  double fp32_observed_sm_mhz = 0;
  double max_sm_clock_mhz = 0;  ///< the device's rated maximum SM clock (cudaDevAttrClockRate)
  std::map<std::string, double> tensor_flops_per_s;  ///< per dtype, from large cuBLASLt GEMMs
  double empty_launch_us = 0;        ///< an empty kernel, stream held by a spin kernel (per launch)
  double empty_launch_graph_us = 0;  ///< the same kernel replayed from a CUDA graph (per node)
  ClockReading clocks;          ///< during the measurement
  std::vector<std::string> notes;  ///< e.g. dtypes skipped because the device lacks them
  std::vector<Record> records;  ///< the raw measurements behind each number
  double measure_seconds = 0;   ///< wall time the measurement took
  bool from_cache = false;      ///< loaded from the cache file rather than measured now (not saved)
  std::string cache_file;       ///< where it is cached (not saved)
};

/// Where the ceilings of the device with `uuid` are cached: $RIDGE_CACHE_DIR, else
/// $XDG_CACHE_HOME/ridge, else ~/.cache/ridge; file ceilings-<uuid>.json.
std::string ceilings_cache_path(const std::string& uuid);

/// Measured ceilings of `device`: from the cache (~/.cache/ridge/ceilings-<uuid>.json, or
/// $RIDGE_CACHE_DIR) unless `refresh` or absent; otherwise measured (seconds) and cached. Every
/// probe's output is checked before it is timed (VerificationError when wrong).
MeasuredCeilings measured_ceilings(int device, bool refresh = false);

nlohmann::json to_json(const MeasuredCeilings& c);
MeasuredCeilings ceilings_from_json(const nlohmann::json& j);

}  // namespace ridge
