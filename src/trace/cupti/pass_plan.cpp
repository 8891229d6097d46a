// Pass planning with the Profiler Host API: one host object per question (does the chip offer
// this metric; how many passes do these metrics take), so it runs offline from a chip name.
#include "trace/cupti/pass_plan.hpp"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_target.h>

#include <algorithm>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::detail {

namespace {

std::string result_text(CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return text != nullptr ? text : fmt::format("CUPTI error {}", static_cast<int>(r));
}

void check(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS) throw Error(fmt::format("{} failed: {}", call, result_text(r)));
}

/// A range-profiler host object for one chip, freed on scope exit.
class HostObject {
 public:
  HostObject(const std::string& chip, const std::vector<std::uint8_t>* availability) {
    CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability != nullptr && !availability->empty() ? availability->data() : nullptr;
    if (const CUptiResult r = cuptiProfilerHostInitialize(&p); r != CUPTI_SUCCESS)
      throw Error(fmt::format("CUPTI's Profiler Host API does not know the chip '{}': {}", chip, result_text(r)));
    host_ = p.pHostObject;
  }
  ~HostObject() {
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = host_;
    cuptiProfilerHostDeinitialize(&p);  // nothing to do about a failure here
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;
  CUpti_Profiler_Host_Object* get() const { return host_; }

 private:
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

bool offered(const HostObject& host, const std::string& metric) {
  const std::string base = metric.substr(0, metric.find('.'));
  CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
  p.pHostObject = host.get();
  p.pMetricName = base.c_str();
  return cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
}

/// Passes CUPTI schedules for `metrics` on the chip.
std::size_t passes_of(const std::string& chip, const std::vector<std::uint8_t>* availability,
                      const std::vector<std::string>& metrics) {
  if (metrics.empty()) return 0;
  HostObject host(chip, availability);
  std::vector<const char*> names;
  for (const auto& m : metrics) names.push_back(m.c_str());
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = host.get();
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  if (const CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add); r != CUPTI_SUCCESS)
    throw Error(fmt::format("the {} chip does not offer one of the metrics asked ({}): {}", chip,
                            fmt::join(metrics, ", "), result_text(r)));
  CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host.get();
  check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
  std::vector<std::uint8_t> config(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = host.get();
  image.configImageSize = config.size();
  image.pConfigImage = config.data();
  check(cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = config.size();
  passes.pConfigImage = config.data();
  check(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
  return passes.numOfPasses;
}

}  // namespace

trace::CounterPassPlan plan_counter_passes(const std::string& chip, const std::vector<std::string>& entries,
                                           const std::vector<std::string>& required,
                                           const std::vector<std::uint8_t>* availability, bool with_groups) {
  trace::CounterPassPlan plan;
  plan.chip = chip;
  {
    HostObject host(chip, availability);
    for (const auto& entry : entries) {
      std::string chosen;
      for (const auto& alternative : trace::metric_alternatives(entry))
        if (offered(host, alternative)) {
          chosen = alternative;
          break;
        }
      if (!chosen.empty()) {
        if (std::find(plan.metrics.begin(), plan.metrics.end(), chosen) == plan.metrics.end()) plan.metrics.push_back(chosen);
        continue;
      }
      if (std::find(required.begin(), required.end(), entry) != required.end())
        throw Error(fmt::format("this GPU ({}) has no metric named {}", chip, entry));
      plan.metrics_not_offered.push_back(entry);
    }
  }
  plan.passes = passes_of(chip, availability, plan.metrics);
  // Greedy grouping: each metric joins the first group it shares one pass with.
  for (const auto& m : with_groups ? plan.metrics : std::vector<std::string>{}) {
    bool placed = false;
    for (auto& group : plan.groups) {
      group.push_back(m);
      if (passes_of(chip, availability, group) <= 1) {
        placed = true;
        break;
      }
      group.pop_back();
    }
    if (!placed) plan.groups.push_back({m});
  }
  return plan;
}

std::string counter_chip_name(int device) {
  CUpti_Device_GetChipName_Params p{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  p.deviceIndex = static_cast<std::size_t>(device);
  check(cuptiDeviceGetChipName(&p), "cuptiDeviceGetChipName");
  return p.pChipName;
}

}  // namespace ridge::detail
