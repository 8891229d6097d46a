#pragma once
// cuBLASLt for the decode step: one descriptor (and its chosen algorithm) per kind of product.
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"
#include "workloads/gpt2/cuda/kernels.hpp"

namespace ridge::gpt2 {

inline cudaDataType_t cuda_type(Elem e) { return e == Elem::fp32 ? CUDA_R_32F : CUDA_R_16BF; }

// D[batch, n] = in[batch, k] @ W[n, k]^T (+ epilogue), column-major: D^T = W^T(k x n, op T) * in^T.
struct LtMatmul {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::string name;

  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }

  void create(cublasLtHandle_t handle, const std::string& what, int n, int k, int batch, Elem weight, Elem input,
              cudaDataType_t out, cublasLtEpilogue_t epilogue, const void* sample_bias, cudaDataType_t bias_type,
              std::size_t workspace_bytes) {
    name = what;
    RIDGE_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t));
    RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n));
    RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    if (sample_bias) {
      RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &sample_bias,
                                                 sizeof sample_bias));
      const int type = bias_type;
      RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type));
    }
    RIDGE_CHECK(cublasLtMatrixLayoutCreate(&a, cuda_type(weight), k, n, k));
    RIDGE_CHECK(cublasLtMatrixLayoutCreate(&b, cuda_type(input), k, batch, k));
    RIDGE_CHECK(cublasLtMatrixLayoutCreate(&c, out, n, batch, n));
    cublasLtMatmulPreference_t pref = nullptr;
    RIDGE_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    RIDGE_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                     sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0)
      throw Error(fmt::format("cuBLASLt has no algorithm for the GPT-2 {} product ({}x{} by batch {}): {}. Set "
                              "gemm to gemv",
                              what, n, k, batch, detail::status_text(status)));
    algo = result.algo;
  }

  void run(cublasLtHandle_t handle, const void* weight, const void* input, void* out, const void* bias, float beta,
           void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
    if (bias)
      RIDGE_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    const float alpha = 1.0f;
    RIDGE_CHECK(cublasLtMatmul(handle, desc, &alpha, weight, a, input, b, &beta, out, c, out, c, &algo, workspace,
                               workspace_bytes, stream));
  }
};

}  // namespace ridge::gpt2
