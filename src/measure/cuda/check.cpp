#include "measure/cuda/cuda_check.hpp"

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::detail {

std::string status_text(cudaError_t status) {
  return fmt::format("{} ({})", cudaGetErrorName(status), cudaGetErrorString(status));
}

std::string status_text(CUresult status) { return fmt::format("CUresult {}", static_cast<int>(status)); }

std::string status_text(cublasStatus_t status) {
  return fmt::format("{} ({})", cublasGetStatusName(status), cublasGetStatusString(status));
}

bool means_no_gpu(cudaError_t s) {
  return s == cudaErrorNoDevice || s == cudaErrorInsufficientDriver || s == cudaErrorDevicesUnavailable ||
         s == cudaErrorInitializationError || s == cudaErrorStubLibrary || s == cudaErrorSystemNotReady;
}

void throw_status(const std::string& text, bool no_gpu, const char* call, const char* file, int line) {
  const std::string message = fmt::format("{} failed at {}:{}: {}", call, file, line, text);
  if (no_gpu) throw NoGpuError(message + "\n  no usable CUDA GPU: check `nvidia-smi` and the driver installation");
  throw Error(message);
}

}  // namespace ridge::detail
