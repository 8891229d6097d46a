#pragma once
// Device helpers shared by the GPT-2 kernels (kernels.cu) and the fused step (fused_step.cu).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "ridge/gpt2/config.hpp"

namespace ridge::gpt2 {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kHeadDim = 64;

// ---- small device helpers -------------------------------------------------------------------

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Asks the memory system to bring [p, p + bytes) into the L2 (a hint; bytes a multiple of 16).
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// 16 bytes of weights, read once per step: skip the L1.
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) {
  return __float2bfloat16_rn(v);
}

// Unpacks 16 bytes into 16 / sizeof(T) floats.
__device__ __forceinline__ void unpack(const uint4& v, float (&out)[4]) {
  out[0] = __uint_as_float(v.x);
  out[1] = __uint_as_float(v.y);
  out[2] = __uint_as_float(v.z);
  out[3] = __uint_as_float(v.w);
}
__device__ __forceinline__ void unpack(const uint4& v, float (&out)[8]) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // bf16 is the top half of a float: shifting the bits is an exact conversion.
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

// acc[r][b] += the 16-byte piece at chunk c of RPW weight rows (piece(r), model type W) times
// staged[b, chunk c] (fp32), for b < batch: the inner step of every GEMV here.
template <typename W, int RPW, int MAXB, typename Piece>
__device__ __forceinline__ void gemv_chunk(Piece&& piece, const float* staged, int k, int c, int batch,
                                           float (&acc)[RPW][MAXB]) {
  constexpr int VEC = 16 / sizeof(W);
  float wf[RPW][VEC];
#pragma unroll
  for (int r = 0; r < RPW; ++r) unpack(piece(r), wf[r]);
#pragma unroll
  for (int b = 0; b < MAXB; ++b) {
    if (b >= batch) break;
    const float4* xp = reinterpret_cast<const float4*>(staged + b * k + c * VEC);
    float xv[VEC];
#pragma unroll
    for (int e = 0; e < VEC / 4; ++e) {
      const float4 f = xp[e];
      xv[4 * e] = f.x;
      xv[4 * e + 1] = f.y;
      xv[4 * e + 2] = f.z;
      xv[4 * e + 3] = f.w;
    }
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[r][b] = fmaf(wf[r][e], xv[e], acc[r][b]);
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Layer-norm statistics of one row (k values in shared memory) by one warp: the mean, then the
// variance around it; every lane gets (mean, 1 / sqrt(variance + eps)).
__device__ __forceinline__ float2 warp_row_stats(const float* row, int k, float eps) {
  const int lane = threadIdx.x & 31;
  float s = 0;
  for (int i = lane; i < k; i += 32) s += row[i];
  const float mean = warp_sum(s) / k;
  float v = 0;
  for (int i = lane; i < k; i += 32) {
    const float d = row[i] - mean;
    v += d * d;
  }
  return make_float2(mean, 1.0f / sqrtf(warp_sum(v) / k + eps));
}

// Sum over the block; every thread gets the result. `scratch` holds one float per warp.
__device__ float block_sum(float v, float* scratch) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by an earlier reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0;
  for (int i = 0; i < warps; ++i) total += scratch[i];
  return total;
}

__device__ float block_max(float v, float* scratch) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = (blockDim.x + 31) >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float best = -INFINITY;
  for (int i = 0; i < warps; ++i) best = fmaxf(best, scratch[i]);
  return best;
}

// (value, index) "a beats b": larger value, or equal value and smaller index (first occurrence).
__device__ __forceinline__ bool beats(float va, int ia, float vb, int ib) {
  return va > vb || (va == vb && ia < ib) || (isnan(vb) && !isnan(va));
}

__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

}  // namespace
}  // namespace ridge::gpt2
