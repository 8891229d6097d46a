#pragma once
// What the GPU sweeps share: the device's datasheet entry and measured ceilings, and the
// empty-launch floor each point is compared with.
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/measure.hpp"

namespace ridge {

/// The datasheet entry for a running device, or nullopt when the catalog has none (a broken user
/// catalog file still throws its UsageError).
std::optional<CatalogEntry> datasheet_for(const DeviceDescription& device);

/// Measured ceilings per a mode of validate_ceilings_mode, or why there are none.
struct MeasuredLookup {
  std::optional<MeasuredCeilings> ceilings;
  std::string note;  ///< why none are used and how to get them; empty when found or mode "none"
};
MeasuredLookup lookup_measured_ceilings(int device, const DeviceDescription& description, const std::string& mode);

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
