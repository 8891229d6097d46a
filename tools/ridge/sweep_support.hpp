#pragma once
// What the sweep commands (bandwidth, matmul) need from the catalog, the measured ceilings and the
// plotter, behind small functions so each command reads as a measurement and nothing else.
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/measure.hpp"
#include "ridge/plot.hpp"
#include "ridge/result.hpp"

namespace ridge::cli {

// These three forward to ridge::ceilings_for (ridge/catalog.hpp), the one lookup of datasheet and
// measured ceilings; new code calls it directly.

/// The datasheet entry for a running device, or nullopt when the catalog has none.
std::optional<CatalogEntry> datasheet_for(const DeviceDescription& device);

/// Where measured ceilings come from: "auto" (the cached measurement if one exists; never starts
/// a measurement of tens of seconds), "measure" (cached, or measured now), "refresh" (measured
/// now), "none". Throws UsageError for another mode.
void validate_ceilings_mode(const std::string& mode);
/// The measured ceilings for `device` per `mode`; nullopt when there are none (a line on `out`
/// says why and how to get them).
std::optional<MeasuredCeilings> measured_ceilings_for(int device, const DeviceDescription& description,
                                                      const std::string& mode, std::FILE* out);

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

/// Human label of a method choice: "CUDA graph replay" etc., with "(auto)" when chosen for the user.
std::string method_label(Method method, bool automatic);

/// Renders `plot` as SVG and writes it to `path` (atomically).
void write_plot(const std::string& path, const Plot& plot);

}  // namespace ridge::cli
