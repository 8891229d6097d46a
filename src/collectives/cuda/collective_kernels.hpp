#pragma once
// Host launchers of the collectives' and p2p's kernels (collective_kernels.cu). No fmt here: the
// .cu file includes this header.
#include <cstdint>

#include "ridge/measure.hpp"

namespace ridge::detail::collective_kernels {

/// Element kinds, kept apart from ridge::DType so the .cu file needs no other ridge header.
enum Elem : int { f32 = 0, f16 = 1, bf16 = 2, f64 = 3 };

/// data[i] = collective_formula::fill(rank, i) for i < count.
void launch_fill(void* data, std::int64_t count, int elem, int rank, cuda_stream stream);

/// Compares data[i] (i < count) with collective_formula::expected(op, rank, ranks, chunk, i):
/// adds the mismatches to counters[0] and lowers counters[1] to the first bad index (callers set
/// it to ~0 first). Expected values are small integers, so the comparison is exact.
void launch_check(const void* data, std::int64_t count, int elem, int op, int rank, int ranks, std::int64_t chunk,
                  unsigned long long* counters, cuda_stream stream);

/// The 32-bit pattern p2p copies carry: a hash of (salt, word index). Same on host and device.
std::uint32_t pattern_word(std::uint32_t salt, std::int64_t index);
/// words[i] = pattern_word(salt, i).
void launch_pattern_fill(std::uint32_t* words, std::int64_t count, std::uint32_t salt, cuda_stream stream);
/// Adds to counters[0] the words that differ from the pattern; lowers counters[1] to the first.
void launch_pattern_check(const std::uint32_t* words, std::int64_t count, std::uint32_t salt,
                          unsigned long long* counters, cuda_stream stream);

/// An SM copy: `blocks` blocks of 16-byte loads and stores (bytes a multiple of 4; src may be a
/// peer GPU's memory).
void launch_sm_copy(void* dst, const void* src, std::int64_t bytes, int blocks, cuda_stream stream);

}  // namespace ridge::detail::collective_kernels
