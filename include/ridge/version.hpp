#pragma once
#include <string_view>

namespace ridge {
/// Semantic version of ridge.
std::string_view tool_version();
/// Git commit the build came from ("-dirty" when the tree had changes), or "unknown".
std::string_view git_sha();
/// Version of nvcc that compiled this build.
std::string_view build_cuda_version();
}  // namespace ridge
