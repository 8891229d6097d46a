#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ridge/dtype.hpp"
#include "ridge/measure.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// C[m,n] = A[m,k] @ B[k,n] through cuBLASLt, on random inputs in [-1, 1] (never zeros).
/// fp8 takes e4m3 inputs and writes bf16; the others write their own type (tf32 writes fp32).
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
};

/// The shape params (Record::params keys from ridge/sweep.hpp's param_key) of a GEMM record: m, n, k.
nlohmann::json gemm_params(const GemmShape& shape);
/// Reads a GEMM record's shape back. Throws Error when m, n or k is missing.
GemmShape gemm_shape(const Record& record);
/// "4096" for a square shape, else "128x4096x4096".
std::string shape_label(const GemmShape& shape);

struct GemmCheck {
  bool passed = false;
  double max_error = 0;      ///< largest |c - ref| / sum_l |a_l b_l| over the checked entries
  double tolerance = 0;      ///< dtype-appropriate bound on that ratio
  std::int64_t checked = 0;  ///< entries compared with the fp64 CPU reference
  std::int64_t non_finite = 0;  ///< NaN/inf anywhere in C (C is poisoned with NaN before the run)
  std::string summary() const;
};

/// Which library path computes the product.
enum class GemmBackend {
  cublaslt,         ///< cuBLASLt, "TN" layout (A row-major, B column-major), heuristic's first choice
  cublas_rowmajor,  ///< cublasGemmEx on row-major A, B, C: the call PyTorch's `a @ b` makes
};
std::string to_string(GemmBackend b);
/// Parses "cublaslt" or "cublas"; throws UsageError otherwise.
GemmBackend gemm_backend_from_string(const std::string& name);

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

}  // namespace ridge
