#pragma once
// One check macro for CUDA runtime, driver, cuBLAS and CUPTI status codes. Include this from
// CUDA code only: it needs the CUDA headers.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_result.h>

#include <string>

namespace ridge::detail {

std::string status_text(cudaError_t status);
std::string status_text(CUresult status);
std::string status_text(cublasStatus_t status);
/// Defined in the tracer library (ridge_trace), which links CUPTI.
std::string status_text(CUptiResult status);
inline bool failed(cudaError_t s) { return s != cudaSuccess; }
inline bool failed(CUresult s) { return s != CUDA_SUCCESS; }
inline bool failed(cublasStatus_t s) { return s != CUBLAS_STATUS_SUCCESS; }
inline bool failed(CUptiResult s) { return s != CUPTI_SUCCESS; }

/// Throws ridge::Error (or NoGpuError for "no device"/"no driver" codes) naming file, line, call.
[[noreturn]] void throw_status(const std::string& text, bool no_gpu, const char* call, const char* file, int line);
bool means_no_gpu(cudaError_t s);
inline bool means_no_gpu(CUresult s) { return s == CUDA_ERROR_NO_DEVICE || s == CUDA_ERROR_NOT_INITIALIZED; }
inline bool means_no_gpu(cublasStatus_t) { return false; }
inline bool means_no_gpu(CUptiResult) { return false; }

template <typename Status>
inline void check(Status status, const char* call, const char* file, int line) {
  if (failed(status)) throw_status(status_text(status), means_no_gpu(status), call, file, line);
}

}  // namespace ridge::detail

/// Checks a CUDA/cuBLAS/CUPTI status; on failure throws ridge::Error with file, line and the call.
#define RIDGE_CHECK(call) ::ridge::detail::check((call), #call, __FILE__, __LINE__)
/// Checks the last kernel launch (launch-configuration errors).
#define RIDGE_CHECK_LAUNCH() ::ridge::detail::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
