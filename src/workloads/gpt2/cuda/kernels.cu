// The GPT-2 decode kernels. No fmt here (nvcc's C++20 front end rejects it): messages are built
// in model.cpp.
//
// Programmatic dependent launch (PDL): every kernel first lets its successor launch
// (griddepcontrol.launch_dependents), then does only work that does not depend on its
// predecessor -- prefetching its weights into the L2 -- and waits (griddepcontrol.wait) before it
// reads or writes anything the predecessor touches. Every kernel waits, so completion is ordered
// along the whole chain. Without PDL both instructions are no-ops.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <mutex>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/gpt2/config.hpp"
#include "workloads/gpt2/cuda/device_common.cuh"
#include "workloads/gpt2/cuda/kernels.hpp"

namespace ridge::gpt2 {

namespace {

template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, dim3 block, std::size_t smem, const LaunchConfig& lc, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = lc.stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = lc.pdl ? 1 : 0;
  RIDGE_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

// ---- initialisation -------------------------------------------------------------------------

template <typename T>
__global__ void init_tensor_kernel(T* out, std::int64_t rows, std::int64_t cols, bool transpose, std::uint64_t seed,
                                   float offset, float scale) {
  const std::int64_t n = rows * cols;
  for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; o < n;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    // Stored [cols, rows] when transposed: o = c * rows + r holds checkpoint element r * cols + c.
    const std::int64_t logical = transpose ? (o % rows) * cols + o / rows : o;
    out[o] = from_float<T>(init_value(seed, logical, offset, scale));
  }
}

template <typename T>
__global__ void fill_cache_kernel(T* k_cache, T* v_cache, int batch, int heads, int slots, int model_context,
                                  int length, std::uint64_t k_seed, std::uint64_t v_seed) {
  const std::int64_t n = std::int64_t(batch) * heads * length * kHeadDim;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int d = static_cast<int>(i % kHeadDim);
    const int t = static_cast<int>((i / kHeadDim) % length);
    const std::int64_t bh = i / (std::int64_t(kHeadDim) * length);
    const std::int64_t logical = (bh * model_context + t) * kHeadDim + d;
    const std::int64_t slot = (bh * slots + t) * kHeadDim + d;
    k_cache[slot] = from_float<T>(uniform(k_seed, logical));
    v_cache[slot] = from_float<T>(uniform(v_seed, logical));
  }
}

int grid_for(std::int64_t n) { return static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65536)); }

// ---- embeddings -----------------------------------------------------------------------------

template <typename W>
__global__ void embed_kernel(const int* tokens, const int* positions, const W* wte, const W* wpe, float* x,
                             int width) {
  pdl_launch_dependents();
  pdl_wait();
  const int b = blockIdx.x;
  const std::int64_t token = tokens[b], pos = positions[b];
  for (int c = threadIdx.x; c < width; c += blockDim.x)
    x[std::int64_t(b) * width + c] = to_float(wte[token * width + c]) + to_float(wpe[pos * width + c]);
}

// ---- GEMV: y[b, n] = sum_k in[b, k] * W[n, k], batch <= 8 ---------------------------------------
//
// A block owns a contiguous range of rows (so one bulk prefetch covers its weights); each warp
// takes two rows at a time, its lanes streaming 16-byte pieces of both rows, four pieces per lane
// in flight per row. The (optionally layer-normalised) inputs sit in shared memory as fp32.

constexpr int kGemvThreads = 256;
constexpr int kGemvWarps = kGemvThreads / 32;
constexpr int kRowsPerWarp = 2;
constexpr int kUnroll = 4;
constexpr unsigned kPrefetchBytesPerBlock = 64 * 1024;

template <typename W, int MAXB, GemvEpilogue EPI, bool LN>
__global__ void __launch_bounds__(kGemvThreads) gemv_kernel(GemvArgs a) {
  extern __shared__ __align__(16) float staged[];  // [batch][k]
  __shared__ float stats[MAXB][2];
  __shared__ float warp_best[kGemvWarps][MAXB];
  __shared__ int warp_best_index[kGemvWarps][MAXB];
  __shared__ bool last_block;
  constexpr int VEC = 16 / sizeof(W);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int k = a.k, batch = a.batch;
  const int rows_per_block = (a.n + gridDim.x - 1) / gridDim.x;
  const int row_begin = min(a.n, static_cast<int>(blockIdx.x) * rows_per_block);
  const int row_end = min(a.n, row_begin + rows_per_block);
  const W* w = static_cast<const W*>(a.weight);

  const int chunks = k / VEC;
  const int first_row = row_begin + warp * kRowsPerWarp;
  // The weights never depend on the previous kernel: start fetching them before waiting for it.
  // The block's rows go to the L2 in bulk, and each warp's first rows straight into registers.
  pdl_launch_dependents();
  if (threadIdx.x == 0 && row_end > row_begin) {
    const std::size_t bytes = std::size_t(row_end - row_begin) * k * sizeof(W);
    prefetch_l2(w + std::size_t(row_begin) * k,
                static_cast<unsigned>(bytes < kPrefetchBytesPerBlock ? bytes : kPrefetchBytesPerBlock));
  }
  uint4 wv[kRowsPerWarp][kUnroll];
  auto load_group = [&](int row, int c0) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + u * 32;
        wv[r][u] = (row + r < row_end && c < chunks) ? load_stream(w + std::size_t(row + r) * k + c * VEC)
                                                      : make_uint4(0, 0, 0, 0);
      }
  };
  if (first_row < row_end) load_group(first_row, lane);
  pdl_wait();

  // Stage the inputs (layer-normalised when asked) as fp32.
  if constexpr (LN) {
    const float* x = static_cast<const float*>(a.input);
    for (int i = threadIdx.x; i < batch * k; i += kGemvThreads) staged[i] = x[i];
    __syncthreads();
    if (warp < batch) {  // one warp per sequence
      const float2 st = warp_row_stats(staged + warp * k, k, a.eps);
      if (lane == 0) {
        stats[warp][0] = st.x;
        stats[warp][1] = st.y;
      }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < batch * k; i += kGemvThreads) {
      const int b = i / k, c = i - b * k;
      staged[i] = (staged[i] - stats[b][0]) * stats[b][1] * a.gamma[c] + a.beta[c];
    }
  } else {
    const W* in = static_cast<const W*>(a.input);
    for (int i = threadIdx.x; i < batch * k; i += kGemvThreads) staged[i] = to_float(in[i]);
  }
  __syncthreads();

  float best[MAXB];
  int best_index[MAXB];
#pragma unroll
  for (int b = 0; b < MAXB; ++b) {
    best[b] = -INFINITY;
    best_index[b] = 0x7fffffff;
  }

  for (int row = first_row; row < row_end; row += kGemvWarps * kRowsPerWarp) {
    float acc[kRowsPerWarp][MAXB];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
      for (int b = 0; b < MAXB; ++b) acc[r][b] = 0.0f;

    for (int c0 = lane; c0 < chunks; c0 += 32 * kUnroll) {
      if (row != first_row || c0 != lane) load_group(row, c0);  // the first group is already in registers
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + u * 32;
        if (c >= chunks) break;
        gemv_chunk<W>([&](int r) { return wv[r][u]; }, staged, k, c, batch, acc);
      }
    }

#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
      for (int b = 0; b < MAXB; ++b) acc[r][b] = warp_sum(acc[r][b]);

#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int n = row + r;
      if (n >= row_end) break;
#pragma unroll
      for (int b = 0; b < MAXB; ++b) {
        if (b >= batch) break;
        const float v = acc[r][b];
        const std::size_t o = std::size_t(b) * a.n + n;
        if constexpr (EPI == GemvEpilogue::logits_argmax) {
          if (beats(v, n, best[b], best_index[b])) {
            best[b] = v;
            best_index[b] = n;
          }
        }
        if (lane != (r * MAXB + b) % 32) continue;  // spread the stores over the lanes
        if constexpr (EPI == GemvEpilogue::bias_f32) {
          static_cast<float*>(a.out)[o] = v + a.bias[n];
        } else if constexpr (EPI == GemvEpilogue::bias_gelu) {
          static_cast<W*>(a.out)[o] = from_float<W>(gelu_tanh(v + a.bias[n]));
        } else if constexpr (EPI == GemvEpilogue::bias_residual) {
          float* x = static_cast<float*>(a.out);
          x[o] = x[o] + v + a.bias[n];
        } else {
          static_cast<float*>(a.out)[o] = v;
        }
      }
    }
  }

  if constexpr (EPI == GemvEpilogue::logits_argmax) {
    // Block's best per sequence, then the last block to finish reduces all blocks' bests.
    if (lane == 0)
#pragma unroll
      for (int b = 0; b < MAXB; ++b) {
        warp_best[warp][b] = best[b];
        warp_best_index[warp][b] = best_index[b];
      }
    __syncthreads();
    if (threadIdx.x < batch) {
      const int b = threadIdx.x;
      float v = warp_best[0][b];
      int i = warp_best_index[0][b];
      for (int w2 = 1; w2 < kGemvWarps; ++w2)
        if (beats(warp_best[w2][b], warp_best_index[w2][b], v, i)) {
          v = warp_best[w2][b];
          i = warp_best_index[w2][b];
        }
      a.partial_values[blockIdx.x * batch + b] = v;
      a.partial_indices[blockIdx.x * batch + b] = i;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(a.counter, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    if (threadIdx.x < batch) {
      const int b = threadIdx.x;
      float v = -INFINITY;
      int i = 0x7fffffff;
      for (unsigned g = 0; g < gridDim.x; ++g) {
        const float gv = __ldcg(a.partial_values + g * batch + b);
        const int gi = __ldcg(a.partial_indices + g * batch + b);
        if (beats(gv, gi, v, i)) {
          v = gv;
          i = gi;
        }
      }
      a.next_tokens[b] = i;
    }
    if (threadIdx.x == 0) *a.counter = 0;  // ready for the next step (and the next graph replay)
  }
}

template <typename W, int MAXB, GemvEpilogue EPI, bool LN>
void set_gemv_smem() {
  RIDGE_CHECK(cudaFuncSetAttribute(gemv_kernel<W, MAXB, EPI, LN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   gemv_max_staged_floats * 4));
}

template <typename W, int MAXB>
void prepare_gemv_batch() {
  set_gemv_smem<W, MAXB, GemvEpilogue::bias_f32, true>();
  set_gemv_smem<W, MAXB, GemvEpilogue::bias_gelu, true>();
  set_gemv_smem<W, MAXB, GemvEpilogue::bias_residual, false>();
  set_gemv_smem<W, MAXB, GemvEpilogue::logits_argmax, true>();
}

template <typename W>
void prepare_gemv() {
  prepare_gemv_batch<W, 1>();
  prepare_gemv_batch<W, 2>();
  prepare_gemv_batch<W, 4>();
  prepare_gemv_batch<W, 8>();
}

template <typename W, int MAXB>
void gemv_dispatch_epilogue(const GemvArgs& a, int grid, std::size_t smem, const LaunchConfig& lc) {
  const bool ln = a.gamma != nullptr;
  switch (a.epilogue) {
    case GemvEpilogue::bias_f32:
      if (ln) return launch(gemv_kernel<W, MAXB, GemvEpilogue::bias_f32, true>, grid, kGemvThreads, smem, lc, a);
      break;
    case GemvEpilogue::bias_gelu:
      if (ln) return launch(gemv_kernel<W, MAXB, GemvEpilogue::bias_gelu, true>, grid, kGemvThreads, smem, lc, a);
      break;
    case GemvEpilogue::bias_residual:
      if (!ln) return launch(gemv_kernel<W, MAXB, GemvEpilogue::bias_residual, false>, grid, kGemvThreads, smem, lc, a);
      break;
    case GemvEpilogue::logits_argmax:
      if (ln) return launch(gemv_kernel<W, MAXB, GemvEpilogue::logits_argmax, true>, grid, kGemvThreads, smem, lc, a);
      break;
  }
  RIDGE_CHECK(cudaErrorNotSupported);  // a combination the decoder never asks for
}

template <typename W>
void gemv_dispatch(const GemvArgs& a, int grid, std::size_t smem, const LaunchConfig& lc) {
  if (a.batch <= 1) return gemv_dispatch_epilogue<W, 1>(a, grid, smem, lc);
  if (a.batch <= 2) return gemv_dispatch_epilogue<W, 2>(a, grid, smem, lc);
  if (a.batch <= 4) return gemv_dispatch_epilogue<W, 4>(a, grid, smem, lc);
  return gemv_dispatch_epilogue<W, 8>(a, grid, smem, lc);
}

// ---- layer norm (cuBLAS path) -----------------------------------------------------------------

template <typename W>
__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float eps, W* out,
                                  int width) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  pdl_launch_dependents();
  pdl_wait();
  const int b = blockIdx.x;
  float s = 0;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    row[c] = x[std::int64_t(b) * width + c];
    s += row[c];
  }
  const float mean = block_sum(s, scratch) / width;
  float v = 0;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    const float d = row[c] - mean;
    v += d * d;
  }
  const float rstd = 1.0f / sqrtf(block_sum(v, scratch) / width + eps);
  for (int c = threadIdx.x; c < width; c += blockDim.x)
    out[std::int64_t(b) * width + c] = from_float<W>((row[c] - mean) * rstd * gamma[c] + beta[c]);
}

// ---- attention over the cache ---------------------------------------------------------------
//
// Grid (splits, heads, batch), 128 threads. Each block scores its chunk of positions (a group of
// 64/VEC threads per key, 16-byte loads), takes a softmax within the chunk in fp32, and sums the
// values. With splits > 1 it leaves (unnormalised output, max, sum) and the last block of the
// (sequence, head) combines them (the split-K "flash decoding" scheme), so a batch of one still
// spreads its cache reads over many SMs.

constexpr int kAttentionThreads = 128;

template <typename W>
__global__ void __launch_bounds__(kAttentionThreads) attention_kernel(AttentionArgs a) {
  constexpr int D = kHeadDim;
  constexpr int VEC = 16 / sizeof(W);
  constexpr int TPK = D / VEC;                     // threads per key
  constexpr int GROUPS = kAttentionThreads / TPK;  // keys in flight per block
  extern __shared__ float scores[];                // [chunk]
  __shared__ float q[D], k_new[D], v_new[D];
  __shared__ float pv[GROUPS][D];
  __shared__ float scratch[kAttentionThreads / 32];
  __shared__ bool last_block;
  const int s = blockIdx.x, h = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int C = a.heads * D;
  const int begin = s * a.chunk;
  const std::size_t head_base = (std::size_t(b) * a.heads + h) * a.slots * D;
  W* k_cache = static_cast<W*>(a.k_cache) + head_base;
  W* v_cache = static_cast<W*>(a.v_cache) + head_base;

  pdl_launch_dependents();
  // Cached rows were written by earlier steps, not by the previous kernel: bring this block's
  // share into the L2 while waiting. The positions themselves are only read after the wait, so
  // the host's hint (prefetch_positions) bounds the range.
  if (tid == 0) {
    const int rows = min(a.chunk, a.prefetch_positions - begin);
    if (rows > 0) {
      prefetch_l2(k_cache + std::size_t(begin) * D, static_cast<unsigned>(rows * D * sizeof(W)));
      prefetch_l2(v_cache + std::size_t(begin) * D, static_cast<unsigned>(rows * D * sizeof(W)));
    }
  }
  pdl_wait();

  const int T = a.positions[b];  // cached tokens; this step's key and value go to slot T
  const int total = T + 1;
  const int end = min(total, begin + a.chunk);
  const float* qkv = a.qkv + std::size_t(b) * 3 * C;
  if (tid < D) {
    q[tid] = qkv[h * D + tid] * 0.125f;  // 1 / sqrt(64), exact
    // The new key and value as the cache stores them, so every split sees the same numbers.
    const W k = from_float<W>(qkv[C + h * D + tid]);
    const W v = from_float<W>(qkv[2 * C + h * D + tid]);
    k_new[tid] = to_float(k);
    v_new[tid] = to_float(v);
    if (begin <= T && T < end) {
      k_cache[std::size_t(T) * D + tid] = k;
      v_cache[std::size_t(T) * D + tid] = v;
    }
  }
  __syncthreads();

  float m = -INFINITY, l = 0.0f, o = 0.0f;
  const int count = end - begin;
  if (count > 0) {  // uniform across the block
    const int g = tid / TPK, t = tid % TPK;
    float qv[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) qv[e] = q[t * VEC + e];
    for (int j0 = begin; j0 < end; j0 += GROUPS) {  // same trip count for every thread: shuffles are safe
      const int j = j0 + g;
      float dot = 0.0f;
      if (j < end) {
        float kv[VEC];
        if (j == T) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) kv[e] = k_new[t * VEC + e];
        } else {
          unpack(*reinterpret_cast<const uint4*>(k_cache + std::size_t(j) * D + t * VEC), kv);
        }
#pragma unroll
        for (int e = 0; e < VEC; ++e) dot = fmaf(qv[e], kv[e], dot);
      }
#pragma unroll
      for (int offset = TPK / 2; offset > 0; offset >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      if (j < end && t == 0) scores[j - begin] = dot;
    }
    __syncthreads();
    float local = -INFINITY;
    for (int i = tid; i < count; i += kAttentionThreads) local = fmaxf(local, scores[i]);
    m = block_max(local, scratch);
    float sum = 0.0f;
    for (int i = tid; i < count; i += kAttentionThreads) {
      const float p = expf(scores[i] - m);
      scores[i] = p;
      sum += p;
    }
    l = block_sum(sum, scratch);  // its barriers also publish the probabilities
    float acc[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = 0.0f;
    for (int j = begin + g; j < end; j += GROUPS) {
      const float p = scores[j - begin];
      float vv[VEC];
      if (j == T) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) vv[e] = v_new[t * VEC + e];
      } else {
        unpack(*reinterpret_cast<const uint4*>(v_cache + std::size_t(j) * D + t * VEC), vv);
      }
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[e] = fmaf(p, vv[e], acc[e]);
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e) pv[g][t * VEC + e] = acc[e];
    __syncthreads();
    if (tid < D)
      for (int g2 = 0; g2 < GROUPS; ++g2) o += pv[g2][tid];
  }

  W* out = static_cast<W*>(a.out) + std::size_t(b) * C + h * D;
  if (a.splits == 1) {
    if (tid < D) out[tid] = from_float<W>(o / l);
    return;
  }
  float* all = a.partial + (std::size_t(b) * a.heads + h) * a.splits * (D + 2);
  float* mine = all + std::size_t(s) * (D + 2);
  if (tid < D) mine[tid] = o;
  if (tid == 0) {
    mine[D] = m;
    mine[D + 1] = l;
  }
  __threadfence();
  __syncthreads();
  unsigned* counter = a.counters + std::size_t(b) * a.heads + h;
  if (tid == 0) last_block = atomicAdd(counter, 1u) == static_cast<unsigned>(a.splits - 1);
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  if (tid < D) {
    float M = -INFINITY;
    for (int i = 0; i < a.splits; ++i) M = fmaxf(M, __ldcg(all + std::size_t(i) * (D + 2) + D));
    float L = 0.0f, O = 0.0f;
    for (int i = 0; i < a.splits; ++i) {
      const float mi = __ldcg(all + std::size_t(i) * (D + 2) + D);
      if (mi == -INFINITY) continue;  // an empty split (past this sequence's length)
      const float scale = expf(mi - M);
      L += scale * __ldcg(all + std::size_t(i) * (D + 2) + D + 1);
      O += scale * __ldcg(all + std::size_t(i) * (D + 2) + tid);
    }
    out[tid] = from_float<W>(O / L);
  }
  if (tid == 0) *counter = 0;
}

// ---- argmax (cuBLAS path) and advance -----------------------------------------------------------

__global__ void argmax_kernel(const float* logits, int vocab, int* next_tokens) {
  __shared__ float values[32];
  __shared__ int indices[32];
  pdl_launch_dependents();
  pdl_wait();
  const int b = blockIdx.x;
  const float* row = logits + std::size_t(b) * vocab;
  float v = -INFINITY;
  int i = 0x7fffffff;
  for (int c = threadIdx.x; c < vocab; c += blockDim.x)
    if (beats(row[c], c, v, i)) {
      v = row[c];
      i = c;
    }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, offset);
    const int oi = __shfl_xor_sync(0xffffffffu, i, offset);
    if (beats(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    values[warp] = v;
    indices[warp] = i;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (blockDim.x + 31) / 32; ++w)
      if (beats(values[w], indices[w], v, i)) {
        v = values[w];
        i = indices[w];
      }
    next_tokens[b] = i;
  }
}

__global__ void advance_kernel(int* tokens, int* positions, const int* next_tokens, int batch) {
  pdl_wait();
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < batch) {
    tokens[b] = next_tokens[b];
    positions[b] += 1;
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void prepare_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    prepare_gemv<float>();
    prepare_gemv<bf16>();
  });
}

void init_tensor(void* out, Elem elem, std::int64_t rows, std::int64_t cols, bool transpose, std::uint64_t seed,
                 float offset, float scale, cuda_stream stream) {
  const int grid = grid_for(rows * cols);
  if (elem == Elem::fp32)
    init_tensor_kernel<<<grid, 256, 0, stream>>>(static_cast<float*>(out), rows, cols, transpose, seed, offset, scale);
  else
    init_tensor_kernel<<<grid, 256, 0, stream>>>(static_cast<bf16*>(out), rows, cols, transpose, seed, offset, scale);
  RIDGE_CHECK_LAUNCH();
}

void fill_cache(void* k_cache, void* v_cache, Elem elem, int layer, int batch, int heads, int slots, int model_context,
                int length, std::uint64_t seed, cuda_stream stream) {
  if (length <= 0) return;
  const int grid = grid_for(std::int64_t(batch) * heads * length * kHeadDim);
  const std::uint64_t ks = cache_seed(seed, layer, false), vs = cache_seed(seed, layer, true);
  if (elem == Elem::fp32)
    fill_cache_kernel<<<grid, 256, 0, stream>>>(static_cast<float*>(k_cache), static_cast<float*>(v_cache), batch,
                                                heads, slots, model_context, length, ks, vs);
  else
    fill_cache_kernel<<<grid, 256, 0, stream>>>(static_cast<bf16*>(k_cache), static_cast<bf16*>(v_cache), batch,
                                                heads, slots, model_context, length, ks, vs);
  RIDGE_CHECK_LAUNCH();
}

void embed(const int* tokens, const int* positions, const void* wte, const void* wpe, Elem elem, float* x, int batch,
           int width, const LaunchConfig& lc) {
  if (elem == Elem::fp32)
    launch(embed_kernel<float>, batch, 256, 0, lc, tokens, positions, static_cast<const float*>(wte),
           static_cast<const float*>(wpe), x, width);
  else
    launch(embed_kernel<bf16>, batch, 256, 0, lc, tokens, positions, static_cast<const bf16*>(wte),
           static_cast<const bf16*>(wpe), x, width);
}

int gemv_grid(int n, int sm_count) {
  const int by_rows = (n + kGemvWarps * kRowsPerWarp - 1) / (kGemvWarps * kRowsPerWarp);
  const int at_least = std::min(sm_count, (n + kRowsPerWarp - 1) / kRowsPerWarp);  // use every SM when rows allow
  return std::max(1, std::min(std::max(by_rows, at_least), 2 * sm_count));
}

void gemv(const GemvArgs& args, Elem elem, int sm_count, const LaunchConfig& lc) {
  const int grid = gemv_grid(args.n, sm_count);
  const std::size_t smem = std::size_t(args.batch) * args.k * sizeof(float);
  if (elem == Elem::fp32)
    gemv_dispatch<float>(args, grid, smem, lc);
  else
    gemv_dispatch<bf16>(args, grid, smem, lc);
}

void layer_norm(const float* x, const float* gamma, const float* beta, float eps, void* out, Elem elem, int batch,
                int width, const LaunchConfig& lc) {
  const std::size_t smem = std::size_t(width) * sizeof(float);
  if (elem == Elem::fp32)
    launch(layer_norm_kernel<float>, batch, 256, smem, lc, x, gamma, beta, eps, static_cast<float*>(out), width);
  else
    launch(layer_norm_kernel<bf16>, batch, 256, smem, lc, x, gamma, beta, eps, static_cast<bf16*>(out), width);
}

void attention_partition(int batch, int heads, int slots, int sm_count, int& splits, int& chunk) {
  const int pairs = batch * heads;
  const int max_splits = std::max(1, (slots + 63) / 64);  // at least 64 positions per block
  splits = std::min(max_splits, std::max(1, (2 * sm_count + pairs - 1) / pairs));
  splits = std::max(splits, (slots + 8191) / 8192);  // scores of a chunk fit in 32 KiB of shared memory
  chunk = (slots + splits - 1) / splits;
  splits = (slots + chunk - 1) / chunk;  // no trailing empty splits
}

void attention(const AttentionArgs& args, Elem elem, const LaunchConfig& lc) {
  const dim3 grid(args.splits, args.heads, args.batch);
  const std::size_t smem = std::size_t(args.chunk) * sizeof(float);
  if (elem == Elem::fp32)
    launch(attention_kernel<float>, grid, kAttentionThreads, smem, lc, args);
  else
    launch(attention_kernel<bf16>, grid, kAttentionThreads, smem, lc, args);
}

void argmax(const float* logits, int batch, int vocab, int* next_tokens, const LaunchConfig& lc) {
  launch(argmax_kernel, batch, 1024, 0, lc, logits, vocab, next_tokens);
}

void advance(int* tokens, int* positions, const int* next_tokens, int batch, cuda_stream stream) {
  advance_kernel<<<(batch + 255) / 256, 256, 0, stream>>>(tokens, positions, next_tokens, batch);
  RIDGE_CHECK_LAUNCH();
}

}  // namespace ridge::gpt2
