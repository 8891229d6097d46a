// Names of the decode step's choices (matrix backend, step kernel, launch mode): to and from text.
#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/gpt2/model.hpp"

namespace ridge::gpt2 {

std::string to_string(GemmPath g) {
  switch (g) {
    case GemmPath::automatic: return "auto";
    case GemmPath::gemv: return "gemv";
    case GemmPath::cublas: return "cublas";
  }
  return "?";
}

GemmPath gemm_path_from_string(const std::string& name) {
  if (name == "auto" || name == "automatic") return GemmPath::automatic;
  if (name == "gemv" || name == "ridge") return GemmPath::gemv;
  if (name == "cublas" || name == "cublaslt") return GemmPath::cublas;
  throw UsageError(fmt::format("unknown matrix backend '{}'; choose auto, gemv or cublas", name));
}

std::string to_string(StepKernel k) {
  switch (k) {
    case StepKernel::automatic: return "auto";
    case StepKernel::barrier: return "barrier";
    case StepKernel::chain: return "chain";
  }
  return "?";
}

StepKernel step_kernel_from_string(const std::string& name) {
  if (name == "auto" || name == "automatic") return StepKernel::automatic;
  if (name == "barrier" || name == "fused") return StepKernel::barrier;
  if (name == "chain") return StepKernel::chain;
  throw UsageError(fmt::format("unknown step kernel '{}'; choose auto, barrier or chain", name));
}

std::string to_string(Mode m) { return m == Mode::eager ? "eager" : "graph"; }

Mode mode_from_string(const std::string& name) {
  if (name == "eager") return Mode::eager;
  if (name == "graph") return Mode::graph;
  throw UsageError(fmt::format("unknown mode '{}'; choose eager or graph", name));
}

}  // namespace ridge::gpt2
