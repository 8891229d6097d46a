// `ridge profile` as a library call, CPU part: options and small derived values.
#include "ridge/gpt2/profile.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::gpt2 {

void ProfileOptions::validate() const {
  const Config config = preset(model);
  if (dtype != DType::fp32 && dtype != DType::bf16)
    throw UsageError(fmt::format("dtype must be fp32 or bf16 for profile, got {}", to_string(dtype)));
  if (batch < 1) throw UsageError(fmt::format("batch must be >= 1, got {}", batch));
  if (context < 1 || context > config.context)
    throw UsageError(fmt::format("context must be within [1, {}] for GPT-2 {}, got {}", config.context, model,
                                 context));
  if (top < 1) throw UsageError(fmt::format("top must be >= 1, got {}", top));
}

std::string graph_trace_path(const std::string& eager_trace_path) {
  std::filesystem::path p(eager_trace_path);
  return (p.parent_path() / (p.stem().string() + "-graph" + p.extension().string())).string();
}

double ModeProfile::launch_gap_fraction() const {
  return analysis.kernel_span_ns ? double(analysis.idle_time_ns) / double(analysis.kernel_span_ns) : 0.0;
}

}  // namespace ridge::gpt2
