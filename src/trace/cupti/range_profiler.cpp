// One context's session of CUPTI's range profiler: configure (host object, metrics, config image,
// counter data image, enable), start, stop + decode + evaluate, disable.
#include "trace/cupti/range_profiler.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <dlfcn.h>

#include <algorithm>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "trace/cupti/pass_plan.hpp"

namespace ridge::detail {

std::string status_text(CUptiResult status);  // collector.cpp

void* driver_symbol(const char* name) {
  static void* library = [] {
    void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return handle != nullptr ? handle : dlopen("libcuda.so.1", RTLD_LAZY);
  }();
  return library != nullptr ? dlsym(library, name) : nullptr;
}

void check_profiler_call(CUptiResult status, const char* call) {
  if (status != CUPTI_SUCCESS) throw Error(fmt::format("{} failed: {}", call, status_text(status)));
}
#define PROFILER_CHECK(call) check_profiler_call((call), #call)

namespace {

std::vector<std::uint8_t> counter_availability(CUcontext context) {
  CUpti_Profiler_GetCounterAvailability_Params p{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  p.ctx = context;
  PROFILER_CHECK(cuptiProfilerGetCounterAvailability(&p));
  std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  PROFILER_CHECK(cuptiProfilerGetCounterAvailability(&p));
  return image;
}

}  // namespace

RangeProfilerSession::RangeProfilerSession(CUcontext context, const std::vector<std::string>& metrics,
                                           const std::vector<std::string>& required, std::size_t max_ranges,
                                           CUpti_ProfilerReplayMode replay)
    : context_(context), max_ranges_(max_ranges), replay_(replay) {
  CUdevice device = 0;
  if (call_driver("cuCtxGetDevice", &device) != CUDA_SUCCESS)
    throw Error("cuCtxGetDevice failed: no CUDA context is current for the range profiler");
  device_ = static_cast<std::uint32_t>(device);
  const std::vector<std::uint8_t> availability = counter_availability(context);
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = static_cast<std::size_t>(device);
  PROFILER_CHECK(cuptiDeviceGetChipName(&chip));
  CUpti_Profiler_Host_Initialize_Params h{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  h.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  h.pChipName = chip.pChipName;
  h.pCounterAvailabilityImage = availability.data();
  PROFILER_CHECK(cuptiProfilerHostInitialize(&h));
  host_ = h.pHostObject;
  try {
    // A named set lists what any supported GPU may offer (FP8 tensor paths exist from Hopper on):
    // the metrics this GPU lacks are left out and named. A required (raw) metric it lacks is an error.
    const trace::CounterPassPlan plan = plan_counter_passes(chip.pChipName, metrics, required, &availability, false);
    metrics_ = plan.metrics;
    not_offered_ = plan.metrics_not_offered;
    for (const auto& m : metrics_) metric_pointers_.push_back(m.c_str());
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host_;
    add.ppMetricNames = metric_pointers_.data();
    add.numMetrics = metric_pointers_.size();
    if (const CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add); r != CUPTI_SUCCESS)
      throw Error(fmt::format("the {} GPU does not offer one of the metrics asked ({}): {}", chip.pChipName,
                              fmt::join(metrics_, ", "), status_text(r)));
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = host_;
    PROFILER_CHECK(cuptiProfilerHostGetConfigImageSize(&size));
    config_.resize(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    image.pHostObject = host_;
    image.configImageSize = config_.size();
    image.pConfigImage = config_.data();
    PROFILER_CHECK(cuptiProfilerHostGetConfigImage(&image));
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.configImageSize = config_.size();
    passes.pConfigImage = config_.data();
    PROFILER_CHECK(cuptiProfilerHostGetNumOfPasses(&passes));
    passes_ = passes.numOfPasses;
    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = context;
    PROFILER_CHECK(cuptiRangeProfilerEnable(&enable));
    profiler_ = enable.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params data{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    data.pRangeProfilerObject = profiler_;
    data.pMetricNames = metric_pointers_.data();
    data.numMetrics = metric_pointers_.size();
    data.maxNumOfRanges = max_ranges_;
    data.maxNumRangeTreeNodes = static_cast<std::uint32_t>(max_ranges_);
    PROFILER_CHECK(cuptiRangeProfilerGetCounterDataSize(&data));
    counter_data_.resize(data.counterDataSize);
    initialize_counter_data();
  } catch (...) {
    try {
      disable();
    } catch (const Error&) {  // the first failure is the one to report
    }
    throw;
  }
}

RangeProfilerSession::~RangeProfilerSession() {
  // disable() is the caller's (it may hang at process exit, see counters_end); a session still
  // holding its objects here was left on purpose.
}

void RangeProfilerSession::initialize_counter_data() {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params p{CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = profiler_;
  p.counterDataSize = counter_data_.size();
  p.pCounterData = counter_data_.data();
  PROFILER_CHECK(cuptiRangeProfilerCounterDataImageInitialize(&p));
}

void RangeProfilerSession::start() {
  // Kernel replay configures every session; user replay once for all the passes of one.
  if (replay_ == CUPTI_KernelReplay || !configured_) {
    CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    config.pRangeProfilerObject = profiler_;
    config.configSize = config_.size();
    config.pConfig = config_.data();
    config.counterDataImageSize = counter_data_.size();
    config.pCounterDataImage = counter_data_.data();
    config.range = CUPTI_AutoRange;
    config.replayMode = replay_;
    config.maxRangesPerPass = max_ranges_;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    PROFILER_CHECK(cuptiRangeProfilerSetConfig(&config));
    configured_ = true;
    passes_done_ = 0;
  }
  CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  start.pRangeProfilerObject = profiler_;
  PROFILER_CHECK(cuptiRangeProfilerStart(&start));
  running_ = true;
}

bool RangeProfilerSession::stop_pass() {
  if (!running_) return false;
  running_ = false;
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = profiler_;
  PROFILER_CHECK(cuptiRangeProfilerStop(&stop));
  ++passes_done_;
  return stop.isAllPassSubmitted != 0;
}

RangeProfilerSession::Decoded RangeProfilerSession::stop() {
  if (!running_) return Decoded{};
  stop_pass();
  return decode();
}

RangeProfilerSession::Decoded RangeProfilerSession::decode() {
  Decoded d;
  configured_ = false;
  passes_done_ = 0;
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = profiler_;
  PROFILER_CHECK(cuptiRangeProfilerDecodeData(&decode));
  d.dropped = decode.numOfRangeDropped;
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = counter_data_.data();
  info.counterDataImageSize = counter_data_.size();
  PROFILER_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
  for (std::size_t i = 0; i < info.numTotalRanges; ++i) {
    std::vector<double> values(metrics_.size(), 0.0);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = host_;
    eval.pCounterDataImage = counter_data_.data();
    eval.counterDataImageSize = counter_data_.size();
    eval.rangeIndex = i;
    eval.ppMetricNames = metric_pointers_.data();
    eval.numMetrics = metric_pointers_.size();
    eval.pMetricValues = values.data();
    PROFILER_CHECK(cuptiProfilerHostEvaluateToGpuValues(&eval));
    d.ranges.push_back(std::move(values));
  }
  initialize_counter_data();
  return d;
}

void RangeProfilerSession::disable() {
  if (running_) {
    running_ = false;
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = profiler_;
    cuptiRangeProfilerStop(&stop);  // unchecked: disabling is what matters here
  }
  if (profiler_ != nullptr) {
    CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    disable.pRangeProfilerObject = profiler_;
    profiler_ = nullptr;
    PROFILER_CHECK(cuptiRangeProfilerDisable(&disable));
  }
  if (host_ != nullptr) {
    CUpti_Profiler_Host_Deinitialize_Params host{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    host.pHostObject = host_;
    host_ = nullptr;
    PROFILER_CHECK(cuptiProfilerHostDeinitialize(&host));
  }
}

}  // namespace ridge::detail
