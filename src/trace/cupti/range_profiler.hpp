#pragma once
// One CUDA context's session of CUPTI's range profiler (auto range): the host configuration for
// the context's chip, the counter data image, and start, stop and decode. Each kernel launched in
// the context while the session runs becomes one range. With kernel replay CUPTI replays it once
// per pass inside its launch, saving and restoring the memory it writes; with user replay the
// caller runs the same work once per pass (start, work, stop_pass until every pass is submitted,
// then decode). Used by the tracer's per-launch counters (kernel_counters.cpp, also in the
// injection library) and by the timers' counted pass (work_counters.cpp).
#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ridge::detail {

/// A driver API function of the libcuda already in the process, called by name (the injection
/// library links no driver stub). CUDA_ERROR_NOT_FOUND when libcuda or the function is missing.
void* driver_symbol(const char* name);
template <typename... Args>
CUresult call_driver(const char* name, Args... args) {
  using Function = CUresult (*)(Args...);
  const auto f = reinterpret_cast<Function>(driver_symbol(name));
  return f != nullptr ? f(args...) : CUDA_ERROR_NOT_FOUND;
}

/// Throws ridge::Error "CALL failed: STATUS" unless `status` is CUPTI_SUCCESS.
void check_profiler_call(CUptiResult status, const char* call);

/// The range profiler of one context. The caller has called cuptiProfilerInitialize, and the
/// context is current on the calling thread when the session is made.
class RangeProfilerSession {
 public:
  /// Configures `metrics` for the context's chip and enables the profiler on it. A metric of
  /// `required` the chip lacks throws ridge::Error; any other metric it lacks is left out (see
  /// metrics_not_offered). `max_ranges`: kernels one start..stop may hold before ranges drop.
  /// `metrics` may hold "a|b" entries (the first the GPU offers). `replay`: CUPTI_KernelReplay or
  /// CUPTI_UserReplay.
  RangeProfilerSession(CUcontext context, const std::vector<std::string>& metrics,
                       const std::vector<std::string>& required, std::size_t max_ranges,
                       CUpti_ProfilerReplayMode replay = CUPTI_KernelReplay);
  ~RangeProfilerSession();
  RangeProfilerSession(const RangeProfilerSession&) = delete;
  RangeProfilerSession& operator=(const RangeProfilerSession&) = delete;

  /// Starts profiling (kernel replay), or the next pass (user replay): every kernel launched in
  /// the context from now on is a range of its own.
  void start();
  bool running() const { return running_; }
  /// User replay: ends the pass started last; true when every pass has been submitted (then
  /// decode). The caller waits for the pass's work to finish first.
  bool stop_pass();
  /// User replay: passes submitted since the last decode.
  std::size_t passes_done() const { return passes_done_; }

  /// What one start..stop profiled: the values of each range (launch order), in metrics() order.
  struct Decoded {
    std::vector<std::vector<double>> ranges;
    std::uint64_t dropped = 0;  ///< ranges CUPTI dropped (more kernels than max_ranges)
  };
  /// Stops, decodes and evaluates the ranges, and makes the counter data image ready for the next
  /// start. Nothing to do (an empty result) when not running.
  Decoded stop();
  /// Decodes and evaluates what the passes since the last decode collected (user replay, after
  /// stop_pass said every pass is in), and makes the image ready for the next session.
  Decoded decode();
  /// Stops (decoding nothing), disables the profiler on the context and frees the host object:
  /// before the context goes away. Throws ridge::Error on a CUPTI failure.
  void disable();

  std::uint32_t device() const { return device_; }
  const std::vector<std::string>& metrics() const { return metrics_; }
  const std::vector<std::string>& metrics_not_offered() const { return not_offered_; }
  std::size_t passes() const { return passes_; }  ///< replay passes each kernel runs

 private:
  void initialize_counter_data();

  CUcontext context_ = nullptr;
  std::uint32_t device_ = 0;
  std::size_t max_ranges_ = 0, passes_ = 0, passes_done_ = 0;
  CUpti_ProfilerReplayMode replay_ = CUPTI_KernelReplay;
  bool configured_ = false;  ///< SetConfig done for the session in progress (user replay: once for all passes)
  std::vector<std::string> metrics_, not_offered_;
  std::vector<const char*> metric_pointers_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* profiler_ = nullptr;
  std::vector<std::uint8_t> config_, counter_data_;
  bool running_ = false;
};

}  // namespace ridge::detail
