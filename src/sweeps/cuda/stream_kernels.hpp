#pragma once
// Host launchers of the streaming kernels (src/gpu/stream_kernels.cu). No fmt here: this header is
// included by the .cu file.
#include <cstdint>

#include "ridge/measure.hpp"

namespace ridge::detail::stream_kernels {

/// Kernel ids, kept apart from the public enums so the .cu file needs no ridge headers beyond this.
enum Op : int { op_add = 0, op_copy = 1, op_scale = 2, op_triad = 3, op_read = 4 };
enum Variant : int { variant_scalar = 0, variant_vec4 = 1, variant_grid_stride = 2, variant_broken = 3 };

inline constexpr int block_threads = 256;
inline constexpr int finish_threads = 1024;

/// Blocks of the grid-stride variant of `op`: SMs x resident blocks per SM of that kernel.
int grid_stride_blocks(int op, int device);

/// Partial sums written by the first pass of the read-only sum over n elements (= its blocks).
std::int64_t read_partial_count(int variant, std::int64_t n, int grid_stride_blocks);

/// Elementwise ops: c[i] = f(a[i], b[i]) for i < n (the broken variant skips the last element).
void launch_elementwise(int op, int variant, const float* a, const float* b, float* c, float s, std::int64_t n,
                        int grid_stride_blocks, cuda_stream stream);

/// Read-only sum of a[0..n): a first pass writes per-block partials (fp32) and zeroes *result; a
/// final pass (one block for a few thousand partials, more for the one-element-per-thread
/// variant's n/256) adds them in double into *result.
void launch_read(int variant, const float* a, float* partials, double* result, std::int64_t n, int grid_stride_blocks,
                 cuda_stream stream);

}  // namespace ridge::detail::stream_kernels
