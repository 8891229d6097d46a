#include "sweep_support.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "measure/cuda/probes.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

std::optional<CatalogEntry> datasheet_for(const DeviceDescription& device) {
  return ceilings_for(device.index, device, CeilingsMode::none).datasheet;
}

void validate_ceilings_mode(const std::string& mode) { ceilings_mode_from_string(mode); }

std::optional<MeasuredCeilings> measured_ceilings_for(int device, const DeviceDescription& description,
                                                      const std::string& mode, std::FILE* out) {
  CeilingsLookup lookup = ceilings_for(device, description, ceilings_mode_from_string(mode));
  if (!lookup.note.empty()) fmt::print(out, "{}\n", lookup.note);
  return std::move(lookup.measured);
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

std::string method_label(Method method, bool automatic) {
  std::string label;
  switch (method) {
    case Method::graph_replay: label = "CUDA graph replay (launch-free)"; break;
    case Method::spin_hold: label = "events behind a spin-held stream (launch-free)"; break;
    case Method::cuda_events: label = "CUDA events per sample"; break;
    case Method::wall_sync: label = "synchronized wall clock"; break;
    case Method::wall_naive: label = "unsynchronized wall clock (wrong on purpose)"; break;
    case Method::cpu_wall: label = "CPU wall clock"; break;
  }
  return automatic ? label + ", chosen by --method auto" : label;
}

void write_plot(const std::string& path, const Plot& plot) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  write_text(path, render_svg(plot));
}

}  // namespace ridge::cli
