// Streaming kernels: add, copy, scale, triad (elementwise) and a read-only sum, fp32, in three
// thread mappings plus one deliberately wrong variant for the tests. Kernels and launchers only.
#include <cuda_runtime.h>

#include <algorithm>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"
#include "sweeps/cuda/stream_kernels.hpp"

namespace ridge::detail::stream_kernels {

namespace {

template <int OP>
constexpr bool reads_b = OP == op_add || OP == op_triad;

template <int OP>
__device__ __forceinline__ float apply(float x, float y, float s) {
  if constexpr (OP == op_add) return x + y;
  if constexpr (OP == op_copy) return x;
  if constexpr (OP == op_scale) return s * x;
  if constexpr (OP == op_triad) return x + s * y;
  return 0.0f;
}

template <int OP>
__device__ __forceinline__ float4 apply4(float4 x, float4 y, float s) {
  return make_float4(apply<OP>(x.x, y.x, s), apply<OP>(x.y, y.y, s), apply<OP>(x.z, y.z, s), apply<OP>(x.w, y.w, s));
}

__device__ __forceinline__ std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// ---- elementwise ------------------------------------------------------------------------------

// One element per thread; `limit` is n, except for the broken variant (n - 1).
template <int OP>
__global__ void scalar_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, float s,
                              std::int64_t limit) {
  const std::int64_t i = global_thread();
  if (i >= limit) return;
  const float y = reads_b<OP> ? b[i] : 0.0f;
  c[i] = apply<OP>(a[i], y, s);
}

// One float4 per thread; the n % 4 trailing elements go to the threads after the last float4.
template <int OP>
__global__ void vec4_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, float s,
                            std::int64_t n) {
  const std::int64_t n4 = n / 4;
  const std::int64_t i = global_thread();
  if (i < n4) {
    const float4 x = reinterpret_cast<const float4*>(a)[i];
    const float4 y = reads_b<OP> ? reinterpret_cast<const float4*>(b)[i] : make_float4(0, 0, 0, 0);
    reinterpret_cast<float4*>(c)[i] = apply4<OP>(x, y, s);
  } else {
    const std::int64_t e = 4 * n4 + (i - n4);
    if (e < n) c[e] = apply<OP>(a[e], reads_b<OP> ? b[e] : 0.0f, s);
  }
}

// A grid that fills the machine once and strides over the array, two independent float4 per
// iteration so each thread keeps more bytes in flight.
template <int OP>
__global__ void grid_stride_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                   float s, std::int64_t n) {
  const std::int64_t n4 = n / 4;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  std::int64_t i = global_thread();
  for (; i + stride < n4; i += 2 * stride) {
    const float4 x0 = a4[i], x1 = a4[i + stride];
    float4 y0 = make_float4(0, 0, 0, 0), y1 = y0;
    if constexpr (reads_b<OP>) {
      y0 = b4[i];
      y1 = b4[i + stride];
    }
    c4[i] = apply4<OP>(x0, y0, s);
    c4[i + stride] = apply4<OP>(x1, y1, s);
  }
  if (i < n4) c4[i] = apply4<OP>(a4[i], reads_b<OP> ? b4[i] : make_float4(0, 0, 0, 0), s);
  const std::int64_t t = global_thread();
  if (t < n - 4 * n4) c[4 * n4 + t] = apply<OP>(a[4 * n4 + t], reads_b<OP> ? b[4 * n4 + t] : 0.0f, s);
}

// ---- read-only sum ----------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the block; the result is valid in thread 0.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T warp_sums[32];
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x + 31) / 32 ? warp_sums[lane] : T(0);
    v = warp_sum(v);
  }
  return v;
}

// Every first pass zeroes the result from block 0: the finish pass, which adds into it, runs after
// the whole first pass in stream order, so no memset node is needed.
__device__ __forceinline__ void zero_result(double* result) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *result = 0.0;
}

__global__ void read_scalar_kernel(const float* __restrict__ a, float* __restrict__ partials, double* result,
                                   std::int64_t limit) {
  zero_result(result);
  const std::int64_t i = global_thread();
  const float v = block_sum(i < limit ? a[i] : 0.0f);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

__global__ void read_vec4_kernel(const float* __restrict__ a, float* __restrict__ partials, double* result,
                                 std::int64_t n) {
  zero_result(result);
  const std::int64_t n4 = n / 4;
  const std::int64_t i = global_thread();
  float v = 0.0f;
  if (i < n4) {
    const float4 x = reinterpret_cast<const float4*>(a)[i];
    v = (x.x + x.y) + (x.z + x.w);
  } else if (4 * n4 + (i - n4) < n) {
    v = a[4 * n4 + (i - n4)];
  }
  v = block_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

__global__ void read_grid_stride_kernel(const float* __restrict__ a, float* __restrict__ partials, double* result,
                                        std::int64_t n) {
  zero_result(result);
  const std::int64_t n4 = n / 4;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  float s0 = 0.0f, s1 = 0.0f;
  std::int64_t i = global_thread();
  for (; i + stride < n4; i += 2 * stride) {
    const float4 x0 = a4[i], x1 = a4[i + stride];
    s0 += (x0.x + x0.y) + (x0.z + x0.w);
    s1 += (x1.x + x1.y) + (x1.z + x1.w);
  }
  if (i < n4) {
    const float4 x = a4[i];
    s0 += (x.x + x.y) + (x.z + x.w);
  }
  const std::int64_t t = global_thread();
  if (t < n - 4 * n4) s1 += a[4 * n4 + t];
  const float v = block_sum(s0 + s1);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// The final pass: partials summed in double, one block per 1024 x 8 partials (a single block for
// the grid-stride variant's few thousand), each block adding its total atomically.
constexpr int finish_items_per_thread = 8;

__global__ void finish_sum_kernel(const float* __restrict__ partials, std::int64_t count, double* result) {
  double v = 0.0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = global_thread(); i < count; i += stride) v += partials[i];
  v = block_sum(v);
  if (threadIdx.x == 0) atomicAdd(result, v);
}

std::int64_t blocks_for(std::int64_t threads) { return (threads + block_threads - 1) / block_threads; }

template <int OP>
void elementwise(int variant, const float* a, const float* b, float* c, float s, std::int64_t n, int gs_blocks,
                 cudaStream_t stream) {
  switch (variant) {
    case variant_scalar:
      scalar_kernel<OP><<<blocks_for(n), block_threads, 0, stream>>>(a, b, c, s, n);
      break;
    case variant_broken:
      scalar_kernel<OP><<<blocks_for(n), block_threads, 0, stream>>>(a, b, c, s, n - 1);
      break;
    case variant_vec4:
      vec4_kernel<OP><<<blocks_for(n / 4 + n % 4), block_threads, 0, stream>>>(a, b, c, s, n);
      break;
    case variant_grid_stride:
      grid_stride_kernel<OP><<<gs_blocks, block_threads, 0, stream>>>(a, b, c, s, n);
      break;
    default: throw UsageError("unknown stream kernel variant");
  }
  RIDGE_CHECK_LAUNCH();
}

template <typename Kernel>
int resident_blocks(Kernel kernel, int device) {
  int sms = 0, per_sm = 0;
  RIDGE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  RIDGE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, 0));
  return sms * (per_sm > 0 ? per_sm : 1);
}

}  // namespace

int grid_stride_blocks(int op, int device) {
  switch (op) {
    case op_add: return resident_blocks(grid_stride_kernel<op_add>, device);
    case op_copy: return resident_blocks(grid_stride_kernel<op_copy>, device);
    case op_scale: return resident_blocks(grid_stride_kernel<op_scale>, device);
    case op_triad: return resident_blocks(grid_stride_kernel<op_triad>, device);
    case op_read: return resident_blocks(read_grid_stride_kernel, device);
    default: throw UsageError("unknown stream op");
  }
}

std::int64_t read_partial_count(int variant, std::int64_t n, int gs_blocks) {
  switch (variant) {
    case variant_scalar:
    case variant_broken: return blocks_for(n);
    case variant_vec4: return blocks_for(n / 4 + n % 4);
    case variant_grid_stride: return gs_blocks;
    default: throw UsageError("unknown stream kernel variant");
  }
}

void launch_elementwise(int op, int variant, const float* a, const float* b, float* c, float s, std::int64_t n,
                        int gs_blocks, cuda_stream stream) {
  switch (op) {
    case op_add: return elementwise<op_add>(variant, a, b, c, s, n, gs_blocks, stream);
    case op_copy: return elementwise<op_copy>(variant, a, b, c, s, n, gs_blocks, stream);
    case op_scale: return elementwise<op_scale>(variant, a, b, c, s, n, gs_blocks, stream);
    case op_triad: return elementwise<op_triad>(variant, a, b, c, s, n, gs_blocks, stream);
    default: throw UsageError("launch_elementwise: not an elementwise op");
  }
}

void launch_read(int variant, const float* a, float* partials, double* result, std::int64_t n, int gs_blocks,
                 cuda_stream stream) {
  const std::int64_t count = read_partial_count(variant, n, gs_blocks);
  switch (variant) {
    case variant_scalar: read_scalar_kernel<<<count, block_threads, 0, stream>>>(a, partials, result, n); break;
    case variant_broken: read_scalar_kernel<<<count, block_threads, 0, stream>>>(a, partials, result, n - 1); break;
    case variant_vec4: read_vec4_kernel<<<count, block_threads, 0, stream>>>(a, partials, result, n); break;
    case variant_grid_stride:
      read_grid_stride_kernel<<<count, block_threads, 0, stream>>>(a, partials, result, n);
      break;
    default: throw UsageError("unknown stream kernel variant");
  }
  RIDGE_CHECK_LAUNCH();
  const std::int64_t per_block = std::int64_t{finish_threads} * finish_items_per_thread;
  const std::int64_t finish_blocks = std::min<std::int64_t>(1024, (count + per_block - 1) / per_block);
  finish_sum_kernel<<<finish_blocks, finish_threads, 0, stream>>>(partials, count, result);
  RIDGE_CHECK_LAUNCH();
}

}  // namespace ridge::detail::stream_kernels
