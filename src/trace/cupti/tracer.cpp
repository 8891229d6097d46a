// ridge::Tracer: the in-process face of the CUPTI collector.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <exception>
#include <string>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/trace_file.hpp"
#include "ridge/trace/tracer.hpp"
#include "ridge/trace/window.hpp"
#include "trace/cupti/collector.hpp"

namespace ridge {

Tracer::Tracer(TracerOptions options) : options_(options) {}

Tracer::~Tracer() {
  if (!running_) return;
  try {
    stop();
  } catch (...) {  // a destructor must not throw; the trace is simply lost
  }
}

void Tracer::start() {
  detail::require_one_cupti();
  // Without a GPU CUPTI fails with an error code of its own; say plainly what is missing instead.
  if (const std::string reason = no_gpu_reason(); !reason.empty())
    throw NoGpuError("tracing needs a CUDA GPU, and none is usable: " + reason);
  enable_nvtx_capture();
  options_.validate();
  if (options_.counters) require_counters_permitted(0);
  detail::CollectorOptions o;
  static_cast<trace::CollectionOptions&>(o) = options_;
  detail::collector_start(o);
  running_ = true;
}

void Tracer::stop() {
  if (!running_) return;
  running_ = false;
  // Unfinished GPU work would come back as incomplete records: let it finish first, and stop the
  // collector even when that fails.
  std::exception_ptr sync_error;
  try {
    if (device_count() > 0) RIDGE_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    sync_error = std::current_exception();
  }
  trace_ = detail::collector_stop();
  if (sync_error) std::rethrow_exception(sync_error);
}

void Tracer::write(const std::string& path) const { trace::write_trace(trace_, path); }

trace::Analysis Tracer::summary(const trace::AnalysisOptions& options, const trace::Window& window) const {
  return window.empty() ? trace::analyze(trace_, options) : trace::analyze(trace::apply_window(trace_, window), options);
}

bool enable_nvtx_capture() {
  // Without a usable GPU nothing can be traced, and a CUPTI reached through NVTX with no driver
  // loaded (NVIDIA's wheel CUPTI) recurses until the stack overflows: NVTX then stays a no-op.
  if (!no_gpu_reason().empty()) return false;
  detail::require_one_cupti();
  const std::string path = detail::cupti_library_path();
  if (const char* set = std::getenv("NVTX_INJECTION64_PATH")) {
    // Inherited from a parent that traces with another CUPTI (e.g. Python's, from NVIDIA's wheels,
    // running `ridge report` as a child): NVTX would load that second copy here. Ours replaces it;
    // any other injection library (a profiler's) is left alone.
    const std::string inherited = set;
    const auto slash = inherited.rfind('/');
    const bool other_cupti = inherited.compare(slash == std::string::npos ? 0 : slash + 1, 11, "libcupti.so") == 0 &&
                             !path.empty() && inherited != path;
    if (!other_cupti) return true;
    return setenv("NVTX_INJECTION64_PATH", path.c_str(), 1) == 0;
  }
  if (path.empty()) return false;
  return setenv("NVTX_INJECTION64_PATH", path.c_str(), 0) == 0;
}

}  // namespace ridge
