#pragma once
// Internal: the streaming kernels' device buffers and their check (src/sweeps/cuda/bandwidth.cpp).
// Use run_bandwidth_sweep (ridge/bandwidth.hpp); these types may change without notice.
#include <cstdint>
#include <memory>
#include <string>

#include "ridge/bandwidth.hpp"
#include "ridge/measure.hpp"
#include "ridge/sweep.hpp"

namespace ridge::detail {

/// Outcome of checking one kernel's output against a host reference.
struct StreamCheck {
  bool passed = false;
  std::int64_t checked = 0;     ///< output elements compared with the reference (1 for a sum)
  std::int64_t mismatches = 0;  ///< compared elements outside tolerance
  std::int64_t non_finite = 0;  ///< NaN/inf in the whole output (it is poisoned with NaN first)
  double max_error = 0;         ///< largest |got - ref| / tolerance scale
  std::string first_mismatch;   ///< "c[1023] = nan, expected 0.51" for the first bad element
  std::string summary() const;
};

/// Device buffers for the streaming ops, sized for `capacity` fp32 elements: inputs a and b (random
/// in [-1, 1], never zeros), output c, and the partial sums of the read-only reduction.
class StreamBench {
 public:
  /// Allocates 3 x capacity x 4 bytes (+ partials) on the current device and fills a and b.
  /// Throws UsageError for capacity <= 0 and Error (with the size) when memory is short.
  explicit StreamBench(std::int64_t capacity, std::uint64_t seed = 1);
  ~StreamBench();
  StreamBench(const StreamBench&) = delete;
  StreamBench& operator=(const StreamBench&) = delete;

  /// Launches `op` over the first n elements (asynchronous; capturable in a CUDA graph).
  /// Throws UsageError when n is outside [1, capacity].
  void run(StreamOp op, StreamVariant variant, std::int64_t n, cuda_stream stream = nullptr);

  /// Poisons the output with NaN, runs once and compares with a host reference: every element
  /// for n <= 2^20, else the first and last 4096 and 16 random runs of 1024 elements, plus a scan
  /// of the whole output for NaN/inf on the GPU. The sum is compared with a double host sum of
  /// all n inputs within a bound on fp32 rounding.
  StreamCheck verify(StreamOp op, StreamVariant variant, std::int64_t n);

  /// Blocks the grid_stride variant launches (SMs x resident blocks per SM).
  int grid_stride_blocks(StreamOp op) const;
  std::int64_t capacity() const;
  /// The scalar s of scale and triad.
  float scalar_factor() const;
  /// The result of the last read-only sum (after synchronizing), for tests.
  double last_sum();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ridge::detail
