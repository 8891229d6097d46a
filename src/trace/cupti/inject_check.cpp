// RIDGE_CHECK's error path for the injection library, which links CUPTI but not ridge_gpu (and
// so not cuBLAS: a traced program should not load half a gigabyte of libraries it never asked for).
#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/errors.hpp"

namespace ridge::detail {

void throw_status(const std::string& text, bool no_gpu, const char* call, const char* file, int line) {
  const std::string message = fmt::format("{} failed at {}:{}: {}", call, file, line, text);
  if (no_gpu) throw NoGpuError(message);
  throw Error(message);
}

}  // namespace ridge::detail
