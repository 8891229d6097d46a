#pragma once
// The per-rank fill and the expected outputs of each collective, written once for the host (unit
// tests, the public collective_expected_value) and the GPU check kernel.
#include <cstdint>

#if defined(__CUDACC__)
#define RIDGE_HOST_DEVICE __host__ __device__
#else
#define RIDGE_HOST_DEVICE
#endif

namespace ridge::detail::collective_formula {

// Same order as ridge::CollectiveOp.
enum Op : int { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, send_recv };

/// Small integers in [-4, 4] from a hash of (rank, index): exact in fp16/bf16, and so are sums over
/// up to 512 ranks; no period, so data landing a block or a chunk off is caught.
RIDGE_HOST_DEVICE inline double fill(int rank, std::int64_t index) {
  // splitmix64's finalizer over (rank, index)
  std::uint64_t h = static_cast<std::uint64_t>(index) + (static_cast<std::uint64_t>(rank) << 40);
  h += 0x9E3779B97F4A7C15ull;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  return static_cast<double>(h % 9) - 4.0;
}

/// Sum over ranks of fill(k, index).
RIDGE_HOST_DEVICE inline double sum_over_ranks(int ranks, std::int64_t index) {
  double s = 0;
  for (int k = 0; k < ranks; ++k) s += fill(k, index);
  return s;
}

/// Expected receive-buffer element; `defined` false where the op leaves it undefined. Root is 0.
RIDGE_HOST_DEVICE inline double expected(int op, int rank, int ranks, std::int64_t chunk, std::int64_t index,
                                         bool* defined) {
  *defined = true;
  switch (op) {
    case all_reduce:
      return sum_over_ranks(ranks, index);
    case all_gather:  // block j holds rank j's send buffer
      return fill(static_cast<int>(index / chunk), index % chunk);
    case reduce_scatter:  // rank r gets block r of the sum
      return sum_over_ranks(ranks, static_cast<std::int64_t>(rank) * chunk + index);
    case broadcast:
      return fill(0, index);
    case reduce:
      if (rank != 0) {
        *defined = false;
        return 0;
      }
      return sum_over_ranks(ranks, index);
    case alltoall: {  // block j came from rank j's block `rank`
      const int from = static_cast<int>(index / chunk);
      return fill(from, static_cast<std::int64_t>(rank) * chunk + index % chunk);
    }
    case send_recv:  // from the previous rank of the ring
      return fill((rank + ranks - 1) % ranks, index);
  }
  *defined = false;
  return 0;
}

}  // namespace ridge::detail::collective_formula
