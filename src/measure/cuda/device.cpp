#include "ridge/device.hpp"

#include <dlfcn.h>

#include <mutex>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"

namespace ridge {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return count;
}

std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (status == cudaErrorInsufficientDriver) {
      // The runtime says "insufficient" both for an old driver and for none at all: tell them apart.
      int driver = 0;
      if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)
        return "no NVIDIA driver is installed (libcuda.so.1 was not found); install the NVIDIA driver, 580 or newer";
      return fmt::format("the NVIDIA driver supports CUDA {}.{} and ridge needs CUDA 13.0 or newer: update the driver "
                         "to 580 or newer",
                         driver / 1000, driver % 1000 / 10);
    }
    if (status == cudaErrorNoDevice) return "the NVIDIA driver found no CUDA device (nvidia-smi lists what it sees)";
    return detail::status_text(status) + " (nvidia-smi shows whether the driver sees a GPU)";
  }
  if (count == 0) return "the CUDA runtime found no devices (nvidia-smi lists what the driver sees)";
  return "";
}

void require_gpu(int index) {
  const std::string reason = no_gpu_reason();
  if (!reason.empty())
    throw NoGpuError(fmt::format("this needs a CUDA GPU, and none is usable: {}", reason));
  const int count = device_count();
  if (index < 0 || index >= count)
    throw UsageError(fmt::format("device index {} does not exist: this machine has {} CUDA device(s) (0..{})",
                                 index, count, count - 1));
  RIDGE_CHECK(cudaSetDevice(index));
}

namespace {

std::string format_uuid(const cudaUUID_t& id) {
  const auto* b = reinterpret_cast<const unsigned char*>(id.bytes);
  return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                     b[15]);
}

// NVML has no header on these machines: declare the few entry points ridge uses and load
// libnvidia-ml.so.1 at run time. Any failure leaves ridge working without sensor readings.
using nvml_device = void*;
using nvml_return = int;
struct Nvml {
  bool loaded = false;
  std::string status = "not loaded";
  nvml_return (*init)() = nullptr;
  nvml_return (*by_pci)(const char*, nvml_device*) = nullptr;
  nvml_return (*clock)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*power)(nvml_device, unsigned*) = nullptr;
  nvml_return (*temperature)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*reasons)(nvml_device, unsigned long long*) = nullptr;
};

Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      n.status = fmt::format("libnvidia-ml.so.1 not loadable ({})", dlerror());
      return;
    }
    auto sym = [&](const char* name) { return dlsym(lib, name); };
    n.init = reinterpret_cast<decltype(n.init)>(sym("nvmlInit_v2"));
    n.by_pci = reinterpret_cast<decltype(n.by_pci)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<decltype(n.clock)>(sym("nvmlDeviceGetClockInfo"));
    n.power = reinterpret_cast<decltype(n.power)>(sym("nvmlDeviceGetPowerUsage"));
    n.temperature = reinterpret_cast<decltype(n.temperature)>(sym("nvmlDeviceGetTemperature"));
    n.reasons = reinterpret_cast<decltype(n.reasons)>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
    if (!n.reasons) n.reasons = reinterpret_cast<decltype(n.reasons)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    if (!n.init || !n.by_pci || !n.clock) {
      n.status = "libnvidia-ml.so.1 lacks the expected entry points";
      return;
    }
    const nvml_return rc = n.init();
    if (rc != 0) {
      n.status = fmt::format("nvmlInit failed (code {})", rc);
      return;
    }
    n.loaded = true;
    n.status = "loaded";
  });
  return n;
}

}  // namespace

std::string nvml_status() { return nvml().status; }

DeviceDescription describe_device(int index) {
  require_gpu(index);
  cudaDeviceProp prop{};
  RIDGE_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceDescription d;
  d.index = index;
  d.name = prop.name;
  d.uuid = format_uuid(prop.uuid);
  d.compute_capability_major = prop.major;
  d.compute_capability_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = prop.l2CacheSize;
  d.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  d.memory_bus_bits = prop.memoryBusWidth;
  int khz = 0;
  RIDGE_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index));
  d.max_sm_clock_mhz = khz / 1000.0;
  RIDGE_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, index));
  d.max_memory_clock_mhz = khz / 1000.0;
  RIDGE_CHECK(cudaDriverGetVersion(&d.driver_version));
  RIDGE_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

ClockReading read_clocks(int index) {
  if (index < 0 || (device_count() > 0 && index >= device_count()))
    throw UsageError(fmt::format("device index {} does not exist: this machine has {} CUDA device(s)", index,
                                 device_count()));
  ClockReading c;
  Nvml& n = nvml();
  if (!n.loaded) return c;
  char bus_id[32] = {0};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index) != cudaSuccess) {
    cudaGetLastError();
    return c;
  }
  nvml_device dev = nullptr;
  if (n.by_pci(bus_id, &dev) != 0) return c;
  unsigned value = 0;
  if (n.clock(dev, 1 /*SM*/, &value) == 0) c.sm_mhz = value;
  if (n.clock(dev, 2 /*MEM*/, &value) == 0) c.memory_mhz = value;
  if (n.power && n.power(dev, &value) == 0) c.power_w = value / 1000.0;
  if (n.temperature && n.temperature(dev, 0 /*GPU*/, &value) == 0) c.temperature_c = value;
  unsigned long long mask = 0;
  if (n.reasons && n.reasons(dev, &mask) == 0) c.throttle_reasons = static_cast<std::int64_t>(mask);
  c.source = "nvml";
  return c;
}

std::string throttle_reason_names(long long mask) {
  if (mask <= 0) return "";
  static const std::pair<long long, const char*> names[] = {
      {0x1, "gpu_idle"},          {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},       {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},       {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::string out;
  for (const auto& [bit, name] : names) {
    if (!(mask & bit)) continue;
    if (!out.empty()) out += ',';
    out += name;  // appended, not out += "," + name: GCC 12 warns falsely on that (-Wrestrict)
  }
  return out;
}

}  // namespace ridge
