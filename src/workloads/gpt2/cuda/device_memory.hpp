#pragma once
// Private helpers of the GPT-2 CUDA layer: owned device allocations that say what failed, bf16
// bit conversions, the model's element type, and the device queries the decoder needs.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/device.hpp"
#include "ridge/dtype.hpp"
#include "ridge/errors.hpp"
#include "ridge/gpt2/config.hpp"
#include "workloads/gpt2/cuda/kernels.hpp"

namespace ridge::gpt2 {

inline void* device_alloc(std::size_t bytes, const std::string& what) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, std::max<std::size_t>(bytes, 16));
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(fmt::format("cannot allocate {:.3f} GB of GPU memory for {}: {}. Use a smaller model, batch or "
                            "context",
                            bytes / 1e9, what, detail::status_text(status)));
  }
  return p;
}

struct DeviceFree {
  void operator()(void* p) const {
    if (p) cudaFree(p);
  }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;

inline DevicePtr make_device(std::size_t bytes, const std::string& what) { return DevicePtr(device_alloc(bytes, what)); }

inline Elem elem_of(DType dtype) {
  if (dtype == DType::fp32) return Elem::fp32;
  if (dtype == DType::bf16) return Elem::bf16;
  throw UsageError(fmt::format("GPT-2 decode supports fp32 and bf16 weights, not {}", to_string(dtype)));
}

inline std::uint16_t bf16_bits(float v) {
  const float r = round_to_bf16(v);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &r, 4);
  return static_cast<std::uint16_t>(bits >> 16);
}

inline float from_bf16_bits(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline void ensure_gpu() {
  if (device_count() == 0) require_gpu(0);  // throws NoGpuError with the reason
}

inline int current_sm_count() {
  int device = 0, sms = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  RIDGE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

inline bool device_has_pdl() {
  int device = 0, major = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  RIDGE_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

}  // namespace ridge::gpt2
