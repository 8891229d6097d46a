// The fused GPT-2 decode step: the whole step in one persistent kernel (see kernels.hpp). No fmt
// here (nvcc's C++20 front end rejects it).
//
// One block per SM. A step is a chain of phases -- per layer: ln_1 + c_attn, attention, combine +
// attn.c_proj (+ residual), ln_2 + mlp.c_fc + GELU, mlp.c_proj (+ residual); then ln_f + LM head
// + argmax. There is no grid-wide barrier: every value one block hands to another goes through a
// per-step exchange buffer as a 64-bit word (value, step number) written with one store, and the
// reader polls each word until it carries this step's number (the "LL" protocol of NCCL). A
// block thus waits only for the values it reads, one L2 round trip after they are written,
// instead of a barrier's fence + atomic + poll + re-read. Every (layer, phase) has its own slice
// of the buffer, so nothing is overwritten within a step; the step number tells this step's
// words from the last one's.
//
// Nothing a phase reads from memory other than its input activations depends on the step's data,
// so after its last store of a phase each warp loads its first weight tile of the next phase into
// registers and the block copies the next phase's gamma/beta/bias into shared memory (cp.async),
// before it waits for the inputs. attn.c_proj and mlp.c_proj (768 rows) run on the first blocks
// only (PACKED rows), so only those gather the attention partials and the MLP activations.
//
// Measured on an H200 (GPT-2 small, bf16, batch 1, context 1024, graph replay), the previous
// version, with a grid barrier between phases: 0.320 ms/step (one barrier ~1.1 us, the rest
// ~3-4 us per phase of dependent latencies).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "ridge/cuda_check.hpp"
#include "workloads/gpt2/device_common.cuh"
#include "workloads/gpt2/kernels.hpp"

namespace ridge::gpt2 {

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kSpan = fused_attention_span;          // cache positions per attention item
constexpr int kItemWarps = kSpan / 32;               // 32 positions per warp
constexpr int kItemsPerBlock = kWarps / kItemWarps;  // attention items a block runs at once
constexpr int kMaxPairs = 256;                       // batch * heads
constexpr int kMaxGroups = 8;                        // attention items per (sequence, head): 1024 slots
constexpr int kPartial = kHeadDim + 2;               // unnormalised output, max, sum

__host__ __device__ __forceinline__ int attention_groups(int slots) { return (slots + kSpan - 1) / kSpan; }

// ---- the exchange buffer (value, step) words ----------------------------------------------------

using Word = unsigned long long;

// This step's number, which every word written in it carries, and how readers poll.
struct Step {
  unsigned number;
  int spin_ns;         // back-off between polls of a word not yet written (0: none)
  int gather_threads;  // threads of a block that gather a vector (the rest wait at the barrier)
};

__device__ __forceinline__ void ll_store(Word* p, float v, const Step& step) {
  const Word word = (static_cast<Word>(step.number) << 32) | __float_as_uint(v);
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(word) : "memory");
}
__device__ __forceinline__ Word ll_peek(const Word* p) {
  Word w;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
  return w;
}
__device__ __forceinline__ bool ll_ready(Word w, const Step& step) {
  return static_cast<unsigned>(w >> 32) == step.number;
}
__device__ __forceinline__ float ll_value(Word w) { return __uint_as_float(static_cast<unsigned>(w)); }
__device__ __forceinline__ Word ll_ready_word(const Step& step) { return static_cast<Word>(step.number) << 32; }
// Waits for a word whose first read (`w`) was not yet of this step.
__device__ __forceinline__ float ll_settle(Word w, const Word* p, const Step& step) {
  while (!ll_ready(w, step)) {
    if (step.spin_ns > 0) __nanosleep(step.spin_ns);
    w = ll_peek(p);
  }
  return ll_value(w);
}

// dst[i] = the value of the word at(i) for this step, for i < n where at(i) is not null, read by
// the block's first step.gather_threads threads: U reads per thread in flight at once, then only
// the stragglers are read again. Fewer pollers leave the L2 and the issue slots to the producers.
template <int U, typename At>
__device__ void ll_gather_at(float* dst, int n, const Step& step, At&& at) {
  const int threads = min(step.gather_threads, kThreads);
  if (static_cast<int>(threadIdx.x) >= threads) return;
  for (int base = threadIdx.x; base < n; base += threads * U) {
    Word w[U];
    const Word* p[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = base + u * threads;
      p[u] = i < n ? at(i) : nullptr;
      w[u] = p[u] ? ll_peek(p[u]) : ll_ready_word(step);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (p[u]) dst[base + u * threads] = ll_settle(w[u], p[u], step);
  }
}

template <int U = 4>
__device__ void ll_gather(float* dst, const Word* src, int n, const Step& step) {
  ll_gather_at<U>(dst, n, step, [src](int i) { return src + i; });
}

// Where layer `layer`'s phases leave their outputs: [batch] rows of each.
struct Exchange {
  Word *qkv, *partial, *x_attn, *hidden, *x_out;
};

__host__ __device__ __forceinline__ std::size_t exchange_layer_words(int batch, int width, int heads, int hidden,
                                                                     int slots) {
  return std::size_t(batch) * (3 * width + heads * attention_groups(slots) * kPartial + width + hidden + width);
}

__device__ __forceinline__ Exchange exchange_of(const FusedStepArgs& a, int layer) {
  const int B = a.batch, C = a.width;
  Exchange e;
  e.qkv = a.exchange + exchange_layer_words(B, C, a.heads, a.hidden_dim, a.slots) * layer;
  e.partial = e.qkv + std::size_t(B) * 3 * C;
  e.x_attn = e.partial + std::size_t(B) * a.heads * attention_groups(a.slots) * kPartial;
  e.hidden = e.x_attn + std::size_t(B) * C;
  e.x_out = e.hidden + std::size_t(B) * a.hidden_dim;
  return e;
}

// Asynchronous 16-byte copies global -> shared (cp.async), waited for by cp_async_wait.
__device__ __forceinline__ void copy_async(float* shared, const float* global, int n) {  // n: multiple of 4
  for (int i = threadIdx.x * 4; i < n; i += kThreads * 4) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(shared + i));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(global + i) : "memory");
  }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits for this phase's copies: all of them, or (a.smem_tiles) all but the last group, which
// holds the next product's weights.
__device__ __forceinline__ void cp_async_wait(const FusedStepArgs& a) {
  if (a.smem_tiles)
    asm volatile("cp.async.wait_group 1;" ::: "memory");
  else
    asm volatile("cp.async.wait_all;" ::: "memory");
}


// ---- GEMV over the grid -----------------------------------------------------------------------
//
// Warp w of TW takes rows (w + i * TW) * RPW .. + RPW - 1. Spread: warps numbered across blocks
// first (w = warp * grid + block), so even a short matrix spreads over every SM. PACKED: numbered
// within blocks first (w = block * warps + warp), so a short matrix sits on the first blocks and
// the others need not gather its input. Lanes stream 16-byte pieces (U per row in flight); inputs
// are fp32 in shared memory.

template <bool PACKED>
__device__ __forceinline__ int warp_slot() {
  return PACKED ? blockIdx.x * kWarps + (threadIdx.x >> 5) : (threadIdx.x >> 5) * gridDim.x + blockIdx.x;
}

// Whether this block has rows of an n-row PACKED product (uniform over the block).
template <int RPW>
__device__ __forceinline__ bool block_has_rows(int n) {
  return long(blockIdx.x) * kWarps * RPW < n;
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
template <bool PACKED = false, typename W, int RPW, int U>
__device__ __forceinline__ void preload_tile(Tile<W, RPW, U>& t, const void* weight, int n, int k) {
  load_tile(t, weight, n, k, warp_slot<PACKED>() * RPW, threadIdx.x & 31);
}

// With a.smem_tiles, a warp's first tile of a product is copied into shared memory (cp.async,
// same entries as Tile, each lane its own) at the start of the phase before, so its latency hides
// behind a whole phase rather than behind the wait for the inputs only.
constexpr int kTileEntries = 2 * 4 * 32;   // uint4 of a Tile<W, 2, 4> per warp
constexpr int kProjEntries = 1 * 12 * 32;  // uint4 of a Tile<W, 1, 12> per warp
constexpr std::size_t kSmemTileBytes = std::size_t(kWarps) * (kTileEntries + kProjEntries) * 16;

template <bool PACKED, typename W, int RPW, int U>
__device__ __forceinline__ void stage_tile(uint4* buffer, const void* weight, int n, int k) {
  constexpr int VEC = 16 / sizeof(W);
  const int lane = threadIdx.x & 31, row = warp_slot<PACKED>() * RPW, chunks = k / VEC;
  const W* w = static_cast<const W*>(weight);
#pragma unroll
  for (int r = 0; r < RPW; ++r)
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = lane + u * 32;
      const bool valid = row + r < n && c < chunks;
      const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(buffer + (r * U + u) * 32 + lane));
      const W* src = valid ? w + std::size_t(row + r) * k + c * VEC : w;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(valid ? 16 : 0) : "memory");
    }
}

template <typename W, int RPW, int U>
__device__ __forceinline__ void take_tile(Tile<W, RPW, U>& t, const uint4* buffer) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < RPW; ++r)
#pragma unroll
    for (int u = 0; u < U; ++u) t.v[r][u] = buffer[(r * U + u) * 32 + lane];
}

// out[b, row] = staged[b, :] . W[row, :] (+ bias[row]) for this warp's rows; `tile` holds the
// first tile (preload_tile). PIPE: load the next round's tile before using this one (rows that
// fit one tile, as the LM head's).
template <typename W, int MAXB, int RPW, int U, bool PIPE, bool PACKED, typename Epilogue, typename Hook = NoHook>
__device__ __forceinline__ void gemv_rows(const void* weight, int n, int k, int batch, const float* staged,
                                          const float* bias, Tile<W, RPW, U>& tile, Epilogue&& epilogue,
                                          Hook&& hook = NoHook{}) {
  constexpr int VEC = 16 / sizeof(W);
  const int lane = threadIdx.x & 31;
  const int tw = gridDim.x * kWarps, gw = warp_slot<PACKED>();
  const int chunks = k / VEC;
  const bool single = chunks <= 32 * U;
  int round = 0;
  for (int row = gw * RPW; row < n; row += tw * RPW, ++round) {
    if (lane == 0) hook(round);
    const int next_row = row + tw * RPW;
    Tile<W, RPW, U> next;
    if constexpr (PIPE)
      if (single && next_row < n) load_tile(next, weight, n, k, next_row, lane);
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
        float wf[RPW][VEC];
#pragma unroll
        for (int r = 0; r < RPW; ++r) unpack(tile.v[r][u], wf[r]);
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
        epilogue(row + r, b, acc[r][b] + add, lane == (r * MAXB + b) % 32);
      }
    }
  }
}

// ---- staging the inputs of a product ----------------------------------------------------------

// residual[b, :] = the residual stream entering this phase: `src`'s words of this step, or (src
// null: layer 0) the embeddings, which every block computes itself. staged = layer_norm(residual).
template <typename W, int MAXB>
__device__ void stage_layer_norm(const FusedStepArgs& a, const float* gamma, const float* beta, const Word* src,
                                 const Step& step, const int* tokens, const int* positions, float* residual,
                                 float* staged, float (*stats)[2]) {
  const int k = a.width, n = a.batch * k;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (src == nullptr) {
    const W* wte = static_cast<const W*>(a.wte);
    const W* wpe = static_cast<const W*>(a.wpe);
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const int b = i / k, c = i - b * k;
      residual[i] = to_float(wte[std::size_t(tokens[b]) * k + c]) + to_float(wpe[std::size_t(positions[b]) * k + c]);
    }
  } else {
    ll_gather(residual, src, n, step);
  }
  cp_async_wait(a);  // this phase's parameters (and weights)
  __syncthreads();
  if (warp < a.batch) {  // one warp per sequence: mean, then variance around it
    const float* row = residual + warp * k;
    float s = 0;
    for (int i = lane; i < k; i += 32) s += row[i];
    const float mean = warp_sum(s) / k;
    float v = 0;
    for (int i = lane; i < k; i += 32) {
      const float d = row[i] - mean;
      v += d * d;
    }
    const float var = warp_sum(v) / k;
    if (lane == 0) {
      stats[warp][0] = mean;
      stats[warp][1] = 1.0f / sqrtf(var + a.eps);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const int b = i / k, c = i - b * k;
    staged[i] = (residual[i] - stats[b][0]) * stats[b][1] * gamma[c] + beta[c];
  }
  __syncthreads();
}

// staged[b, h*64 + d] = attention output: the items' partial results of this step combined (flash
// decoding), rounded to the model element type as an unfused kernel would store it.
template <typename W>
__device__ void stage_attention(const FusedStepArgs& a, const Word* partials, const Step& step, const int* positions,
                                float* staged, float (*scale)[kMaxGroups]) {
  const int H = a.heads, groups = attention_groups(a.slots), C = a.width, pairs = a.batch * H;
  // Each item's max and sum (scale[bh][g] holds the max, then the item's weight).
  float(*sums)[kMaxGroups] = reinterpret_cast<float(*)[kMaxGroups]>(staged);  // free until the last loop
  ll_gather_at<2>(&scale[0][0], pairs * kMaxGroups, step, [&](int i) -> const Word* {
    const int bh = i / kMaxGroups, g = i - bh * kMaxGroups;
    return g <= positions[bh / H] / kSpan ? partials + (std::size_t(bh) * groups + g) * kPartial + kHeadDim : nullptr;
  });
  ll_gather_at<2>(&sums[0][0], pairs * kMaxGroups, step, [&](int i) -> const Word* {
    const int bh = i / kMaxGroups, g = i - bh * kMaxGroups;
    return g <= positions[bh / H] / kSpan ? partials + (std::size_t(bh) * groups + g) * kPartial + kHeadDim + 1
                                          : nullptr;
  });
  __syncthreads();
  for (int bh = threadIdx.x; bh < pairs; bh += kThreads) {
    const int used = positions[bh / H] / kSpan + 1;
    float M = -INFINITY;
    for (int g = 0; g < used; ++g) M = fmaxf(M, scale[bh][g]);
    float L = 0.0f;
    for (int g = 0; g < used; ++g) L += expf(scale[bh][g] - M) * sums[bh][g];
    for (int g = 0; g < kMaxGroups; ++g) scale[bh][g] = g < used ? expf(scale[bh][g] - M) / L : 0.0f;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < a.batch * C; i += kThreads) {
    const int b = i / C, c = i - b * C, bh = b * H + c / kHeadDim, d = c % kHeadDim;
    const int used = positions[b] / kSpan + 1;
    const Word* part = partials + std::size_t(bh) * groups * kPartial + d;
    Word w[kMaxGroups];
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g) w[g] = g < used ? ll_peek(part + g * kPartial) : ll_ready_word(step);
    float out = 0.0f;
#pragma unroll
    for (int g = 0; g < kMaxGroups; ++g)
      if (g < used) out = fmaf(scale[bh][g], ll_settle(w[g], part + g * kPartial, step), out);
    staged[i] = to_float(from_float<W>(out));
  }
  cp_async_wait(a);
  __syncthreads();
}

// ---- attention --------------------------------------------------------------------------------
//
// Items (sequence, head, group of kSpan positions); a block runs kItemsPerBlock items at once, one
// per kItemWarps warps, each warp over 32 positions (TPK lanes per key, 16-byte loads, all keys
// in flight at once). Warps combine in shared memory; items leave (output, max, sum) for the
// next phase to combine. The item holding position T (the new token) stores the new key/value.

template <typename W>
__device__ void attention_phase(const FusedStepArgs& a, int layer, const Exchange& ex, const Step& step,
                                const int* positions, float (*wpart)[kItemWarps][kPartial],
                                float (*qkv)[3 * kHeadDim]) {
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
    int begin = 0;
    if (item < items) {
      bh = item / groups;
      g = item - bh * groups;
      T = positions[bh / H];
      live = g * kSpan <= T;
      begin = g * kSpan + wi * 32;
    }
    const bool active = live && begin <= T;
    const std::size_t head = std::size_t(bh) * a.slots * kHeadDim;
    // The cache's keys (and values) first: they do not depend on this step.
    uint4 kr[NI], vr[kValuesEarly ? NI : 1];
#pragma unroll
    for (int i = 0; i < NI; ++i) {
      const int j = begin + kg + i * KPI;
      kr[i] = active && j < T ? load_stream(k_cache + head + std::size_t(j) * kHeadDim + t * VEC)
                              : make_uint4(0, 0, 0, 0);
    }
    if constexpr (kValuesEarly) {
#pragma unroll
      for (int i = 0; i < NI; ++i) {
        const int j = begin + kg + i * KPI;
        vr[i] = active && j < T ? load_stream(v_cache + head + std::size_t(j) * kHeadDim + t * VEC)
                                : make_uint4(0, 0, 0, 0);
      }
    }
    // Then this token's query, key and value for each of the block's items, into shared memory.
    ll_gather_at<2>(&qkv[0][0], kItemsPerBlock * 3 * kHeadDim, step, [&](int i) -> const Word* {
      const int s = i / (3 * kHeadDim), r = i - s * (3 * kHeadDim);
      const int it = base + s * gridDim.x + blockIdx.x;
      if (it >= items) return nullptr;
      const int ibh = it / groups, ig = it - ibh * groups, ib = ibh / H, ih = ibh - ib * H;
      if (ig * kSpan > positions[ib]) return nullptr;
      return ex.qkv + std::size_t(ib) * 3 * C + (r / kHeadDim) * C + ih * kHeadDim + r % kHeadDim;
    });
    __syncthreads();
    if (active) {
      {
        float qv[VEC], kn[VEC], vn[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          qv[e] = qkv[sub][t * VEC + e] * 0.125f;  // 1 / sqrt(64), exact
          // The new key and value as the cache stores them.
          kn[e] = to_float(from_float<W>(qkv[sub][kHeadDim + t * VEC + e]));
          vn[e] = to_float(from_float<W>(qkv[sub][2 * kHeadDim + t * VEC + e]));
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
      Word* dst = ex.partial + (std::size_t(bh) * groups + g) * kPartial;
      ll_store(dst + d, O, step);
      if (d == 0) {
        ll_store(dst + kHeadDim, M, step);
        ll_store(dst + kHeadDim + 1, L, step);
      }
    }
    __syncthreads();
  }
}

// Block b's share of [p, p + bytes) into the L2: one bulk prefetch, so it costs one instruction.
__device__ __forceinline__ void prefetch_share(const void* p, std::size_t bytes) {
  const std::size_t share = (bytes / gridDim.x + 15) / 16 * 16;
  const std::size_t begin = share * blockIdx.x;
  if (begin >= bytes) return;
  const std::size_t count = min(share, bytes - begin) / 16 * 16;
  if (count > 0) prefetch_l2(static_cast<const unsigned char*>(p) + begin, static_cast<unsigned>(count));
}

// Phase q's weights (or, for attention, the layer's cache) into the L2, spread over the blocks;
// thread 0 calls it once its block is done with an earlier phase. Phase q: 5 * layer + {0: ln_1 +
// c_attn, 1: attention, 2: attn.c_proj, 3: ln_2 + mlp.c_fc, 4: mlp.c_proj}; 5 * layers: the LM
// head (its first quarter: the whole does not fit in the L2).
template <typename W>
__device__ void prefetch_phase(const FusedStepArgs& a, int q) {
  const std::size_t C = a.width, F = a.hidden_dim, e = sizeof(W);
  if (q >= 5 * a.layer_count) {
    if (q == 5 * a.layer_count) prefetch_share(a.wte, std::size_t(a.vocab) * C * e / 4);
    return;
  }
  const FusedLayer& w = a.layers[q / 5];
  switch (q % 5) {
    case 0: prefetch_share(w.attn_w, 3 * C * C * e); break;
    case 1: {
      const std::size_t bytes = a.cache_layer_elements * e;
      prefetch_share(static_cast<const unsigned char*>(a.k_cache) + bytes * (q / 5), bytes);
      prefetch_share(static_cast<const unsigned char*>(a.v_cache) + bytes * (q / 5), bytes);
      break;
    }
    case 2: prefetch_share(w.attn_proj_w, C * C * e); break;
    case 3: prefetch_share(w.fc_w, F * C * e); break;
    default: prefetch_share(w.fc_proj_w, C * F * e); break;
  }
}

// ---- the step ---------------------------------------------------------------------------------

template <typename W, int MAXB>
__global__ void __launch_bounds__(kThreads, 1) fused_step_kernel(FusedStepArgs a) {
  // Dynamic shared memory: staged inputs [batch][max(width, hidden)], the residual stream
  // [batch][width], then the phase's small parameters: gamma [width], beta [width], bias
  // [max(3 width, hidden)].
  extern __shared__ __align__(16) float staged[];
  __shared__ float stats[MAXB][2];
  __shared__ int tokens[MAXB], positions[MAXB];
  __shared__ float wpart[kItemsPerBlock][kItemWarps][kPartial];
  __shared__ float scale[kMaxPairs][kMaxGroups];
  __shared__ float qkv_items[kItemsPerBlock][3 * kHeadDim];
  __shared__ float warp_best[kWarps][MAXB];
  __shared__ int warp_best_index[kWarps][MAXB];
  __shared__ bool last_block;
  __shared__ unsigned step_number;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int C = a.width, F = a.hidden_dim, B = a.batch, V = a.vocab;
  float* residual = staged + std::size_t(B) * max(C, F);
  float* gamma = residual + std::size_t(B) * C;
  float* beta = gamma + C;
  float* bias = beta + C;
  Tile<W, 2, 4> tile;        // products over the width (c_attn, attn.c_proj, mlp.c_fc, LM head)
  Tile<W, 1, 12> tile_proj;  // mlp.c_proj, over the hidden width
  const bool proj_rows = block_has_rows<2>(C);  // attn.c_proj (PACKED)
  const bool mlp_proj_rows = block_has_rows<1>(C);  // mlp.c_proj (PACKED)
  // a.smem_tiles: this warp's staged first tiles; X: c_attn, mlp.c_fc, LM head; Y: the c_projs.
  const bool smem = a.smem_tiles;
  uint4* tile_x = reinterpret_cast<uint4*>(bias + max(3 * C, F)) + warp * (kTileEntries + kProjEntries);
  uint4* tile_y = tile_x + kTileEntries;

  if (threadIdx.x < B) {
    tokens[threadIdx.x] = a.tokens[threadIdx.x];
    positions[threadIdx.x] = a.positions[threadIdx.x];
  }
  // The step's number: one more than the last step's (kept by the last block of each step).
  if (threadIdx.x == 0) step_number = __ldcg(a.counters + 1) + 1;
  {
    const FusedLayer& w0 = a.layers[0];
    if (!smem) preload_tile(tile, w0.attn_w, 3 * C, C);
    copy_async(gamma, w0.ln1_w, C);
    copy_async(beta, w0.ln1_b, C);
    copy_async(bias, w0.attn_b, 3 * C);
    if (smem) {
      cp_async_commit();
      if (a.layer_count > 0)
        stage_tile<false, W, 2, 4>(tile_x, w0.attn_w, 3 * C, C);
      else
        stage_tile<false, W, 2, 4>(tile_x, a.wte, V, C);
      cp_async_commit();
    }
  }
  __syncthreads();
  const Step step{step_number, a.spin_ns, a.gather_threads > 0 ? a.gather_threads : kThreads};
  // The L2 prefetch runs a.prefetch_distance phases ahead of the phase a block has just finished.
  const int ahead = a.prefetch_distance;
  if (threadIdx.x == 0 && ahead > 0)
    for (int q = 0; q < ahead; ++q) prefetch_phase<W>(a, q);

  for (int layer = 0; layer < a.layer_count; ++layer) {
    const FusedLayer w = a.layers[layer];
    const Exchange ex = exchange_of(a, layer);
    const Word* x_in = layer == 0 ? nullptr : exchange_of(a, layer - 1).x_out;
    const int p0 = 5 * layer;

    // ln_1 + c_attn: qkv = ln(x) @ W^T + b
    if (smem) {  // attn.c_proj's weights, a phase early
      if (proj_rows) stage_tile<true, W, 2, 4>(tile_y, w.attn_proj_w, C, C);
      cp_async_commit();
    }
    stage_layer_norm<W, MAXB>(a, gamma, beta, x_in, step, tokens, positions, residual, staged, stats);
    if (smem) take_tile(tile, tile_x);
    gemv_rows<W, MAXB, 2, 4, false, false>(w.attn_w, 3 * C, C, B, staged, bias, tile,
                                           [&](int n, int b, float v, bool store) {
                                             if (store) ll_store(ex.qkv + std::size_t(b) * 3 * C + n, v, step);
                                           });
    if (threadIdx.x == 0 && ahead > 0) prefetch_phase<W>(a, p0 + 0 + ahead);
    __syncthreads();  // the parameters in shared memory are free

    // attention over the cache (+ this token's key and value)
    attention_phase<W>(a, layer, ex, step, positions, wpart, qkv_items);
    if (threadIdx.x == 0 && ahead > 0) prefetch_phase<W>(a, p0 + 1 + ahead);
    if (proj_rows) {
      if (!smem) preload_tile<true>(tile, w.attn_proj_w, C, C);
      copy_async(bias, w.attn_proj_b, C);
    }
    if (smem) {  // mlp.c_fc's weights, a phase early
      cp_async_commit();
      stage_tile<false, W, 2, 4>(tile_x, w.fc_w, F, C);
      cp_async_commit();
    }

    // combine + attn.c_proj: x_attn = x + attn @ W^T + b
    if (proj_rows) {
      stage_attention<W>(a, ex.partial, step, positions, staged, scale);
      if (smem) take_tile(tile, tile_y);
      gemv_rows<W, MAXB, 2, 4, false, true>(w.attn_proj_w, C, C, B, staged, bias, tile,
                                            [&](int n, int b, float v, bool store) {
                                              const std::size_t i = std::size_t(b) * C + n;
                                              if (store) ll_store(ex.x_attn + i, residual[i] + v, step);
                                            });
    }
    if (threadIdx.x == 0 && ahead > 0) prefetch_phase<W>(a, p0 + 2 + ahead);
    __syncthreads();
    if (!smem) preload_tile(tile, w.fc_w, F, C);
    copy_async(gamma, w.ln2_w, C);
    copy_async(beta, w.ln2_b, C);
    copy_async(bias, w.fc_b, F);
    if (smem) {  // mlp.c_proj's weights, a phase early
      cp_async_commit();
      if (mlp_proj_rows) stage_tile<true, W, 1, 12>(tile_y, w.fc_proj_w, C, F);
      cp_async_commit();
    }

    // ln_2 + mlp.c_fc + GELU
    stage_layer_norm<W, MAXB>(a, gamma, beta, ex.x_attn, step, tokens, positions, residual, staged, stats);
    if (smem) take_tile(tile, tile_x);
    gemv_rows<W, MAXB, 2, 4, false, false>(w.fc_w, F, C, B, staged, bias, tile,
                                           [&](int n, int b, float v, bool store) {
                                             // rounded as the model's element type, as the chain stores it
                                             if (store)
                                               ll_store(ex.hidden + std::size_t(b) * F + n,
                                                        to_float(from_float<W>(gelu_tanh(v))), step);
                                           });
    if (threadIdx.x == 0 && ahead > 0) prefetch_phase<W>(a, p0 + 3 + ahead);
    __syncthreads();

    // mlp.c_proj: x_out = x_attn + h @ W^T + b
    if (mlp_proj_rows) {
      if (!smem) preload_tile<true>(tile_proj, w.fc_proj_w, C, F);
      copy_async(bias, w.fc_proj_b, C);
    }
    if (smem) {  // the next c_attn's (or the LM head's) weights, a phase early
      cp_async_commit();
      if (layer + 1 < a.layer_count)
        stage_tile<false, W, 2, 4>(tile_x, a.layers[layer + 1].attn_w, 3 * C, C);
      else
        stage_tile<false, W, 2, 4>(tile_x, a.wte, V, C);
      cp_async_commit();
    }
    if (mlp_proj_rows) {
      ll_gather<4>(staged, ex.hidden, B * F, step);
      cp_async_wait(a);
      __syncthreads();
      if (smem) take_tile(tile_proj, tile_y);
      gemv_rows<W, MAXB, 1, 12, false, true>(w.fc_proj_w, C, F, B, staged, bias, tile_proj,
                                             [&](int n, int b, float v, bool store) {
                                               const std::size_t i = std::size_t(b) * C + n;
                                               if (store) ll_store(ex.x_out + i, residual[i] + v, step);
                                             });
    }
    if (threadIdx.x == 0 && ahead > 0) prefetch_phase<W>(a, p0 + 4 + ahead);
    __syncthreads();
    if (layer + 1 < a.layer_count) {
      const FusedLayer& next = a.layers[layer + 1];
      if (!smem) preload_tile(tile, next.attn_w, 3 * C, C);
      copy_async(gamma, next.ln1_w, C);
      copy_async(beta, next.ln1_b, C);
      copy_async(bias, next.attn_b, 3 * C);
    } else {
      if (!smem) preload_tile(tile, a.wte, V, C);
      copy_async(gamma, a.lnf_w, C);
      copy_async(beta, a.lnf_b, C);
    }
    if (smem) cp_async_commit();
  }

  // ln_f + LM head (tied to wte) + greedy argmax
  const Word* x_final = a.layer_count == 0 ? nullptr : exchange_of(a, a.layer_count - 1).x_out;
  if (smem) cp_async_commit();  // no next product: an empty group keeps "all but the last" right
  stage_layer_norm<W, MAXB>(a, gamma, beta, x_final, step, tokens, positions, residual, staged, stats);
  if (smem) take_tile(tile, tile_x);
  float best[MAXB];
  int best_index[MAXB];
#pragma unroll
  for (int b = 0; b < MAXB; ++b) {
    best[b] = -INFINITY;
    best_index[b] = 0x7fffffff;
  }
  gemv_rows<W, MAXB, 2, 4, true, false>(
      a.wte, V, C, B, staged, nullptr, tile,
      [&](int n, int b, float v, bool store) {
        if (beats(v, n, best[b], best_index[b])) {
          best[b] = v;
          best_index[b] = n;
        }
        if (store) __stcg(a.logits + std::size_t(b) * V + n, v);
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
  // The last block to get here combines the blocks' argmax and closes the step.
  if (threadIdx.x == 0) last_block = atomicAdd(a.counters, 1u) == gridDim.x - 1;
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
    a.counters[0] = 0;
    a.counters[1] = step.number;
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

std::size_t fused_smem(int batch, int width, int hidden_dim, bool smem_tiles) {
  const std::size_t staged = std::size_t(batch) * (std::max(width, hidden_dim) + width);
  const std::size_t parameters = 2 * std::size_t(width) + std::max(3 * width, hidden_dim);
  return (staged + parameters) * sizeof(float) + (smem_tiles ? kSmemTileBytes : 0);
}

}  // namespace

FusedLaunch fused_launch(Elem elem, int batch, int width, int heads, int hidden_dim, int slots, int sm_count,
                         bool allow_smem_tiles) {
  if (batch < 1 || batch > gemv_max_batch || width != heads * kHeadDim || width % 8 != 0 || hidden_dim % 8 != 0 ||
      batch * heads > kMaxPairs || attention_groups(slots) > kMaxGroups)
    return {};
  auto blocks = [&](bool tiles) {
    const std::size_t smem = fused_smem(batch, width, hidden_dim, tiles);
    if (smem > 220 * 1024) return 0;
    return elem == Elem::fp32 ? fused_blocks_per_sm<float>(batch, smem) : fused_blocks_per_sm<bf16>(batch, smem);
  };
  // One block per SM: all resident, as the blocks wait on each other. Staged tiles where they fit.
  if (allow_smem_tiles && blocks(true) >= 1) return {sm_count, true};
  if (blocks(false) >= 1) return {sm_count, false};
  return {};
}

std::size_t fused_exchange_words(int batch, int width, int heads, int hidden_dim, int slots, int layers) {
  return exchange_layer_words(batch, width, heads, hidden_dim, slots) * std::max(layers, 1);
}

void fused_step(const FusedStepArgs& args, Elem elem, int grid, cuda_stream stream) {
  const std::size_t smem = fused_smem(args.batch, args.width, args.hidden_dim, args.smem_tiles);
  if (elem == Elem::fp32)
    launch_fused<float>(args, grid, smem, stream);
  else
    launch_fused<bf16>(args, grid, smem, stream);
}

}  // namespace ridge::gpt2
