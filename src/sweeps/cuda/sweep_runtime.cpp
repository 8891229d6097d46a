#include "sweeps/cuda/sweep_runtime.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "measure/cuda/probes.hpp"
#include "ridge/errors.hpp"
#include "ridge/sweep.hpp"
#include "ridge/writers.hpp"

namespace ridge {

std::optional<CatalogEntry> datasheet_for(const DeviceDescription& device) {
  try {
    return match_device(device);
  } catch (const UsageError&) {
    throw;  // a broken user catalog file is the user's to fix
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

MeasuredLookup lookup_measured_ceilings(int device, const DeviceDescription& description, const std::string& mode) {
  validate_ceilings_mode(mode);
  if (mode == "none") return {};
  if (mode == "auto") {
    const std::filesystem::path path = ceilings_cache_path(description.uuid);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      return {std::nullopt,
              "No measured ceilings cached for this GPU: percentages are of the datasheet only. "
              "Add --ceilings measure (tens of seconds, then cached) for % of measured."};
    try {
      return {ceilings_from_json(read_json_file(path)), ""};
    } catch (const std::exception& e) {
      return {std::nullopt, fmt::format("Ignoring the cached ceilings in {} ({}); use --ceilings refresh to measure again.",
                                        path.string(), e.what())};
    }
  }
  return {measured_ceilings(device, mode == "refresh"), ""};
}

double EmptyLaunchFloor::ms(Method method, int repeats_per_sample, const CudaOptions& like) {
  int bucket = 1;
  while (bucket < repeats_per_sample && bucket < (1 << 14)) bucket *= 2;
  const auto key = std::pair{static_cast<int>(method), bucket};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  CudaOptions o = like;
  o.repeats = bucket;
  o.flush_l2 = false;
  o.target_ci_relative = 0;
  const Measurement m = measure(method, [](cuda_stream s) { launch_empty(s); }, o);
  cache_[key] = m.summary.median;
  return m.summary.median;
}

}  // namespace ridge
