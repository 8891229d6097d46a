#pragma once
// Measured ceilings of a device: what its memory and arithmetic units actually deliver.
// (Implementation: src/gpu/ceilings*.)
#include <map>
#include <string>

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
  std::map<std::string, double> tensor_flops_per_s;  ///< per dtype, from large cuBLASLt GEMMs
  double empty_launch_us = 0;  ///< an empty kernel, launch-free timing
  ClockReading clocks;          ///< during the measurement
  std::vector<Record> records;  ///< the raw measurements behind each number
};

/// Measured ceilings of `device`: from the cache (~/.cache/ridge/ceilings-<uuid>.json, or
/// $RIDGE_CACHE_DIR) unless `refresh` or absent; otherwise measured (tens of seconds) and cached.
MeasuredCeilings measured_ceilings(int device, bool refresh = false);

nlohmann::json to_json(const MeasuredCeilings& c);
MeasuredCeilings ceilings_from_json(const nlohmann::json& j);

}  // namespace ridge
