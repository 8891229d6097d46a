// Kernels of the measured ceilings: streaming copy / read / triad (HBM), a repeated read of a
// working set inside the L2, and FP32 FMA chains. Launchers only here; the host logic (checks,
// timing, messages) is in ceilings.cpp. No fmt in this file (see launchers.hpp).
#include <cuda_runtime.h>

#include <cstdint>

#include "roofline/cuda/ceiling_kernels.hpp"
#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"

namespace ridge::detail::ceiling {

namespace {

template <bool Streaming>
__device__ __forceinline__ float4 load(const float4* p) {
  if constexpr (Streaming)
    return __ldcs(p);  // evict-first: the data is touched once
  else
    return __ldg(p);  // read-only path
}

template <bool Streaming>
__device__ __forceinline__ void store(float4* p, float4 v) {
  if constexpr (Streaming)
    __stcs(p, v);
  else
    *p = v;
}

// An L2-only load the compiler may not merge across passes: `volatile` keeps every pass's loads.
__device__ __forceinline__ float4 load_l2(const float4* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p));
  return v;
}

// The value a float4 contributes to a reduction: pair sums in float (host references repeat them
// exactly), so only the double accumulation order differs between host and device.
__device__ __forceinline__ double contribution(float4 v) { return static_cast<double>((v.x + v.y) + (v.z + v.w)); }

// Sums `value` over the block; thread 0 writes it to out[blockIdx.x].
__device__ __forceinline__ void block_sum_to(double value, double* out) {
  __shared__ double warp_sums[32];
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) >> 5;
    value = lane < warps ? warp_sums[lane] : 0.0;
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
    if (lane == 0) out[blockIdx.x] = value;
  }
}

// Grid-stride loops in which each thread keeps U independent 16-byte loads in flight: element
// i + k*stride for k < U, so every load instruction of a warp reads 512 contiguous bytes.
template <int U, bool S>
__global__ void __launch_bounds__(1024) copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst,
                                                    std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = load<S>(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < U; ++k) store<S>(dst + i + k * stride, v[k]);
  }
  for (; i < n; i += stride) store<S>(dst + i, load<S>(src + i));
}

template <int U, bool S>
__global__ void __launch_bounds__(1024) read_kernel(const float4* __restrict__ src, std::int64_t n,
                                                    double* __restrict__ partials) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  double acc = 0;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = load<S>(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < U; ++k) acc += contribution(v[k]);
  }
  for (; i < n; i += stride) acc += contribution(load<S>(src + i));
  block_sum_to(acc, partials);
}

__device__ __forceinline__ float4 triad(float s, float4 b, float4 c) {
  return make_float4(__fmaf_rn(s, c.x, b.x), __fmaf_rn(s, c.y, b.y), __fmaf_rn(s, c.z, b.z), __fmaf_rn(s, c.w, b.w));
}

template <int U, bool S>
__global__ void __launch_bounds__(1024) triad_kernel(float4* __restrict__ a, const float4* __restrict__ b,
                                                     const float4* __restrict__ c, float scalar, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 vb[U], vc[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      vb[k] = load<S>(b + i + k * stride);
      vc[k] = load<S>(c + i + k * stride);
    }
#pragma unroll
    for (int k = 0; k < U; ++k) store<S>(a + i + k * stride, triad(scalar, vb[k], vc[k]));
  }
  for (; i < n; i += stride) store<S>(a + i, triad(scalar, load<S>(b + i), load<S>(c + i)));
}

template <int U, bool S>
__global__ void __launch_bounds__(1024) l2_read_kernel(const float4* __restrict__ src, std::int64_t n, int passes,
                                                       double* __restrict__ partials) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t first = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  double acc = 0;
  for (int p = 0; p < passes; ++p) {
    std::int64_t i = first;
    for (; i + (U - 1) * stride < n; i += U * stride) {
      float4 v[U];
#pragma unroll
      for (int k = 0; k < U; ++k) v[k] = load_l2(src + i + k * stride);
#pragma unroll
      for (int k = 0; k < U; ++k) acc += contribution(v[k]);
    }
    for (; i < n; i += stride) acc += contribution(load_l2(src + i));
  }
  block_sum_to(acc, partials);
}

__host__ __device__ inline float start_value(std::int64_t thread, int chain) {
  return 1.0f + static_cast<float>((thread * 7 + chain * 131) % 1000) * 1e-4f;
}

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// C independent chains per thread, 32 steps of each per loop trip: the loop's own instructions
// are under 1% of the issued ones, so the FP32 pipes, not the scheduler, set the rate.
template <int C>
__global__ void __launch_bounds__(1024) fma_kernel(float* __restrict__ out, int iterations, float a, float b,
                                                   unsigned long long* __restrict__ clock_info) {
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float x[C];
#pragma unroll
  for (int c = 0; c < C; ++c) x[c] = start_value(t, c);
  unsigned long long cycles0 = 0, ns0 = 0;
  if (t == 0) {
    ns0 = global_timer_ns();
    cycles0 = clock64();
  }
  for (int it = 0; it < iterations; it += 32) {
#pragma unroll
    for (int u = 0; u < 32; ++u)
#pragma unroll
      for (int c = 0; c < C; ++c) x[c] = __fmaf_rn(x[c], a, b);
  }
  float sum = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) sum += x[c];
  out[t] = sum;
  if (t == 0) {
    const unsigned long long cycles1 = clock64();
    const unsigned long long ns1 = global_timer_ns();
    clock_info[0] = cycles0;
    clock_info[1] = cycles1;
    clock_info[2] = ns0;
    clock_info[3] = ns1;
  }
}

__global__ void count_differences_kernel(const unsigned* __restrict__ x, const unsigned* __restrict__ y,
                                         std::int64_t n, unsigned long long* counter) {
  unsigned long long local = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    local += x[i] != y[i];
  if (local) atomicAdd(counter, local);
}

// Picks the template instance of `kernel` for a variant's unroll and streaming flag.
#define RIDGE_STREAM_VARIANT(kernel, v)                                               \
  do {                                                                                \
    switch (((v).unroll << 1) | int((v).streaming)) {                                 \
      case 2: return kernel<1, false>;                                                \
      case 3: return kernel<1, true>;                                                 \
      case 4: return kernel<2, false>;                                                \
      case 5: return kernel<2, true>;                                                 \
      case 8: return kernel<4, false>;                                                \
      case 9: return kernel<4, true>;                                                 \
      case 16: return kernel<8, false>;                                               \
      case 17: return kernel<8, true>;                                                \
    }                                                                                 \
    throw UsageError("ceiling kernels: unroll must be 1, 2, 4 or 8");                 \
  } while (0)

using CopyFn = void (*)(const float4*, float4*, std::int64_t);
using ReadFn = void (*)(const float4*, std::int64_t, double*);
using TriadFn = void (*)(float4*, const float4*, const float4*, float, std::int64_t);
using L2Fn = void (*)(const float4*, std::int64_t, int, double*);
using FmaFn = void (*)(float*, int, float, float, unsigned long long*);

CopyFn copy_fn(const StreamVariant& v) { RIDGE_STREAM_VARIANT(copy_kernel, v); }
ReadFn read_fn(const StreamVariant& v) { RIDGE_STREAM_VARIANT(read_kernel, v); }
TriadFn triad_fn(const StreamVariant& v) { RIDGE_STREAM_VARIANT(triad_kernel, v); }
L2Fn l2_fn(const StreamVariant& v) {
  StreamVariant cg = v;
  cg.streaming = false;  // the L2 probe always loads with .cg
  RIDGE_STREAM_VARIANT(l2_read_kernel, cg);
}
FmaFn fma_fn(int chains) {
  switch (chains) {
    case 4: return fma_kernel<4>;
    case 8: return fma_kernel<8>;
    case 16: return fma_kernel<16>;
  }
  throw UsageError("ceiling kernels: FMA chains must be 4, 8 or 16");
}

template <typename Fn>
int blocks_per_sm(Fn fn, int threads) {
  int blocks = 0;
  RIDGE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, threads, 0));
  if (blocks < 1) throw Error("ceiling kernels: a kernel cannot be resident at this block size");
  return blocks;
}

void check_shape(int threads, int blocks) {
  if (threads < 32 || threads > 1024 || threads % 32 != 0 || blocks < 1)
    throw UsageError("ceiling kernels: threads must be a multiple of 32 in [32, 1024] and blocks >= 1");
}

}  // namespace

int copy_blocks_per_sm(const StreamVariant& v) { return blocks_per_sm(copy_fn(v), v.threads); }
int read_blocks_per_sm(const StreamVariant& v) { return blocks_per_sm(read_fn(v), v.threads); }
int triad_blocks_per_sm(const StreamVariant& v) { return blocks_per_sm(triad_fn(v), v.threads); }
int l2_read_blocks_per_sm(const StreamVariant& v) { return blocks_per_sm(l2_fn(v), v.threads); }
int fma_blocks_per_sm(int chains, int threads) { return blocks_per_sm(fma_fn(chains), threads); }

float fma_start_value(std::int64_t thread, int chain) { return start_value(thread, chain); }

void launch_copy(const void* src, void* dst, std::int64_t n4, const StreamVariant& v, int blocks, cuda_stream stream) {
  check_shape(v.threads, blocks);
  copy_fn(v)<<<blocks, v.threads, 0, stream>>>(static_cast<const float4*>(src), static_cast<float4*>(dst), n4);
  RIDGE_CHECK_LAUNCH();
}

void launch_read(const void* src, std::int64_t n4, double* partials, const StreamVariant& v, int blocks,
                 cuda_stream stream) {
  check_shape(v.threads, blocks);
  read_fn(v)<<<blocks, v.threads, 0, stream>>>(static_cast<const float4*>(src), n4, partials);
  RIDGE_CHECK_LAUNCH();
}

void launch_triad(void* a, const void* b, const void* c, float scalar, std::int64_t n4, const StreamVariant& v,
                  int blocks, cuda_stream stream) {
  check_shape(v.threads, blocks);
  triad_fn(v)<<<blocks, v.threads, 0, stream>>>(static_cast<float4*>(a), static_cast<const float4*>(b),
                                                static_cast<const float4*>(c), scalar, n4);
  RIDGE_CHECK_LAUNCH();
}

void launch_l2_read(const void* src, std::int64_t n4, int passes, double* partials, const StreamVariant& v, int blocks,
                    cuda_stream stream) {
  check_shape(v.threads, blocks);
  l2_fn(v)<<<blocks, v.threads, 0, stream>>>(static_cast<const float4*>(src), n4, passes, partials);
  RIDGE_CHECK_LAUNCH();
}

void launch_fma(float* out, int iterations, float a, float b, int chains, int threads, int blocks,
                unsigned long long* clock_info, cuda_stream stream) {
  check_shape(threads, blocks);
  if (iterations < 32 || iterations % 32 != 0)
    throw UsageError("ceiling kernels: FMA iterations must be a positive multiple of 32");
  fma_fn(chains)<<<blocks, threads, 0, stream>>>(out, iterations, a, b, clock_info);
  RIDGE_CHECK_LAUNCH();
}

void launch_count_differences(const void* x, const void* y, std::int64_t words, unsigned long long* counter,
                              cuda_stream stream) {
  count_differences_kernel<<<1024, 256, 0, stream>>>(static_cast<const unsigned*>(x), static_cast<const unsigned*>(y),
                                                     words, counter);
  RIDGE_CHECK_LAUNCH();
}

}  // namespace ridge::detail::ceiling
