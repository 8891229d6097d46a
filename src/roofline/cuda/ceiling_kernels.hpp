#pragma once
// Launchers of the ceiling probes (src/gpu/ceiling_kernels.cu). Host-only types, so the host
// logic in ceilings.cpp (compiled by g++, with fmt) can call them.
#include <cstdint>

#include "ridge/measure.hpp"

namespace ridge::detail::ceiling {

/// Launch shape of a streaming kernel: `unroll` independent 16-byte loads in flight per thread,
/// `streaming` = evict-first cache hints (ld/st .cs), `threads` per block.
struct StreamVariant {
  int unroll = 4;
  bool streaming = false;
  int threads = 512;
};

/// Resident blocks per SM of each kernel at a variant (CUDA occupancy calculator).
int copy_blocks_per_sm(const StreamVariant& v);
int read_blocks_per_sm(const StreamVariant& v);
int triad_blocks_per_sm(const StreamVariant& v);
int l2_read_blocks_per_sm(const StreamVariant& v);
int fma_blocks_per_sm(int chains, int threads);

/// dst[i] = src[i] over n4 16-byte vectors. Reads n4*16 bytes, writes n4*16 bytes.
void launch_copy(const void* src, void* dst, std::int64_t n4, const StreamVariant& v, int blocks, cuda_stream stream);

/// Read-only reduction: partials[block] = sum over the block's vectors of ((x+y)+(z+w)), each
/// float4's pair sums in float, accumulated in double. Reads n4*16 bytes; writes `blocks` doubles.
void launch_read(const void* src, std::int64_t n4, double* partials, const StreamVariant& v, int blocks,
                 cuda_stream stream);

/// Triad a[i] = fma(scalar, c[i], b[i]) over n4 vectors. Reads 2*n4*16 bytes, writes n4*16 bytes.
void launch_triad(void* a, const void* b, const void* c, float scalar, std::int64_t n4, const StreamVariant& v,
                  int blocks, cuda_stream stream);

/// The read-only reduction `passes` times over the same n4 vectors, loads cached in L2 only
/// (ld.global.cg), so a working set smaller than the L2 is served from it. Same partials as
/// launch_read, times `passes`.
void launch_l2_read(const void* src, std::int64_t n4, int passes, double* partials, const StreamVariant& v, int blocks,
                    cuda_stream stream);

/// FP32 FMA throughput: each thread runs `chains` (8 or 16) independent chains
/// x <- fma(x, a, b) for `iterations` steps and writes the sum of its chains to out[thread].
/// Chain c of global thread t starts at fma_start_value(t, c). Thread 0 of block 0 writes
/// {clock64 start, clock64 end, globaltimer start ns, globaltimer end ns} to clock_info.
void launch_fma(float* out, int iterations, float a, float b, int chains, int threads, int blocks,
                unsigned long long* clock_info, cuda_stream stream);

/// Starting value of chain `chain` of global thread `thread` (the same on host and device).
float fma_start_value(std::int64_t thread, int chain);

/// Adds the number of 32-bit words where x and y differ to *counter.
void launch_count_differences(const void* x, const void* y, std::int64_t words, unsigned long long* counter,
                              cuda_stream stream);

}  // namespace ridge::detail::ceiling
