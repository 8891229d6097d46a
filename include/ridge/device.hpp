#pragma once
#include <memory>
#include <string>

#include "ridge/catalog.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// Number of usable CUDA devices; 0 when there is no driver or no GPU (never throws).
int device_count();

/// Why no device is usable (the CUDA error text), or empty when one is.
std::string no_gpu_reason();

/// Throws NoGpuError, with a message saying what to do, unless device `index` is usable.
/// Also makes it the current device.
void require_gpu(int index = 0);

/// Properties of device `index` from the CUDA runtime, plus its UUID.
DeviceDescription describe_device(int index = 0);

/// Current clocks, power, temperature and throttle reasons from NVML (loaded at run time);
/// source "none" when NVML is absent.
ClockReading read_clocks(int index = 0);

/// What the clocks did while a measurement ran (NVML polled from a background thread).
struct ClockActivity {
  int readings = 0;
  double sm_mhz_min = -1, sm_mhz_max = -1;
  double memory_mhz_min = -1, memory_mhz_max = -1;
  double power_w_max = -1;
  long long throttle_reasons_seen = 0;  ///< OR of every reading's reason mask (idle bit excluded)
  nlohmann::json to_json() const;
};

/// Polls read_clocks() every `interval_ms` until stop() (or destruction). A no-op without NVML.
/// Sensor readings at the start and end of a run miss throttling that happens in between (an
/// 8192^3 BF16 GEMM loop on an H200 hit its power cap within ~100 ms): this catches it.
class ClockMonitor {
 public:
  explicit ClockMonitor(int device = 0, double interval_ms = 10);
  ~ClockMonitor();
  ClockMonitor(const ClockMonitor&) = delete;
  ClockMonitor& operator=(const ClockMonitor&) = delete;
  ClockActivity stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// "loaded", or why NVML could not be used.
std::string nvml_status();

/// Names of the throttle-reason bits set in an NVML mask (empty when none or unknown).
std::string throttle_reason_names(long long mask);

/// What `ridge info` shows about one GPU.
struct DeviceInfo {
  DeviceDescription device;  ///< properties from the CUDA runtime (catalog_key set when matched)
  std::optional<CatalogEntry> datasheet;  ///< the catalog entry it matched; nullopt when none
  ClockReading clocks;       ///< current clocks, power, temperature (source "none" without NVML)
  std::string nvml_status;   ///< "loaded", or why NVML could not be used
  std::string clock_limits;  ///< names of the clock limits (throttle reasons) active now; empty = none
};

/// `ridge info`: device `index`'s description, its datasheet match and its clocks now. Throws
/// NoGpuError (with what to do) when the device is not usable.
DeviceInfo device_info(int index = 0);

}  // namespace ridge
