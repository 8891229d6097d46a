#pragma once
#include <optional>
#include <string>

namespace ridge {

/// Element types ridge measures. tf32 is fp32 storage with TF32 tensor-core math.
enum class DType { fp32, tf32, fp16, bf16, fp8_e4m3, fp64 };
/// Every DType, in declaration order (the record reader accepts each one's to_string name).
inline constexpr DType all_dtypes[] = {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3, DType::fp64};

std::string to_string(DType t);
/// The name of a dtype that may be absent (a record's): "" when none.
std::string to_string(const std::optional<DType>& t);
/// Parses "fp32", "tf32", "fp16", "bf16", "fp8" / "fp8_e4m3", "fp64"; throws UsageError otherwise.
DType dtype_from_string(const std::string& name);
/// Bytes of one stored element (tf32: 4).
double bytes_per_element(DType t);

}  // namespace ridge
