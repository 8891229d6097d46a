#include "sweeps/cuda/sweep_runtime.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "measure/cuda/probes.hpp"
#include "ridge/errors.hpp"
#include "ridge/sweep.hpp"
#include "ridge/writers.hpp"

namespace ridge {

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
