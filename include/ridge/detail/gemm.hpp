#pragma once
// Internal: one checked GEMM through cuBLASLt or cuBLAS (src/sweeps/cuda/gemm.cpp). Use
// run_matmul_sweep (ridge/matmul.hpp); these types may change without notice.
#include <cstdint>
#include <memory>
#include <string>

#include "ridge/dtype.hpp"
#include "ridge/gemm.hpp"
#include "ridge/measure.hpp"

namespace ridge::detail {

struct GemmCheck {
  bool passed = false;
  double max_error = 0;      ///< largest |c - ref| / sum_l |a_l b_l| over the checked entries
  double tolerance = 0;      ///< dtype-appropriate bound on that ratio
  std::int64_t checked = 0;  ///< entries compared with the fp64 CPU reference
  std::int64_t non_finite = 0;  ///< NaN/inf anywhere in C (C is poisoned with NaN before the run)
  std::string summary() const;
};

/// C[m,n] = A[m,k] @ B[k,n] on random inputs in [-1, 1] (never zeros). fp8 takes e4m3 inputs and
/// writes bf16; the others write their own type (tf32 writes fp32).
class Gemm {
 public:
  /// Allocates and fills A and B with random values from `seed`. Throws UsageError for sizes <= 0
  /// or a dtype the device lacks, and Error (with the sizes) when memory cannot be allocated.
  Gemm(GemmShape shape, DType dtype, std::uint64_t seed = 1, GemmBackend backend = GemmBackend::cublaslt);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  /// Launches the product on `stream` (asynchronous).
  void run(cuda_stream stream = nullptr);
  /// Poisons C, runs once, and compares C with an fp64 reference: every entry for small shapes,
  /// `sampled_entries` random entries (plus a full scan for NaN/inf) for large ones.
  GemmCheck verify(std::int64_t sampled_entries = 4096);

  /// Times up to `top_k` of cuBLASLt's heuristic algorithms (a few calls each, CUDA events, on
  /// `stream`) and keeps the fastest. cuBLASLt's first choice is not always its fastest; tuning is
  /// what libraries like PyTorch get from cuBLAS's own selection. Call verify() afterwards: the check
  /// must cover the algorithm that is timed. Returns the number of algorithms that ran.
  int tune(int top_k = 8, cuda_stream stream = nullptr);
  /// What tune() did, e.g. "fastest of 6 cuBLASLt candidates: #2, 4.1% faster than #0"; empty if not tuned.
  std::string tuning() const;

  GemmShape shape() const;
  DType dtype() const;
  GemmBackend backend() const;
  double flops() const;  ///< 2*m*n*k
  double bytes() const;  ///< A and B read once, C written once
  std::string algorithm() const;  ///< cuBLASLt's description of the chosen algorithm

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ridge::detail
