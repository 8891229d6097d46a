// TEMPORARY stubs so the sweeps branch links before the plot/catalog/ceilings branch is merged.
// Delete this file in the final commit of the branch.
#include <string>

#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/errors.hpp"
#include "ridge/plot.hpp"

namespace ridge {

std::string render_svg(const Plot& plot) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\"><title>" + plot.title + "</title>";
  for (const auto& series : plot.series) s += "<!-- " + series.name + " " + std::to_string(series.points.size()) + " -->";
  return s + "</svg>\n";
}

std::optional<double> CatalogEntry::peak(DType dtype) const {
  const auto it = peak_flops.find(to_string(dtype));
  if (it == peak_flops.end()) return std::nullopt;
  return it->second;
}

std::optional<CatalogEntry> match_device(const DeviceDescription& device) {
  if (device.name.find("H200") == std::string::npos) return std::nullopt;
  CatalogEntry e;
  e.key = "h200-sxm";
  e.name = "NVIDIA H200 SXM (temporary stub)";
  e.bandwidth_bytes_per_s = 4.8e12;
  e.l2_bytes = 50e6;
  e.peak_flops = {{"fp32", 67e12}, {"tf32", 494.7e12}, {"bf16", 989.4e12}, {"fp16", 989.4e12}, {"fp8_e4m3", 1978.9e12}};
  return e;
}

MeasuredCeilings measured_ceilings(int, bool) { throw Error("measured_ceilings: not in this branch yet (stub)"); }
MeasuredCeilings ceilings_from_json(const nlohmann::json&) { throw Error("ceilings_from_json: not in this branch yet (stub)"); }

}  // namespace ridge
