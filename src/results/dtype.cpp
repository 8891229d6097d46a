#include "ridge/dtype.hpp"

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge {

std::string to_string(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp64: return "fp64";
  }
  return "unknown";
}

std::string to_string(const std::optional<DType>& t) { return t ? to_string(*t) : std::string(); }

DType dtype_from_string(const std::string& given) {
  // PyTorch's and NumPy's names too: str(torch.bfloat16) is "torch.bfloat16", np.dtype("float16").name "float16".
  const std::string name = given.rfind("torch.", 0) == 0 ? given.substr(6) : given;
  if (name == "fp32" || name == "float32" || name == "float") return DType::fp32;
  if (name == "tf32") return DType::tf32;
  if (name == "fp16" || name == "float16" || name == "half") return DType::fp16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "fp8" || name == "fp8_e4m3" || name == "e4m3" || name == "float8_e4m3fn") return DType::fp8_e4m3;
  if (name == "fp64" || name == "float64" || name == "double") return DType::fp64;
  throw UsageError(fmt::format("unknown dtype '{}': use fp32 (float32), tf32, fp16 (float16, half), bf16 (bfloat16), "
                               "fp8 (fp8_e4m3, float8_e4m3fn) or fp64 (float64, double)",
                               given));
}

double bytes_per_element(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::tf32: return 4;
    case DType::fp16:
    case DType::bf16: return 2;
    case DType::fp8_e4m3: return 1;
    case DType::fp64: return 8;
  }
  return 0;
}

}  // namespace ridge
