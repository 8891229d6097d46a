// The ceilings a command compares with: the matched datasheet and, per the mode, the measured
// ceilings (read from the cache, or measured on the GPU).
#include <fmt/format.h>

#include "ridge/catalog.hpp"
#include "ridge/device.hpp"
#include "ridge/errors.hpp"

namespace ridge {

CeilingsLookup ceilings_for(int index, const DeviceDescription& device, CeilingsMode mode) {
  CeilingsLookup lookup;
  try {
    lookup.datasheet = match_device(device);
  } catch (const UsageError&) {
    throw;  // a broken user catalog file is the user's to fix
  } catch (const std::exception&) {
    lookup.datasheet = std::nullopt;
  }
  switch (mode) {
    case CeilingsMode::none: break;
    case CeilingsMode::cached: {
      std::string problem;
      lookup.measured = cached_ceilings(device.uuid, &problem);
      if (!problem.empty())
        lookup.note = fmt::format("Ignoring the cached ceilings in {}; set ceilings to refresh to measure again.", problem);
      else if (!lookup.measured)
        lookup.note = "No measured ceilings cached for this GPU: percentages are of the datasheet only. "
                      "Set ceilings to measure (tens of seconds, then cached) for % of measured.";
      break;
    }
    case CeilingsMode::measure: lookup.measured = measured_ceilings(index, false); break;
    case CeilingsMode::refresh: lookup.measured = measured_ceilings(index, true); break;
  }
  return lookup;
}

CeilingsLookup ceilings_for_device_named(const std::string& name, CeilingsMode mode) {
  if (device_count() > 0) {
    const DeviceDescription here = describe_device(0);
    if (name.empty() || here.name == name) return ceilings_for(0, here, mode);
  }
  CeilingsLookup lookup;
  std::size_t longest = 0;
  for (const auto& entry : catalog())
    for (const auto& m : entry.match_names)
      if (!m.empty() && name.find(m) != std::string::npos && m.size() > longest) {
        longest = m.size();
        lookup.datasheet = entry;
      }
  lookup.note = lookup.datasheet ? fmt::format("{} is not this machine's GPU: its datasheet ceilings are used", name)
                                 : fmt::format("no ceilings known for '{}': no GPU of that name here, none in the catalog", name);
  return lookup;
}

}  // namespace ridge
