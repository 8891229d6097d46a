// How short can one phase of a persistent (one block per SM) decode kernel be on this GPU?
//
// The fused GPT-2 step is a chain of 61 phases; each phase's input is written by every SM in the
// phase before. This probe runs that chain with almost nothing else in it, so its time per phase
// is a floor for any design with that many grid-wide hand-overs:
//   work  empty      only the hand-over
//         vector     read a 768-float vector the other SMs just wrote (L2 path), one block-wide
//                    sum, write this block's slice of the next vector (the least a GEMV phase does)
//         layernorm  the same with two dependent block-wide sums (mean, then variance)
//   hand-over  counter  thread 0: fence + atomicAdd on one counter, poll it (the fused step's)
//              red      one counter, red.release instead of fence + atomic
//              split8   8 counters on separate lines (block b adds to b % 8), 8 lanes poll them
//              flags    one word per block (st.release of the phase number), a warp polls them all
//         gemv       what a projection phase of the fused step does: each warp loads its two rows
//                    of a bf16 [width, width] matrix into registers between arriving and leaving
//                    the hand-over, stages the vector in shared memory, and writes
//                    0.8 x + W x for its rows (one matrix per phase, 241 of them: HBM, not L2)
// and, for designs that hand data over inside a thread-block cluster instead of the grid:
//   cluster <n>  blocks in clusters of n exchange through distributed shared memory: each block
//                writes its slice of the next vector into every peer's shared memory, then
//                barrier.cluster (cooperative_groups' cluster.sync); work empty or vector as above
// Every kernel's output is checked against a CPU reference before it is timed. The time of a
// P-phase kernel is the median over samples of 20 back-to-back cooperative launches (events);
// per phase is (t(241) - t(1)) / 240, which leaves the launch out.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o handover_floor bench/handover_floor.cu
//   ./handover_floor [width=768] [samples=9]
// Output: one line per (hand-over, work), then per (cluster size, work):
//   floor <hand-over> <work> blocks=<n> per_phase_ns=<x> step61_us=<y>
//   cluster <n> <work> blocks=<n> per_phase_ns=<x>
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_common.cuh"


namespace {

constexpr int kThreads = 512;
constexpr int kMaxWidth = 2 * kThreads;  // each thread keeps at most two values in registers
constexpr int kSplit = 8;
constexpr int kLineWords = 32;  // 128-byte lines between split counters

enum HandOver { kCounter, kRed, kSplit8, kFlags };
enum Work { kEmpty, kVector, kLayerNorm };
const char* const kHandOverNames[] = {"counter", "red", "split8", "flags"};
const char* const kWorkNames[] = {"empty", "vector", "layernorm"};

struct Args {
  unsigned* counters;  // kSplit counters, kLineWords apart
  unsigned* flags;     // one per block
  float* vec[2];       // the phase's input and output, alternating
  int width;
  int phases;
  unsigned before;  // hand-overs in earlier launches: counters and flags only grow, nothing is reset
};

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Blocks b < grid with b % kSplit == group.
__device__ __forceinline__ unsigned group_size(int group) {
  return (gridDim.x - group + kSplit - 1) / kSplit;
}

// A wait that never ends is a bug in this probe: stop the kernel instead of hanging the machine.
__device__ __forceinline__ void spin_guard(unsigned long long& spins) {
  if (++spins > (1ull << 28)) __trap();
}

// All blocks' writes before this call are visible to every block's L2-path reads after it.
// `done` counts the hand-overs so far, over all launches.
template <int H>
__device__ __forceinline__ void hand_over(const Args& a, unsigned done) {
  unsigned long long spins = 0;
  __syncthreads();
  if (H == kCounter) {
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(a.counters, 1u);
      while (load_acquire(a.counters) < done * gridDim.x) spin_guard(spins);
    }
  } else if (H == kRed) {
    if (threadIdx.x == 0) {
      red_release(a.counters, 1u);
      while (load_acquire(a.counters) < done * gridDim.x) spin_guard(spins);
    }
  } else if (H == kSplit8) {
    if (threadIdx.x == 0) red_release(a.counters + (blockIdx.x % kSplit) * kLineWords, 1u);
    if (threadIdx.x < kSplit) {
      const unsigned want = done * group_size(threadIdx.x);
      while (load_acquire(a.counters + threadIdx.x * kLineWords) < want) spin_guard(spins);
    }
  } else {
    if (threadIdx.x == 0) store_release(a.flags + blockIdx.x, done);
    if (threadIdx.x < 32) {
      bool ready;
      do {
        ready = true;
        for (unsigned b = threadIdx.x; b < gridDim.x; b += 32) ready = ready && load_acquire(a.flags + b) >= done;
        spin_guard(spins);
      } while (!__all_sync(0xffffffffu, ready));
    }
  }
  __syncthreads();
}

__device__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? scratch[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) scratch[32] = v;
  }
  __syncthreads();
  const float total = scratch[32];
  __syncthreads();  // scratch is reused by the next sum
  return total;
}

// This block's share of the output vector: [first, last).
__host__ __device__ inline void slice(int block, int blocks, int width, int& first, int& last) {
  const int per = (width + blocks - 1) / blocks;
  first = block * per < width ? block * per : width;
  last = first + per < width ? first + per : width;
}

template <int H, int W>
__global__ void __launch_bounds__(kThreads, 1) phases_kernel(Args a) {
  __shared__ float scratch[33];
  for (int p = 0; p < a.phases; ++p) {
    if (W != kEmpty) {
      const float* in = a.vec[p & 1];
      float* out = a.vec[(p + 1) & 1];
      int first, last;
      slice(blockIdx.x, gridDim.x, a.width, first, last);
      const int mine_at = first + threadIdx.x;
      const float mine = mine_at < last ? __ldcg(in + mine_at) : 0.f;
      float x0 = threadIdx.x < a.width ? __ldcg(in + threadIdx.x) : 0.f;
      float x1 = threadIdx.x + kThreads < a.width ? __ldcg(in + threadIdx.x + kThreads) : 0.f;
      const float mean = block_sum(x0 + x1, scratch) / a.width;
      float y;
      if (W == kVector) {
        y = 0.5f * mine + 0.01f * mean;
      } else {
        x0 = threadIdx.x < a.width ? x0 - mean : 0.f;
        x1 = threadIdx.x + kThreads < a.width ? x1 - mean : 0.f;
        const float var = block_sum(x0 * x0 + x1 * x1, scratch) / a.width;
        y = 0.5f * (mine - mean) * rsqrtf(var + 1e-5f) + 0.1f;
      }
      if (mine_at < last) __stcg(out + mine_at, y);
    }
    hand_over<H>(a, a.before + p + 1);
  }
}

// ---- the projection phase -------------------------------------------------------------------

constexpr int kGemvRows = 2;    // rows per warp
constexpr int kGemvPieces = 4;  // 16-byte pieces per lane per row: 4 x 32 x 8 = 1024 columns
constexpr int kMatrices = 241;  // one per phase of the longest chain

struct GemvArgs {
  Args chain;
  const __nv_bfloat16* weights;  // [kMatrices][width][width]
};

struct RowTile {
  uint4 v[kGemvRows][kGemvPieces];
};

__device__ __forceinline__ void load_rows(RowTile& t, const __nv_bfloat16* w, int width, int row) {
  const int lane = threadIdx.x & 31, chunks = width / 8;
#pragma unroll
  for (int r = 0; r < kGemvRows; ++r)
#pragma unroll
    for (int u = 0; u < kGemvPieces; ++u) {
      const int c = lane + u * 32;
      t.v[r][u] = row + r < width && c < chunks
                      ? __ldcs(reinterpret_cast<const uint4*>(w + std::size_t(row + r) * width) + c)
                      : make_uint4(0, 0, 0, 0);
    }
}

__global__ void __launch_bounds__(kThreads, 1) gemv_kernel(GemvArgs g) {
  const Args& a = g.chain;
  __shared__ float staged[kMaxWidth];
  const int lane = threadIdx.x & 31;
  const int row = ((threadIdx.x >> 5) * gridDim.x + blockIdx.x) * kGemvRows;  // warps across blocks first
  const std::size_t matrix = std::size_t(a.width) * a.width;
  RowTile tile;
  load_rows(tile, g.weights, a.width, row);
  for (int p = 0; p < a.phases; ++p) {
    const float* in = a.vec[p & 1];
    float* out = a.vec[(p + 1) & 1];
    for (int i = threadIdx.x; i < a.width; i += kThreads) staged[i] = __ldcg(in + i);
    __syncthreads();
    float acc[kGemvRows] = {};
#pragma unroll
    for (int r = 0; r < kGemvRows; ++r)
#pragma unroll
      for (int u = 0; u < kGemvPieces; ++u) {
        const int c = lane + u * 32;
        if (c * 8 >= a.width) break;
        const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&tile.v[r][u]);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 w2 = __bfloat1622float2(h[e]);
          acc[r] += w2.x * staged[c * 8 + 2 * e] + w2.y * staged[c * 8 + 2 * e + 1];
        }
      }
#pragma unroll
    for (int r = 0; r < kGemvRows; ++r) {
      for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
      if (lane == r && row + r < a.width) __stcg(out + row + r, 0.8f * staged[row + r] + acc[r]);
    }
    // Arrive, load the next phase's rows, then wait: the load's latency hides behind the wait.
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(a.counters, 1u);
    }
    if (p + 1 < a.phases) load_rows(tile, g.weights + std::size_t((p + 1) % kMatrices) * matrix, a.width, row);
    if (threadIdx.x == 0)
      while (load_acquire(a.counters) < (a.before + p + 1) * gridDim.x) {
      }
    __syncthreads();
  }
}

// The chain on the CPU with the same bf16 weights.
std::vector<float> gemv_reference(std::vector<float> v, const std::vector<__nv_bfloat16>& w, int phases) {
  const int n = static_cast<int>(v.size());
  std::vector<float> next(n);
  for (int p = 0; p < phases; ++p) {
    const __nv_bfloat16* m = w.data() + std::size_t(p % kMatrices) * n * n;
    for (int r = 0; r < n; ++r) {
      double acc = 0;
      for (int c = 0; c < n; ++c) acc += double(__bfloat162float(m[std::size_t(r) * n + c])) * v[c];
      next[r] = 0.8f * v[r] + static_cast<float>(acc);
    }
    v.swap(next);
  }
  return v;
}

struct ClusterArgs {
  const float* in;  // [width], every cluster's starting vector
  float* out;       // [clusters][width], each cluster's vector after the last phase
  int width;
  int phases;
};

// Each cluster runs the vector chain on its own: phase p reads the whole vector from this block's
// shared memory, and each block writes its slice of the next one into every block of the cluster.
template <int W>
__global__ void __launch_bounds__(kThreads, 1) cluster_kernel(ClusterArgs a) {
  namespace cg = cooperative_groups;
  __shared__ float vec[2][kMaxWidth];
  __shared__ float scratch[33];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank()), size = static_cast<int>(cluster.num_blocks());
  for (int i = threadIdx.x; i < a.width; i += kThreads) vec[0][i] = a.in[i];
  cluster.sync();
  for (int p = 0; p < a.phases; ++p) {
    if (W == kVector) {
      const float* in = vec[p & 1];
      const float x0 = threadIdx.x < a.width ? in[threadIdx.x] : 0.f;
      const float x1 = threadIdx.x + kThreads < a.width ? in[threadIdx.x + kThreads] : 0.f;
      const float mean = block_sum(x0 + x1, scratch) / a.width;
      int first, last;
      slice(rank, size, a.width, first, last);
      const int j = first + threadIdx.x;
      if (j < last) {
        const float y = 0.5f * in[j] + 0.01f * mean;
        for (int r = 0; r < size; ++r) cluster.map_shared_rank(&vec[(p + 1) & 1][0], r)[j] = y;
      }
    }
    cluster.sync();
  }
  if (rank == 0) {
    const int c = blockIdx.x / size;
    for (int i = threadIdx.x; i < a.width; i += kThreads) a.out[std::size_t(c) * a.width + i] = vec[W == kVector ? a.phases & 1 : 0][i];
  }
}

using KernelFn = void (*)(Args);

KernelFn kernel_for(int h, int w) {
  static const KernelFn table[4][3] = {
      {phases_kernel<kCounter, kEmpty>, phases_kernel<kCounter, kVector>, phases_kernel<kCounter, kLayerNorm>},
      {phases_kernel<kRed, kEmpty>, phases_kernel<kRed, kVector>, phases_kernel<kRed, kLayerNorm>},
      {phases_kernel<kSplit8, kEmpty>, phases_kernel<kSplit8, kVector>, phases_kernel<kSplit8, kLayerNorm>},
      {phases_kernel<kFlags, kEmpty>, phases_kernel<kFlags, kVector>, phases_kernel<kFlags, kLayerNorm>},
  };
  return table[h][w];
}

// The same chain on the CPU (each phase's sums in double).
std::vector<float> reference(std::vector<float> v, int work, int phases) {
  const int n = static_cast<int>(v.size());
  std::vector<float> next(n);
  for (int p = 0; p < phases; ++p) {
    double s = 0;
    for (float x : v) s += x;
    const float mean = static_cast<float>(s / n);
    double q = 0;
    for (float x : v) q += double(x - mean) * (x - mean);
    const float rstd = 1.f / std::sqrt(static_cast<float>(q / n) + 1e-5f);
    for (int i = 0; i < n; ++i)
      next[i] = work == kVector ? 0.5f * v[i] + 0.01f * mean : 0.5f * (v[i] - mean) * rstd + 0.1f;
    v.swap(next);
  }
  return v;
}

struct Probe {
  Args args{};
  int blocks = 0;
  cudaStream_t stream{};

  void reset() {
    CHECK(cudaMemsetAsync(args.counters, 0, kSplit * kLineWords * sizeof(unsigned), stream));
    CHECK(cudaMemsetAsync(args.flags, 0, blocks * sizeof(unsigned), stream));
    args.before = 0;
  }

  void launch(KernelFn fn, int phases) {
    args.phases = phases;
    void* params[] = {&args};
    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(fn), dim3(blocks), dim3(kThreads), params, 0, stream));
    args.before += phases;  // the next launch's hand-over numbers start after this one's
  }

  // Median over samples of the mean time of 20 back-to-back launches, in microseconds.
  double time_us(KernelFn fn, int phases, int samples) {
    return median_launch_us(stream, samples, 20, [&] { launch(fn, phases); });
  }


  // Runs `phases` phases from a known vector and compares with the CPU. False on a mismatch.
  bool check(KernelFn fn, int work, int phases) {
    std::vector<float> v(args.width);
    for (int i = 0; i < args.width; ++i) v[i] = std::sin(0.37f * i) + 0.25f;
    CHECK(cudaMemcpyAsync(args.vec[0], v.data(), v.size() * 4, cudaMemcpyHostToDevice, stream));
    launch(fn, phases);
    std::vector<float> got(args.width);
    CHECK(cudaMemcpyAsync(got.data(), args.vec[phases & 1], got.size() * 4, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> want = reference(v, work, phases);
    for (int i = 0; i < args.width; ++i)
      if (!(std::fabs(got[i] - want[i]) <= 1e-4f * (1.f + std::fabs(want[i])))) {
        std::fprintf(stderr, "check failed: element %d after %d phases: GPU %g, CPU %g\n", i, phases, got[i], want[i]);
        return false;
      }
    return true;
  }
};

// The cluster kernels: checked, then per phase = (t(241) - t(1)) / 240 as for the grid.
struct ClusterProbe {
  ClusterArgs args{};
  int size = 0, clusters = 0;
  cudaStream_t stream{};

  void launch(void (*fn)(ClusterArgs), int phases) {
    args.phases = phases;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(clusters * size);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = size;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&config, fn, args));
  }

  double time_us(void (*fn)(ClusterArgs), int phases, int samples) {
    return median_launch_us(stream, samples, 20, [&] { launch(fn, phases); });
  }


  bool check(void (*fn)(ClusterArgs), int work, int phases) {
    std::vector<float> v(args.width);
    for (int i = 0; i < args.width; ++i) v[i] = std::sin(0.37f * i) + 0.25f;
    CHECK(cudaMemcpyAsync(const_cast<float*>(args.in), v.data(), v.size() * 4, cudaMemcpyHostToDevice, stream));
    launch(fn, phases);
    std::vector<float> got(std::size_t(clusters) * args.width);
    CHECK(cudaMemcpyAsync(got.data(), args.out, got.size() * 4, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> want = work == kVector ? reference(v, kVector, phases) : v;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const float w = want[i % args.width];
      if (!(std::fabs(got[i] - w) <= 1e-4f * (1.f + std::fabs(w)))) {
        std::fprintf(stderr, "cluster check failed: element %zu after %d phases: GPU %g, CPU %g\n", i, phases,
                     got[i], w);
        return false;
      }
    }
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int width = argc > 1 ? std::atoi(argv[1]) : 768;
  const int samples = argc > 2 ? std::atoi(argv[2]) : 9;
  if (width < 1 || width > kMaxWidth || samples < 1) {
    std::fprintf(stderr, "usage: %s [width 1..%d] [samples >= 1]\n", argv[0], kMaxWidth);
    return 2;
  }
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  Probe probe;
  probe.blocks = prop.multiProcessorCount;
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases_kernel<kCounter, kLayerNorm>, kThreads, 0));
  if (per_sm < 1) {
    std::fprintf(stderr, "a %d-thread block does not fit on an SM\n", kThreads);
    return 1;
  }
  CHECK(cudaStreamCreateWithFlags(&probe.stream, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&probe.args.counters, kSplit * kLineWords * sizeof(unsigned)));
  CHECK(cudaMemset(probe.args.counters, 0, kSplit * kLineWords * sizeof(unsigned)));
  CHECK(cudaMalloc(&probe.args.flags, probe.blocks * sizeof(unsigned)));
  CHECK(cudaMemset(probe.args.flags, 0, probe.blocks * sizeof(unsigned)));
  for (auto& v : probe.args.vec) CHECK(cudaMalloc(&v, width * sizeof(float)));
  probe.args.width = width;
  std::printf("# %s, %d SMs, one %d-thread block per SM, width %d, %d samples\n", prop.name, probe.blocks, kThreads,
              width, samples);

  int failures = 0;
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 3; ++w) {
      const KernelFn fn = kernel_for(h, w);
      probe.reset();  // each hand-over keeps its own count, from zero
      if (w != kEmpty && !(probe.check(fn, w, 1) && probe.check(fn, w, 61))) {
        std::printf("floor %s %s CHECK FAILED\n", kHandOverNames[h], kWorkNames[w]);
        ++failures;
        continue;
      }
      const double one = probe.time_us(fn, 1, samples);
      const double step61 = probe.time_us(fn, 61, samples);
      const double many = probe.time_us(fn, 241, samples);
      std::printf("floor %s %s blocks=%d per_phase_ns=%.0f step61_us=%.2f one_phase_us=%.2f\n", kHandOverNames[h],
                  kWorkNames[w], probe.blocks, (many - one) * 1e3 / 240, step61, one);
      std::fflush(stdout);
    }
  {
    // Weights of variance 0.36 / width: x' = 0.8 x + W x keeps the vector's size about constant.
    const std::size_t per = std::size_t(width) * width;
    std::vector<__nv_bfloat16> w(per * kMatrices);
    unsigned state = 12345;
    for (auto& e : w) {
      state = state * 1664525u + 1013904223u;
      e = __float2bfloat16((float(state >> 8) / 16777216.f - 0.5f) * 2.08f / std::sqrt(float(width)));
    }
    __nv_bfloat16* weights = nullptr;
    CHECK(cudaMalloc(&weights, w.size() * sizeof(__nv_bfloat16)));
    CHECK(cudaMemcpy(weights, w.data(), w.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
    GemvArgs g{probe.args, weights};
    auto launch = [&](int phases) {
      probe.args.phases = phases;
      g.chain = probe.args;
      void* params[] = {&g};
      CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(gemv_kernel), dim3(probe.blocks), dim3(kThreads),
                                        params, 0, probe.stream));
      probe.args.before += phases;
    };
    probe.reset();
    bool ok = true;
    for (int phases : {1, 61}) {
      std::vector<float> v(width);
      for (int i = 0; i < width; ++i) v[i] = std::sin(0.37f * i) + 0.25f;
      CHECK(cudaMemcpy(probe.args.vec[0], v.data(), v.size() * 4, cudaMemcpyHostToDevice));
      launch(phases);
      CHECK(cudaStreamSynchronize(probe.stream));
      std::vector<float> got(width);
      CHECK(cudaMemcpy(got.data(), probe.args.vec[phases & 1], got.size() * 4, cudaMemcpyDeviceToHost));
      const std::vector<float> want = gemv_reference(v, w, phases);
      for (int i = 0; i < width && ok; ++i)
        if (!(std::fabs(got[i] - want[i]) <= 1e-3f * (1.f + std::fabs(want[i])))) {
          std::fprintf(stderr, "gemv check failed: element %d after %d phases: GPU %g, CPU %g\n", i, phases, got[i],
                       want[i]);
          ok = false;
        }
    }
    if (!ok) {
      std::printf("floor counter gemv CHECK FAILED\n");
      ++failures;
    } else {
      auto time_us = [&](int phases) { return median_launch_us(probe.stream, samples, 20, [&] { launch(phases); }); };
      const double one = time_us(1), step61 = time_us(61), many = time_us(241);
      std::printf("floor counter gemv blocks=%d per_phase_ns=%.0f step61_us=%.2f one_phase_us=%.2f\n", probe.blocks,
                  (many - one) * 1e3 / 240, step61, one);
      std::fflush(stdout);
    }
    CHECK(cudaFree(weights));
  }

  ClusterProbe cp;
  cp.stream = probe.stream;
  cp.args.width = width;
  float* cluster_in = nullptr;
  CHECK(cudaMalloc(&cluster_in, width * sizeof(float)));
  cp.args.in = cluster_in;
  for (int size : {2, 4, 8}) {
    cp.size = size;
    cp.clusters = probe.blocks / size;
    CHECK(cudaMalloc(&cp.args.out, std::size_t(cp.clusters) * width * sizeof(float)));
    for (int w : {kEmpty, kVector}) {
      void (*fn)(ClusterArgs) = w == kEmpty ? cluster_kernel<kEmpty> : cluster_kernel<kVector>;
      if (!(cp.check(fn, w, 1) && cp.check(fn, w, 61))) {
        std::printf("cluster %d %s CHECK FAILED\n", size, kWorkNames[w]);
        ++failures;
        continue;
      }
      const double one = cp.time_us(fn, 1, samples);
      const double many = cp.time_us(fn, 241, samples);
      std::printf("cluster %d %s blocks=%d per_phase_ns=%.0f\n", size, kWorkNames[w], cp.clusters * size,
                  (many - one) * 1e3 / 240);
      std::fflush(stdout);
    }
    CHECK(cudaFree(cp.args.out));
  }
  return failures == 0 ? 0 : 1;
}
