#pragma once
// GEMM shapes and backends as the matmul sweep's records name them (src/sweeps/matmul_sweep.cpp).
#include <cstdint>
#include <string>

#include "ridge/result.hpp"

namespace ridge {

/// A GEMM's shape: C[m,n] = A[m,k] @ B[k,n].
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
};

/// The shape params (Record::params keys from ridge/sweep.hpp's param_key) of a GEMM record: m, n, k.
nlohmann::json gemm_params(const GemmShape& shape);
/// Reads a GEMM record's shape back. Throws Error when m, n or k is missing.
GemmShape gemm_shape(const Record& record);
/// "4096" for a square shape, else "128x4096x4096".
std::string shape_label(const GemmShape& shape);

/// Which library path computes the product.
enum class GemmBackend {
  cublaslt,         ///< cuBLASLt, "TN" layout (A row-major, B column-major), heuristic's first choice
  cublas_rowmajor,  ///< cublasGemmEx on row-major A, B, C: the call PyTorch's `a @ b` makes
};
std::string to_string(GemmBackend b);
/// Parses "cublaslt" or "cublas"; throws UsageError otherwise.
GemmBackend gemm_backend_from_string(const std::string& name);

}  // namespace ridge
