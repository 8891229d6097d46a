// The timers' counted pass: one call of the timed callable under CUPTI's range profiler (auto
// range, kernel replay), its kernels' roofline counters summed (measure.hpp: count_work).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_profiler_target.h>

#include <fmt/format.h>

#include "measure/cuda/cuda_check.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"
#include "ridge/measure.hpp"
#include "trace/cupti/collector.hpp"
#include "trace/cupti/kernel_counters.hpp"
#include "trace/cupti/range_profiler.hpp"

namespace ridge {

namespace {

/// A CUPTI subscriber of our own while counting: CUPTI allows one per process, so this is where
/// Nsight Systems, Nsight Compute or a tracer of ridge's already attached shows itself, and it
/// keeps a tracer from starting in the middle of the counted call.
class OnlySubscriber {
 public:
  OnlySubscriber() {
    const CUptiResult r = cuptiSubscribe(&handle_, reinterpret_cast<CUpti_CallbackFunc>(&ignore), nullptr);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      throw CountersUnavailableError(
          "cannot read hardware counters: another CUPTI client is attached to this process (a profiler such as "
          "Nsight Systems or Nsight Compute, or a tracer), and CUPTI allows one per process. Run without nsys/ncu "
          "to count the work, or read the counters from Nsight Compute itself");
    detail::check_profiler_call(r, "cuptiSubscribe");
  }
  ~OnlySubscriber() {
    if (handle_ != nullptr) cuptiUnsubscribe(handle_);
  }
  OnlySubscriber(const OnlySubscriber&) = delete;
  OnlySubscriber& operator=(const OnlySubscriber&) = delete;

 private:
  static void ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
  CUpti_SubscriberHandle handle_ = nullptr;
};

/// cuptiProfilerInitialize for the counted call, DeInitialize after it.
class ProfilerInitialized {
 public:
  ProfilerInitialized() {
    CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    detail::check_profiler_call(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
  }
  ~ProfilerInitialized() {
    CUpti_Profiler_DeInitialize_Params p{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&p);
  }
  ProfilerInitialized(const ProfilerInitialized&) = delete;
  ProfilerInitialized& operator=(const ProfilerInitialized&) = delete;
};

int current_device() {
  if (const std::string reason = no_gpu_reason(); !reason.empty())
    throw NoGpuError("reading hardware counters needs a CUDA GPU, and none is usable: " + reason);
  int device = 0;
  RIDGE_CHECK(cudaGetDevice(&device));
  RIDGE_CHECK(cudaFree(nullptr));  // the context the callable's kernels run in
  return device;
}

}  // namespace

void require_work_counting() {
  if (detail::collector_running())
    throw CountersUnavailableError(
        "cannot read hardware counters: ridge's tracer (ridge.trace, ridge::Tracer) is recording in this process, and "
        "CUPTI allows one client per process. Count the work outside the trace, or let the trace read them "
        "(counters=\"roofline\")");
  detail::require_one_cupti();
  detail::require_counters_permitted(current_device());
  OnlySubscriber probe;  // another CUPTI client: CountersUnavailableError
}

CountedWork count_work(const StreamFn& fn, cuda_stream stream) {
  require_work_counting();
  OnlySubscriber only;
  ProfilerInitialized initialized;
  CUcontext context = nullptr;
  if (detail::call_driver("cuCtxGetCurrent", &context) != CUDA_SUCCESS || context == nullptr)
    throw Error("cuCtxGetCurrent failed: no CUDA context is current to count the callable's work in");
  RIDGE_CHECK(cudaDeviceSynchronize());  // the timed samples are done before profiling starts
  const std::string metric_set = CountedWork{}.metric_set;
  detail::RangeProfilerSession session(context, trace::counter_set_metrics(metric_set), {}, CountedWork::max_kernels);
  detail::RangeProfilerSession::Decoded decoded;
  try {
    session.start();
    fn(stream);
    RIDGE_CHECK(cudaDeviceSynchronize());
    decoded = session.stop();
    session.disable();
  } catch (...) {
    try {
      session.disable();
    } catch (const Error&) {  // the first failure is the one to report
    }
    throw;
  }
  if (decoded.dropped > 0)
    throw Error(fmt::format("the counted call launched more than {} kernels ({} ranges dropped); count a smaller part "
                            "of the work, or trace it with counters instead (ridge.trace(counters=\"roofline\"))",
                            CountedWork::max_kernels, decoded.dropped));
  trace::KernelCounters counters;
  counters.metric_set = metric_set;
  counters.metrics = session.metrics();
  for (auto& values : decoded.ranges) counters.rows.push_back({0, session.device(), std::move(values), 0});
  CountedWork c;
  c.metric_set = metric_set;
  c.work = trace::total_work(counters);
  c.kernels = counters.rows.size();
  c.passes = session.passes();
  c.metrics_not_offered = session.metrics_not_offered();
  return c;
}

Measurement measure_with_counters(Method method, const StreamFn& fn, CudaOptions options) {
  options.validate();
  require_work_counting();  // before anything is timed: a refusal costs the caller no sampling
  Measurement m = measure(method, fn, options);
  m.counted = count_work(fn, options.stream);
  return m;
}

}  // namespace ridge
