#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"
#include "measure/cuda/random_fill.hpp"
#include "measure/cuda/launchers.hpp"

namespace ridge {

namespace {

__host__ __device__ inline std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__host__ __device__ inline float value_at(std::uint64_t seed, std::int64_t i, float lo, float hi) {
  const std::uint64_t h = mix(seed * 0x632be59bd9b4e019ull + static_cast<std::uint64_t>(i));
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // 24 random bits in [0, 1)
  return lo + (hi - lo) * u;
}

template <typename T>
__global__ void fill_kernel(T* out, std::int64_t n, std::uint64_t seed, float lo, float hi) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<T>(value_at(seed, i, lo, hi));
}

template <typename T>
void launch(void* data, std::int64_t n, std::uint64_t seed, cuda_stream stream, float lo, float hi) {
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65536));
  fill_kernel<<<blocks > 0 ? blocks : 1, 256, 0, stream>>>(static_cast<T*>(data), n, seed, lo, hi);
  RIDGE_CHECK_LAUNCH();
}

template <typename T>
__global__ void count_non_finite_kernel(const T* data, std::int64_t n, unsigned long long* count) {
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = static_cast<float>(data[i]);
    if (!isfinite(v)) ++local;
  }
  if (local) atomicAdd(count, local);
}

__global__ void count_non_finite_double_kernel(const double* data, std::int64_t n, unsigned long long* count) {
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    if (!isfinite(data[i])) ++local;
  if (local) atomicAdd(count, local);
}

}  // namespace

void launch_count_non_finite(const void* data, std::int64_t n, cudaDataType_t type, unsigned long long* counter,
                             cuda_stream stream) {
  switch (type) {
    case CUDA_R_32F: count_non_finite_kernel<<<1024, 256, 0, stream>>>(static_cast<const float*>(data), n, counter); break;
    case CUDA_R_16F: count_non_finite_kernel<<<1024, 256, 0, stream>>>(static_cast<const __half*>(data), n, counter); break;
    case CUDA_R_16BF: count_non_finite_kernel<<<1024, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(data), n, counter); break;
    case CUDA_R_64F: count_non_finite_double_kernel<<<1024, 256, 0, stream>>>(static_cast<const double*>(data), n, counter); break;
    default: throw UsageError("count_non_finite: unsupported element type");
  }
  RIDGE_CHECK_LAUNCH();
}

float random_value(std::uint64_t seed, std::int64_t index, float lo, float hi) { return value_at(seed, index, lo, hi); }

void fill_random(void* data, std::int64_t count, cudaDataType_t type, std::uint64_t seed, cuda_stream stream, float lo,
                 float hi) {
  if (count <= 0) return;
  switch (type) {
    case CUDA_R_32F: return launch<float>(data, count, seed, stream, lo, hi);
    case CUDA_R_64F: return launch<double>(data, count, seed, stream, lo, hi);
    case CUDA_R_16F: return launch<__half>(data, count, seed, stream, lo, hi);
    case CUDA_R_16BF: return launch<__nv_bfloat16>(data, count, seed, stream, lo, hi);
    case CUDA_R_8F_E4M3: return launch<__nv_fp8_e4m3>(data, count, seed, stream, lo, hi);
    default: throw UsageError("fill_random: unsupported element type");
  }
}

}  // namespace ridge
