#pragma once
#include <string>

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

/// "loaded", or why NVML could not be used.
std::string nvml_status();

/// Names of the throttle-reason bits set in an NVML mask (empty when none or unknown).
std::string throttle_reason_names(long long mask);

}  // namespace ridge
