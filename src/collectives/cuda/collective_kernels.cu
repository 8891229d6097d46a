// The collectives' fill and check kernels, and p2p's pattern and SM-copy kernels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "collectives/cuda/collective_kernels.hpp"
#include "collectives/fill_formula.hpp"

namespace ridge::detail::collective_kernels {

namespace {

constexpr int threads = 256;

int blocks_for(std::int64_t count) {
  const std::int64_t b = (count + threads - 1) / threads;
  return static_cast<int>(b < 65536 ? (b < 1 ? 1 : b) : 65536);  // grid-stride beyond
}

template <typename T>
__device__ T from_double(double v);
template <>
__device__ float from_double<float>(double v) { return static_cast<float>(v); }
template <>
__device__ double from_double<double>(double v) { return v; }
template <>
__device__ __half from_double<__half>(double v) { return __float2half(static_cast<float>(v)); }
template <>
__device__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) { return __float2bfloat16(static_cast<float>(v)); }

__device__ double to_double(float v) { return v; }
__device__ double to_double(double v) { return v; }
__device__ double to_double(__half v) { return __half2float(v); }
__device__ double to_double(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void fill_kernel(T* data, std::int64_t count, int rank) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    data[i] = from_double<T>(detail::collective_formula::fill(rank, i));
}

template <typename T>
__global__ void check_kernel(const T* data, std::int64_t count, int op, int rank, int ranks, std::int64_t chunk,
                             unsigned long long* counters) {
  unsigned long long bad = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    bool defined = false;
    const double want = detail::collective_formula::expected(op, rank, ranks, chunk, i, &defined);
    if (!defined) continue;
    const double got = to_double(data[i]);
    if (!(got == want)) {  // NaN (the poison) counts as wrong
      ++bad;
      atomicMin(&counters[1], static_cast<unsigned long long>(i));
    }
  }
  if (bad) atomicAdd(&counters[0], bad);
}

template <typename T>
void fill_as(void* data, std::int64_t count, int rank, cuda_stream stream) {
  fill_kernel<<<blocks_for(count), threads, 0, stream>>>(static_cast<T*>(data), count, rank);
}

template <typename T>
void check_as(const void* data, std::int64_t count, int op, int rank, int ranks, std::int64_t chunk,
              unsigned long long* counters, cuda_stream stream) {
  check_kernel<<<blocks_for(count), threads, 0, stream>>>(static_cast<const T*>(data), count, op, rank, ranks, chunk,
                                                         counters);
}

__host__ __device__ std::uint32_t hash_word(std::uint32_t salt, std::int64_t index) {
  auto x = static_cast<std::uint64_t>(index) * 0x9E3779B97F4A7C15ull + salt;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x);
}

__global__ void pattern_fill_kernel(std::uint32_t* words, std::int64_t count, std::uint32_t salt) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    words[i] = hash_word(salt, i);
}

__global__ void pattern_check_kernel(const std::uint32_t* words, std::int64_t count, std::uint32_t salt,
                                     unsigned long long* counters) {
  unsigned long long bad = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    if (words[i] != hash_word(salt, i)) {
      ++bad;
      atomicMin(&counters[1], static_cast<unsigned long long>(i));
    }
  if (bad) atomicAdd(&counters[0], bad);
}

__global__ void sm_copy_kernel(uint4* dst, const uint4* src, std::int64_t vectors, std::uint32_t* dst_words,
                               const std::uint32_t* src_words, std::int64_t words) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t first = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  for (std::int64_t i = first; i < vectors; i += stride) dst[i] = src[i];
  for (std::int64_t i = vectors * 4 + first; i < words; i += stride) dst_words[i] = src_words[i];
}

}  // namespace

void launch_fill(void* data, std::int64_t count, int elem, int rank, cuda_stream stream) {
  switch (elem) {
    case f32: return fill_as<float>(data, count, rank, stream);
    case f16: return fill_as<__half>(data, count, rank, stream);
    case bf16: return fill_as<__nv_bfloat16>(data, count, rank, stream);
    default: return fill_as<double>(data, count, rank, stream);
  }
}

void launch_check(const void* data, std::int64_t count, int elem, int op, int rank, int ranks, std::int64_t chunk,
                  unsigned long long* counters, cuda_stream stream) {
  switch (elem) {
    case f32: return check_as<float>(data, count, op, rank, ranks, chunk, counters, stream);
    case f16: return check_as<__half>(data, count, op, rank, ranks, chunk, counters, stream);
    case bf16: return check_as<__nv_bfloat16>(data, count, op, rank, ranks, chunk, counters, stream);
    default: return check_as<double>(data, count, op, rank, ranks, chunk, counters, stream);
  }
}

std::uint32_t pattern_word(std::uint32_t salt, std::int64_t index) { return hash_word(salt, index); }

void launch_pattern_fill(std::uint32_t* words, std::int64_t count, std::uint32_t salt, cuda_stream stream) {
  pattern_fill_kernel<<<blocks_for(count), threads, 0, stream>>>(words, count, salt);
}

void launch_pattern_check(const std::uint32_t* words, std::int64_t count, std::uint32_t salt,
                          unsigned long long* counters, cuda_stream stream) {
  pattern_check_kernel<<<blocks_for(count), threads, 0, stream>>>(words, count, salt, counters);
}

void launch_sm_copy(void* dst, const void* src, std::int64_t bytes, int blocks, cuda_stream stream) {
  // 16-byte vectors when both pointers are 16-byte aligned (cudaMalloc's are), words for the rest.
  const bool aligned = (reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) % 16 == 0;
  const std::int64_t vectors = aligned ? bytes / 16 : 0;
  sm_copy_kernel<<<blocks, threads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), vectors,
                                                 static_cast<std::uint32_t*>(dst), static_cast<const std::uint32_t*>(src),
                                                 bytes / 4);
}

}  // namespace ridge::detail::collective_kernels
