// The fused GPT-2 decode step: the whole step in one persistent kernel (see kernels.hpp). No fmt
// here (nvcc's C++20 front end rejects it).
//
// One block per SM. A step is a chain of phases -- per layer: ln_1 + c_attn, attention, combine +
// attn.c_proj (+ residual), ln_2 + mlp.c_fc + GELU, mlp.c_proj (+ residual); then ln_f + LM head
// + argmax -- separated by a grid-wide barrier. Nothing a phase reads from memory other than its
// input activations depends on the step's data, so between arriving at a barrier and leaving it
// each warp already loads its first weight tile of the next phase into registers and the block
// copies the next phase's gamma/beta/bias into shared memory (cp.async).
//
// Measured on an H200 (GPT-2 small, bf16, batch 1, context 1024, graph replay): 0.320 ms/step
// against 0.382 for the 62-kernel chain. One extra empty barrier per phase adds ~1.1 us per
// barrier, so the 61 barriers are ~70 us of the step; the rest is each phase's chain of dependent
// latencies (L2 read of the inputs, layer norm, the product, the fence before the arrival), ~3-4 us
// per phase. A bulk L2 prefetch two phases ahead (FusedStepArgs::prefetch) made it slower (0.369).
//
// Data one block writes and another reads within the kernel goes through the L2 only
// (st.global.cg / ld.global.cg): the L1s are not coherent.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "measure/cuda/cuda_check.hpp"
#include "workloads/gpt2/cuda/device_common.cuh"
#include "workloads/gpt2/cuda/kernels.hpp"

namespace ridge::gpt2 {

namespace {

// 256 threads per block ran slower at every batch, dtype and preset (docs/decode-fused-step.md).
constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
// Weight rows per warp: the grid holds the same rows in registers whatever the block size.
constexpr int kRows = 1024 / kThreads;     // products over the width
constexpr int kProjRows = 512 / kThreads;  // mlp.c_proj, over the hidden width
constexpr int kSpan = fused_attention_span;          // cache positions per attention item
constexpr int kItemWarps = kSpan / 32;               // 32 positions per warp
constexpr int kItemsPerBlock = kWarps / kItemWarps;  // attention items a block runs at once
constexpr int kMaxPairs = 256;                       // batch * heads
constexpr int kMaxGroups = 8;                        // attention items per (sequence, head): 1024 slots
constexpr int kPartial = kHeadDim + 2;               // unnormalised output, max, sum

__host__ __device__ __forceinline__ int attention_groups(int slots) { return (slots + kSpan - 1) / kSpan; }

// ---- grid barrier ---------------------------------------------------------------------------

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A grid-wide barrier in two halves: every block arrives before any leaves, and writes before
// the arrival are visible after the wait (to L2-path reads). Between the halves a block may start
// loads that do not depend on the other blocks (the next phase's weights), so their latency hides
// behind the wait. `target` counts arrivals so far; the counter is reset at the kernel's exit.
// Measurement only (FusedStepArgs::timeline): thread 0 notes when the block reached a point.
__device__ __forceinline__ void mark(const FusedStepArgs& a, int phase, int point) {
  if (a.timeline == nullptr || threadIdx.x != 0 || phase < 0) return;
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  const long long cycles = clock64();
  const std::size_t phases = 5 * std::size_t(a.layer_count) + 1;
  unsigned long long* at = a.timeline + ((blockIdx.x * phases + phase) * fused_marks + point) * 2;
  at[0] = ns;
  at[1] = static_cast<unsigned long long>(cycles);
}

__device__ __forceinline__ void grid_arrive(const FusedStepArgs& a, unsigned& target, int phase) {
  target += gridDim.x;
  __syncthreads();  // also: nobody in the block still reads the shared parameters
  mark(a, phase, fused_mark_computed);
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(a.sync, 1u);
  }
  mark(a, phase, fused_mark_arrived);
}

__device__ __forceinline__ void grid_wait(const unsigned* counter, unsigned target) {
  if (threadIdx.x == 0)
    while (load_acquire(counter) < target) {
    }
  __syncthreads();
}

// Asynchronous 16-byte copies global -> shared (cp.async), waited for by cp_async_wait.
__device__ __forceinline__ void copy_async(float* shared, const float* global, int n) {  // n: multiple of 4
  for (int i = threadIdx.x * 4; i < n; i += kThreads * 4) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(shared + i));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(global + i) : "memory");
  }
}
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }

__device__ __forceinline__ void store_cg(float* p, float v) { __stcg(p, v); }
__device__ __forceinline__ void store_cg(bf16* p, float v) {
  const bf16 h = from_float<bf16>(v);
  __stcg(reinterpret_cast<unsigned short*>(p), *reinterpret_cast<const unsigned short*>(&h));
}

__device__ __forceinline__ void prefetch_vector(const float* v, int n) {
  prefetch_l2(v, static_cast<unsigned>((n * 4 + 15) / 16 * 16));
}

// ---- GEMV over the grid -----------------------------------------------------------------------
//
// Warp gw of TW takes rows (gw + i * TW) * RPW .. + RPW - 1, warps numbered across blocks first
// (gw = warp * grid + block), so even a short matrix spreads over every SM. Each warp's lane 0
// prefetches its own rows. Lanes stream 16-byte pieces (U per row in flight); inputs are fp32 in
// shared memory.

__device__ __forceinline__ int global_warp() { return (threadIdx.x >> 5) * gridDim.x + blockIdx.x; }

template <typename W, int RPW>
__device__ __forceinline__ bool prefetch_rows(const void* weight, int n, int k, int round) {
  const long first = (long(round) * gridDim.x * kWarps + global_warp()) * RPW;
  if (first >= n) return false;
  const int count = static_cast<int>(min(long(n), first + RPW) - first);
  prefetch_l2(static_cast<const W*>(weight) + first * k, static_cast<unsigned>(std::size_t(count) * k * sizeof(W)));
  return true;
}

template <typename W, int RPW>
__device__ __forceinline__ void prefetch_all_rows(const void* weight, int n, int k) {
  for (int round = 0; prefetch_rows<W, RPW>(weight, n, k, round); ++round) {
  }
}

struct NoHook {
  __device__ void operator()(int) const {}
};

// One warp's weights in flight: U 16-byte pieces of each of RPW rows, per lane.
template <typename W, int RPW, int U>
struct Tile {
  uint4 v[RPW][U];
};

template <typename W, int RPW, int U>
__device__ __forceinline__ void load_tile(Tile<W, RPW, U>& t, const void* weight, int n, int k, int row, int c0) {
  constexpr int VEC = 16 / sizeof(W);
  const W* w = static_cast<const W*>(weight);
  const int chunks = k / VEC;
#pragma unroll
  for (int r = 0; r < RPW; ++r)
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = c0 + u * 32;
      t.v[r][u] = (row + r < n && c < chunks) ? load_stream(w + std::size_t(row + r) * k + c * VEC)
                                               : make_uint4(0, 0, 0, 0);
    }
}

// The warp's first tile of a product (round 0, first pieces): issued before the phase starts.
template <typename W, int RPW, int U>
__device__ __forceinline__ void preload_tile(Tile<W, RPW, U>& t, const void* weight, int n, int k) {
  load_tile(t, weight, n, k, global_warp() * RPW, threadIdx.x & 31);
}

// out[b, row] = staged[b, :] . W[row, :] (+ bias[row]) for this warp's rows; `tile` holds the
// first tile (preload_tile). PIPE: load the next round's tile before using this one (rows that
// fit one tile, as the LM head's). `residual` ([batch][n], may be null): added to the value the
// storing lane gets; read before the product, so its L2 round trip hides behind it.
template <typename W, int MAXB, int RPW, int U, bool PIPE, typename Epilogue, typename Hook = NoHook>
__device__ __forceinline__ void gemv_rows(const void* weight, int n, int k, int batch, const float* staged,
                                          const float* bias, Tile<W, RPW, U>& tile, Epilogue&& epilogue,
                                          Hook&& hook = NoHook{}, const float* residual = nullptr) {
  static_assert(RPW * MAXB <= 32, "one output per storing lane");
  constexpr int VEC = 16 / sizeof(W);
  const int lane = threadIdx.x & 31;
  const int tw = gridDim.x * kWarps, gw = global_warp();
  const int chunks = k / VEC;
  const bool single = chunks <= 32 * U;
  int round = 0;
  for (int row = gw * RPW; row < n; row += tw * RPW, ++round) {
    if (lane == 0) hook(round);
    const int next_row = row + tw * RPW;
    Tile<W, RPW, U> next;
    if constexpr (PIPE)
      if (single && next_row < n) load_tile(next, weight, n, k, next_row, lane);
    float resid = 0.0f;  // the storing lane's: output (lane / MAXB, lane % MAXB)
    if (residual != nullptr && lane / MAXB < RPW && lane % MAXB < batch && row + lane / MAXB < n)
      resid = __ldcg(residual + std::size_t(lane % MAXB) * n + row + lane / MAXB);
    float acc[RPW][MAXB];
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
      for (int b = 0; b < MAXB; ++b) acc[r][b] = 0.0f;
    for (int c0 = lane; c0 < chunks; c0 += 32 * U) {
      if (c0 != lane) load_tile(tile, weight, n, k, row, c0);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int c = c0 + u * 32;
        if (c >= chunks) break;
        gemv_chunk<W>([&](int r) { return tile.v[r][u]; }, staged, k, c, batch, acc);
      }
    }
    if (next_row < n) {
      if constexpr (PIPE) {
        if (single)
          tile = next;
        else
          load_tile(tile, weight, n, k, next_row, lane);
      } else {
        load_tile(tile, weight, n, k, next_row, lane);
      }
    }
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
      for (int b = 0; b < MAXB; ++b) acc[r][b] = warp_sum(acc[r][b]);
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      if (row + r >= n) break;
      const float add = bias ? bias[row + r] : 0.0f;
#pragma unroll
      for (int b = 0; b < MAXB; ++b) {
        if (b >= batch) break;
        const bool store = lane == r * MAXB + b;
        epilogue(row + r, b, acc[r][b] + add + (store ? resid : 0.0f), store);
      }
    }
  }
}

// ---- staging the inputs of a product ----------------------------------------------------------

// staged[b, :] = layer_norm(src[b, :]) for the residual stream (or, in layer 0, the embeddings,
// which block 0 also writes to the residual stream).
template <typename W, int MAXB>
__device__ void stage_layer_norm(const FusedStepArgs& a, const float* gamma, const float* beta, bool embed,
                                 const int* tokens, const int* positions, float* staged, float (*stats)[2]) {
  const int k = a.width, n = a.batch * k;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  cp_async_wait();  // this phase's parameters (published by the barriers below)
  if (embed) {
    const W* wte = static_cast<const W*>(a.wte);
    const W* wpe = static_cast<const W*>(a.wpe);
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const int b = i / k, c = i - b * k;
      const float v = to_float(wte[std::size_t(tokens[b]) * k + c]) + to_float(wpe[std::size_t(positions[b]) * k + c]);
      staged[i] = v;
      if (blockIdx.x == 0) __stcg(a.x + i, v);
    }
  } else {
    for (int i = threadIdx.x; i < n; i += kThreads) staged[i] = __ldcg(a.x + i);
  }
  __syncthreads();
  if constexpr (MAXB == 1) {
    // One sequence: statistics over the whole block (each warp its share, warp 0 adds the 16 warp
    // sums). One warp walking all the values took ~1 us of every layer-norm stage on the H200
    // (docs/decode-fused-step.md); with more sequences a warp per sequence is faster.
    __shared__ float warp_part[kWarps];
    auto block_total = [&](float v) {  // the block's sum, in warp 0 lane 0
      v = warp_sum(v);
      if (lane == 0) warp_part[warp] = v;
      __syncthreads();
      return warp == 0 ? warp_sum(lane < kWarps ? warp_part[lane] : 0.0f) : 0.0f;
    };
    float part = 0.0f;
    for (int c = threadIdx.x; c < k; c += kThreads) part += staged[c];
    const float sum = block_total(part);
    if (threadIdx.x == 0) stats[0][0] = sum / k;
    __syncthreads();
    part = 0.0f;
    for (int c = threadIdx.x; c < k; c += kThreads) {
      const float d = staged[c] - stats[0][0];
      part += d * d;
    }
    const float squares = block_total(part);
    if (threadIdx.x == 0) stats[0][1] = 1.0f / sqrtf(squares / k + a.eps);
    __syncthreads();
  } else {
    if (warp < a.batch) {  // one warp per sequence
      const float2 st = warp_row_stats(staged + warp * k, k, a.eps);
      if (lane == 0) {
        stats[warp][0] = st.x;
        stats[warp][1] = st.y;
      }
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const int b = i / k, c = i - b * k;
    staged[i] = (staged[i] - stats[b][0]) * stats[b][1] * gamma[c] + beta[c];
  }
  __syncthreads();
}

// staged = the MLP activations (model element type) as fp32.
template <typename W>
__device__ void stage_activations(const void* act, int n, float* staged) {
  constexpr int VEC = 16 / sizeof(W);
  const uint4* src = static_cast<const uint4*>(act);
  cp_async_wait();
  for (int i = threadIdx.x; i < n / VEC; i += kThreads) {
    float f[VEC];
    unpack(__ldcg(src + i), f);
#pragma unroll
    for (int e = 0; e < VEC; ++e) staged[i * VEC + e] = f[e];
  }
  __syncthreads();
}

// staged[b, h*64 + d] = attention output: the items' partial results combined (flash decoding),
// rounded to the model element type as an unfused kernel would store it.
template <typename W>
__device__ void stage_attention(const FusedStepArgs& a, const int* positions, float* staged,
                                float (*scale)[kMaxGroups]) {
  const int H = a.heads, groups = attention_groups(a.slots), C = a.width;
  cp_async_wait();
  for (int bh = threadIdx.x; bh < a.batch * H; bh += kThreads) {
    const int used = positions[bh / H] / kSpan + 1;
    const float* part = a.attn_partial + std::size_t(bh) * groups * kPartial;
    float m[kMaxGroups], l[kMaxGroups];
    float M = -INFINITY;
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) {
      m[g] = g < used ? __ldcg(part + g * kPartial + kHeadDim) : -INFINITY;
      l[g] = g < used ? __ldcg(part + g * kPartial + kHeadDim + 1) : 0.0f;
      M = fmaxf(M, m[g]);
    }
    float L = 0.0f;
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) {
      m[g] = g < used ? expf(m[g] - M) : 0.0f;
      L += m[g] * l[g];
    }
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) scale[bh][g] = m[g] / L;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < a.batch * C; i += kThreads) {
    const int b = i / C, c = i - b * C, bh = b * H + c / kHeadDim, d = c % kHeadDim;
    const int used = positions[b] / kSpan + 1;
    const float* part = a.attn_partial + std::size_t(bh) * groups * kPartial + d;
    float o[kMaxGroups];
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) o[g] = g < used ? __ldcg(part + g * kPartial) : 0.0f;
    float out = 0.0f;
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) out = fmaf(scale[bh][g], o[g], out);
    staged[i] = to_float(from_float<W>(out));
  }
  __syncthreads();
}

// ---- attention --------------------------------------------------------------------------------
//
// Items (sequence, head, group of kSpan positions); a block runs kItemsPerBlock items at once, one
// per kItemWarps warps, each warp over 32 positions (TPK lanes per key, 16-byte loads, all keys
// in flight at once). Warps combine in shared memory; items leave (output, max, sum) for the
// next phase to combine. The item holding position T (the new token) stores the new key/value.

template <typename W>
__device__ void attention_phase(const FusedStepArgs& a, int layer, const int* positions,
                                float (*wpart)[kItemWarps][kPartial]) {
  constexpr int VEC = 16 / sizeof(W);
  constexpr int TPK = kHeadDim / VEC;  // lanes per key
  constexpr int KPI = 32 / TPK;        // keys per warp-wide load
  constexpr int NI = 32 / KPI;         // loads per lane for the warp's 32 keys
  constexpr bool kValuesEarly = sizeof(W) == 2;
  const int H = a.heads, C = a.width, groups = attention_groups(a.slots);
  const int items = a.batch * H * groups;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int sub = warp / kItemWarps, wi = warp % kItemWarps;
  const int t = lane % TPK, kg = lane / TPK;
  W* k_cache = static_cast<W*>(a.k_cache) + a.cache_layer_elements * layer;
  W* v_cache = static_cast<W*>(a.v_cache) + a.cache_layer_elements * layer;

  for (int base = 0; base < items; base += kItemsPerBlock * gridDim.x) {  // uniform over the block
    const int item = base + sub * gridDim.x + blockIdx.x;
    bool live = false;
    int bh = 0, g = 0, T = 0;
    float m = -INFINITY, l = 0.0f, o[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) o[e] = 0.0f;
    if (item < items) {
      bh = item / groups;
      g = item - bh * groups;
      const int b = bh / H, h = bh - b * H;
      T = positions[b];
      live = g * kSpan <= T;
      const int begin = g * kSpan + wi * 32;
      if (live && begin <= T) {
        const std::size_t head = std::size_t(bh) * a.slots * kHeadDim;
        const float* q = a.qkv + std::size_t(b) * 3 * C + h * kHeadDim + t * VEC;
        uint4 kr[NI], vr[kValuesEarly ? NI : 1];
#pragma unroll
        for (int i = 0; i < NI; ++i) {
          const int j = begin + kg + i * KPI;
          kr[i] = j < T ? load_stream(k_cache + head + std::size_t(j) * kHeadDim + t * VEC) : make_uint4(0, 0, 0, 0);
        }
        if constexpr (kValuesEarly) {
#pragma unroll
          for (int i = 0; i < NI; ++i) {
            const int j = begin + kg + i * KPI;
            vr[i] = j < T ? load_stream(v_cache + head + std::size_t(j) * kHeadDim + t * VEC) : make_uint4(0, 0, 0, 0);
          }
        }
        float qv[VEC], kn[VEC], vn[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          qv[e] = __ldcg(q + e) * 0.125f;  // 1 / sqrt(64), exact
          // The new key and value as the cache stores them.
          kn[e] = to_float(from_float<W>(__ldcg(q + C + e)));
          vn[e] = to_float(from_float<W>(__ldcg(q + 2 * C + e)));
        }
        float s[NI];
#pragma unroll
        for (int i = 0; i < NI; ++i) {
          const int j = begin + kg + i * KPI;
          float kf[VEC];
          unpack(kr[i], kf);
          float dot = 0.0f;
#pragma unroll
          for (int e = 0; e < VEC; ++e) dot = fmaf(qv[e], j == T ? kn[e] : kf[e], dot);
#pragma unroll
          for (int off = TPK / 2; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
          s[i] = j <= T ? dot : -INFINITY;
          m = fmaxf(m, s[i]);
        }
#pragma unroll
        for (int off = TPK; off < 32; off <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        // m is finite: position `begin` <= T is in this warp's range.
#pragma unroll
        for (int i = 0; i < NI; ++i) {
          const int j = begin + kg + i * KPI;
          const float p = expf(s[i] - m);  // 0 past T
          l += p;
          uint4 raw;
          if constexpr (kValuesEarly)
            raw = vr[i];
          else
            raw = j < T ? load_stream(v_cache + head + std::size_t(j) * kHeadDim + t * VEC) : make_uint4(0, 0, 0, 0);
          float vf[VEC];
          unpack(raw, vf);
#pragma unroll
          for (int e = 0; e < VEC; ++e) o[e] = fmaf(p, j == T ? vn[e] : vf[e], o[e]);
        }
#pragma unroll
        for (int off = TPK; off < 32; off <<= 1) {
          l += __shfl_xor_sync(0xffffffffu, l, off);
#pragma unroll
          for (int e = 0; e < VEC; ++e) o[e] += __shfl_xor_sync(0xffffffffu, o[e], off);
        }
        if (begin <= T && T < begin + 32 && kg == 0) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            k_cache[head + std::size_t(T) * kHeadDim + t * VEC + e] = from_float<W>(kn[e]);
            v_cache[head + std::size_t(T) * kHeadDim + t * VEC + e] = from_float<W>(vn[e]);
          }
        }
      }
    }
    if (kg == 0)
#pragma unroll
      for (int e = 0; e < VEC; ++e) wpart[sub][wi][t * VEC + e] = o[e];
    if (lane == 0) {
      wpart[sub][wi][kHeadDim] = m;
      wpart[sub][wi][kHeadDim + 1] = l;
    }
    __syncthreads();
    if (live && wi < 2) {  // 64 threads combine the item's warps
      const int d = wi * 32 + lane;
      float M = -INFINITY;
#pragma unroll
      for (int w = 0; w < kItemWarps; ++w) M = fmaxf(M, wpart[sub][w][kHeadDim]);
      float L = 0.0f, O = 0.0f;
#pragma unroll
      for (int w = 0; w < kItemWarps; ++w) {
        const float mw = wpart[sub][w][kHeadDim];
        if (mw == -INFINITY) continue;  // a warp past T
        const float f = expf(mw - M);
        L += f * wpart[sub][w][kHeadDim + 1];
        O += f * wpart[sub][w][d];
      }
      float* dst = a.attn_partial + (std::size_t(bh) * groups + g) * kPartial;
      __stcg(dst + d, O);
      if (d == 0) {
        __stcg(dst + kHeadDim, M);
        __stcg(dst + kHeadDim + 1, L);
      }
    }
    __syncthreads();
  }
}

template <typename W>
__device__ void prefetch_attention(const FusedStepArgs& a, int layer, const int* positions) {
  const int H = a.heads, groups = attention_groups(a.slots);
  const int items = a.batch * H * groups;
  const W* k_cache = static_cast<const W*>(a.k_cache) + a.cache_layer_elements * layer;
  const W* v_cache = static_cast<const W*>(a.v_cache) + a.cache_layer_elements * layer;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int bh = item / groups, g = item - bh * groups;
    const int rows = min(kSpan, positions[bh / H] - g * kSpan);
    if (rows <= 0) continue;
    const std::size_t at = (std::size_t(bh) * a.slots + std::size_t(g) * kSpan) * kHeadDim;
    const unsigned bytes = static_cast<unsigned>(rows * kHeadDim * sizeof(W));
    prefetch_l2(k_cache + at, bytes);
    prefetch_l2(v_cache + at, bytes);
  }
}

// Phase p: 5 * layer + {0: ln_1 + c_attn, 1: attention, 2: c_proj, 3: ln_2 + c_fc, 4: mlp c_proj};
// 5 * layers: the LM head (its first two rounds). Called by lane 0 of every warp: each asks for
// its own rows; warp 0 asks for the cache, and warp 0 of one block for the small vectors.
template <typename W>
__device__ void prefetch_phase(const FusedStepArgs& a, int phase, const int* positions) {
  const int C = a.width, F = a.hidden_dim;
  const bool vectors = threadIdx.x == 0 && blockIdx.x == static_cast<unsigned>(phase) % gridDim.x;
  if (phase >= 5 * a.layer_count) {
    if (phase != 5 * a.layer_count) return;
    prefetch_rows<W, kRows>(a.wte, a.vocab, C, 0);
    prefetch_rows<W, kRows>(a.wte, a.vocab, C, 1);
    if (vectors) {
      prefetch_vector(a.lnf_w, C);
      prefetch_vector(a.lnf_b, C);
    }
    return;
  }
  const FusedLayer& w = a.layers[phase / 5];
  switch (phase % 5) {
    case 0:
      prefetch_all_rows<W, 2>(w.attn_w, 3 * C, C);
      if (vectors) {
        prefetch_vector(w.ln1_w, C);
        prefetch_vector(w.ln1_b, C);
        prefetch_vector(w.attn_b, 3 * C);
      }
      break;
    case 1:
      if (threadIdx.x == 0) prefetch_attention<W>(a, phase / 5, positions);
      break;
    case 2:
      prefetch_all_rows<W, 2>(w.attn_proj_w, C, C);
      if (vectors) prefetch_vector(w.attn_proj_b, C);
      break;
    case 3:
      prefetch_all_rows<W, 2>(w.fc_w, F, C);
      if (vectors) {
        prefetch_vector(w.ln2_w, C);
        prefetch_vector(w.ln2_b, C);
        prefetch_vector(w.fc_b, F);
      }
      break;
    default:
      prefetch_all_rows<W, 1>(w.fc_proj_w, C, F);
      if (vectors) prefetch_vector(w.fc_proj_b, C);
      break;
  }
}

// ---- the step ---------------------------------------------------------------------------------

template <typename W, int MAXB>
__global__ void __launch_bounds__(kThreads, 1) fused_step_kernel(FusedStepArgs a) {
  // Dynamic shared memory: staged inputs [batch][max(width, hidden)], then the phase's small
  // parameters: gamma [width], beta [width], bias [max(3 width, hidden)].
  extern __shared__ __align__(16) float staged[];
  __shared__ float stats[MAXB][2];
  __shared__ int tokens[MAXB], positions[MAXB];
  __shared__ float wpart[kItemsPerBlock][kItemWarps][kPartial];
  __shared__ float scale[kMaxPairs][kMaxGroups];
  __shared__ float warp_best[kWarps][MAXB];
  __shared__ int warp_best_index[kWarps][MAXB];
  __shared__ bool last_block;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int C = a.width, F = a.hidden_dim, B = a.batch, V = a.vocab;
  float* gamma = staged + std::size_t(B) * max(C, F);
  float* beta = gamma + C;
  float* bias = beta + C;
  unsigned target = 0;
  Tile<W, kRows, 4> tile;        // products over the width (c_attn, attn.c_proj, mlp.c_fc, LM head)
  Tile<W, kProjRows, 12> tile_proj;  // mlp.c_proj, over the hidden width

  if (threadIdx.x < B) {
    tokens[threadIdx.x] = a.tokens[threadIdx.x];
    positions[threadIdx.x] = a.positions[threadIdx.x];
  }
  {
    const FusedLayer& w0 = a.layers[0];
    preload_tile(tile, w0.attn_w, 3 * C, C);
    copy_async(gamma, w0.ln1_w, C);
    copy_async(beta, w0.ln1_b, C);
    copy_async(bias, w0.attn_b, 3 * C);
  }
  __syncthreads();
  if (lane == 0 && a.prefetch) {
    prefetch_phase<W>(a, 0, positions);
    prefetch_phase<W>(a, 1, positions);
  }

  mark(a, 0, fused_mark_start);
  for (int layer = 0; layer < a.layer_count; ++layer) {
    const FusedLayer w = a.layers[layer];
    const int p0 = 5 * layer;

    // ln_1 + c_attn: qkv = ln(x) @ W^T + b
    if (lane == 0 && a.prefetch) prefetch_phase<W>(a, p0 + 2, positions);
    stage_layer_norm<W, MAXB>(a, gamma, beta, layer == 0, tokens, positions, staged, stats);
    mark(a, p0, fused_mark_staged);
    gemv_rows<W, MAXB, kRows, 4, false>(w.attn_w, 3 * C, C, B, staged, bias, tile, [&](int n, int b, float v, bool store) {
      if (store) __stcg(a.qkv + std::size_t(b) * 3 * C + n, v);
    });
    grid_arrive(a, target, p0);
    grid_wait(a.sync, target);

    // attention over the cache (+ this token's key and value)
    mark(a, p0 + 1, fused_mark_start);
    if (lane == 0 && a.prefetch) prefetch_phase<W>(a, p0 + 3, positions);
    attention_phase<W>(a, layer, positions, wpart);
    grid_arrive(a, target, p0 + 1);
    preload_tile(tile, w.attn_proj_w, C, C);
    copy_async(bias, w.attn_proj_b, C);
    grid_wait(a.sync, target);

    // combine + attn.c_proj: x += attn @ W^T + b
    mark(a, p0 + 2, fused_mark_start);
    if (lane == 0 && a.prefetch) prefetch_phase<W>(a, p0 + 4, positions);
    stage_attention<W>(a, positions, staged, scale);
    mark(a, p0 + 2, fused_mark_staged);
    gemv_rows<W, MAXB, kRows, 4, false>(
        w.attn_proj_w, C, C, B, staged, bias, tile,
        [&](int n, int b, float v, bool store) {
          if (store) __stcg(a.x + std::size_t(b) * C + n, v);
        },
        NoHook{}, a.x);
    grid_arrive(a, target, p0 + 2);
    preload_tile(tile, w.fc_w, F, C);
    copy_async(gamma, w.ln2_w, C);
    copy_async(beta, w.ln2_b, C);
    copy_async(bias, w.fc_b, F);
    grid_wait(a.sync, target);

    // ln_2 + mlp.c_fc + GELU
    mark(a, p0 + 3, fused_mark_start);
    if (lane == 0 && a.prefetch) prefetch_phase<W>(a, p0 + 5, positions);
    stage_layer_norm<W, MAXB>(a, gamma, beta, false, tokens, positions, staged, stats);
    mark(a, p0 + 3, fused_mark_staged);
    gemv_rows<W, MAXB, kRows, 4, false>(w.fc_w, F, C, B, staged, bias, tile, [&](int n, int b, float v, bool store) {
      if (store) store_cg(static_cast<W*>(a.hidden) + std::size_t(b) * F + n, gelu_tanh(v));
    });
    grid_arrive(a, target, p0 + 3);
    preload_tile(tile_proj, w.fc_proj_w, C, F);
    copy_async(bias, w.fc_proj_b, C);
    grid_wait(a.sync, target);

    // mlp.c_proj: x += h @ W^T + b
    mark(a, p0 + 4, fused_mark_start);
    if (lane == 0 && a.prefetch) prefetch_phase<W>(a, p0 + 6, positions);
    stage_activations<W>(a.hidden, B * F, staged);
    mark(a, p0 + 4, fused_mark_staged);
    gemv_rows<W, MAXB, kProjRows, 12, false>(
        w.fc_proj_w, C, F, B, staged, bias, tile_proj,
        [&](int n, int b, float v, bool store) {
          if (store) __stcg(a.x + std::size_t(b) * C + n, v);
        },
        NoHook{}, a.x);
    grid_arrive(a, target, p0 + 4);
    if (layer + 1 < a.layer_count) {
      const FusedLayer& next = a.layers[layer + 1];
      preload_tile(tile, next.attn_w, 3 * C, C);
      copy_async(gamma, next.ln1_w, C);
      copy_async(beta, next.ln1_b, C);
      copy_async(bias, next.attn_b, 3 * C);
    } else {
      preload_tile(tile, a.wte, V, C);
      copy_async(gamma, a.lnf_w, C);
      copy_async(beta, a.lnf_b, C);
    }
    grid_wait(a.sync, target);
    mark(a, p0 + 5, fused_mark_start);
  }

  // ln_f + LM head (tied to wte) + greedy argmax
  const int head_phase = 5 * a.layer_count;
  stage_layer_norm<W, MAXB>(a, gamma, beta, a.layer_count == 0, tokens, positions, staged, stats);
  mark(a, head_phase, fused_mark_staged);
  float best[MAXB];
  int best_index[MAXB];
#pragma unroll
  for (int b = 0; b < MAXB; ++b) {
    best[b] = -INFINITY;
    best_index[b] = 0x7fffffff;
  }
  gemv_rows<W, MAXB, kRows, 4, true>(
      a.wte, V, C, B, staged, nullptr, tile,
      [&](int n, int b, float v, bool store) {
        if (beats(v, n, best[b], best_index[b])) {
          best[b] = v;
          best_index[b] = n;
        }
        if (store) __stcg(a.logits + std::size_t(b) * V + n, v);
      },
      [&](int round) {
        if (a.prefetch) prefetch_rows<W, kRows>(a.wte, V, C, round + 2);
      });
  if (lane == 0)
#pragma unroll
    for (int b = 0; b < MAXB; ++b) {
      warp_best[warp][b] = best[b];
      warp_best_index[warp][b] = best_index[b];
    }
  __syncthreads();
  if (threadIdx.x < B) {
    const int b = threadIdx.x;
    float v = warp_best[0][b];
    int i = warp_best_index[0][b];
    for (int w2 = 1; w2 < kWarps; ++w2)
      if (beats(warp_best[w2][b], warp_best_index[w2][b], v, i)) {
        v = warp_best[w2][b];
        i = warp_best_index[w2][b];
      }
    __stcg(a.best_values + blockIdx.x * B + b, v);
    __stcg(a.best_indices + blockIdx.x * B + b, i);
  }
  __threadfence();
  __syncthreads();
  mark(a, head_phase, fused_mark_computed);
  // Every block has passed every barrier once it gets here: the last one may reset the counters.
  if (threadIdx.x == 0) last_block = atomicAdd(a.sync + 1, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  if (threadIdx.x < B) {
    const int b = threadIdx.x;
    float v = -INFINITY;
    int i = 0x7fffffff;
    for (unsigned g = 0; g < gridDim.x; ++g) {
      const float gv = __ldcg(a.best_values + g * B + b);
      const int gi = __ldcg(a.best_indices + g * B + b);
      if (beats(gv, gi, v, i)) {
        v = gv;
        i = gi;
      }
    }
    a.next_tokens[b] = i;
  }
  if (threadIdx.x == 0) {
    a.sync[0] = 0;
    a.sync[1] = 0;
  }
}

template <typename W, int MAXB>
int fused_blocks_per_sm(std::size_t smem) {
  auto kernel = fused_step_kernel<W, MAXB>;
  RIDGE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  int blocks = 0;
  RIDGE_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, smem));
  return blocks;
}

template <typename W>
int fused_blocks_per_sm(int batch, std::size_t smem) {
  if (batch <= 1) return fused_blocks_per_sm<W, 1>(smem);
  if (batch <= 2) return fused_blocks_per_sm<W, 2>(smem);
  if (batch <= 4) return fused_blocks_per_sm<W, 4>(smem);
  return fused_blocks_per_sm<W, 8>(smem);
}

template <typename W, int MAXB>
void launch_fused(const FusedStepArgs& a, int grid, std::size_t smem, cudaStream_t stream) {
  fused_step_kernel<W, MAXB><<<grid, kThreads, smem, stream>>>(a);
  RIDGE_CHECK_LAUNCH();
}

template <typename W>
void launch_fused(const FusedStepArgs& a, int grid, std::size_t smem, cudaStream_t stream) {
  if (a.batch <= 1) return launch_fused<W, 1>(a, grid, smem, stream);
  if (a.batch <= 2) return launch_fused<W, 2>(a, grid, smem, stream);
  if (a.batch <= 4) return launch_fused<W, 4>(a, grid, smem, stream);
  return launch_fused<W, 8>(a, grid, smem, stream);
}

std::size_t fused_smem(int batch, int width, int hidden_dim) {
  const std::size_t staged = std::size_t(batch) * std::max(width, hidden_dim);
  const std::size_t parameters = 2 * std::size_t(width) + std::max(3 * width, hidden_dim);
  return (staged + parameters) * sizeof(float);
}

}  // namespace

int fused_grid(Elem elem, int batch, int width, int heads, int hidden_dim, int slots, int sm_count) {
  if (batch < 1 || batch > gemv_max_batch || width != heads * kHeadDim || width % 8 != 0 || hidden_dim % 8 != 0 ||
      batch * heads > kMaxPairs || attention_groups(slots) > kMaxGroups)
    return 0;
  const std::size_t smem = fused_smem(batch, width, hidden_dim);
  // The opt-in limit per block differs by GPU (227 KiB on Hopper, 163 KiB on A100, 99 KiB on
  // consumer parts): asking for more would fail the attribute call below.
  int device = 0, smem_limit = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  RIDGE_CHECK(cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (smem > static_cast<std::size_t>(smem_limit)) return 0;
  const int per_sm = elem == Elem::fp32 ? fused_blocks_per_sm<float>(batch, smem) : fused_blocks_per_sm<bf16>(batch, smem);
  return per_sm >= 1 ? sm_count : 0;  // one block per SM: all resident, as the barrier needs
}

void fused_step(const FusedStepArgs& args, Elem elem, int grid, cuda_stream stream) {
  const std::size_t smem = fused_smem(args.batch, args.width, args.hidden_dim);
  if (elem == Elem::fp32)
    launch_fused<float>(args, grid, smem, stream);
  else
    launch_fused<bf16>(args, grid, smem, stream);
}

}  // namespace ridge::gpt2
