#pragma once
// What the GPU sweeps share: the empty-launch floor each point is compared with. (Their ceilings
// come from ceilings_for, ridge/catalog.hpp.)
#include <map>
#include <utility>

#include "ridge/measure.hpp"

namespace ridge {

/// The empty-launch floor at a sweep point: an empty kernel timed by the same method with the same
/// calls per sample as the op (so a graph replay is compared with a graph replay). Cached per method
/// and power-of-two bucket of calls per sample.
class EmptyLaunchFloor {
 public:
  /// Median milliseconds per empty launch.
  double ms(Method method, int repeats_per_sample, const CudaOptions& like);

 private:
  std::map<std::pair<int, int>, double> cache_;
};

}  // namespace ridge
