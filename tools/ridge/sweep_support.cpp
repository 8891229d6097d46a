#include "sweep_support.hpp"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "measure/cuda/probes.hpp"
#include "ridge/writers.hpp"

namespace ridge::cli {

std::optional<CatalogEntry> datasheet_for(const DeviceDescription& device) {
  try {
    return match_device(device);
  } catch (const UsageError&) {
    throw;  // a broken user catalog file is the user's to fix
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void validate_ceilings_mode(const std::string& mode) {
  if (mode != "auto" && mode != "measure" && mode != "refresh" && mode != "none")
    throw UsageError(fmt::format("--ceilings must be auto, measure, refresh or none, got '{}'", mode));
}

namespace {

// The cache file measured_ceilings() writes (ceilings.hpp): $RIDGE_CACHE_DIR, else ~/.cache/ridge.
std::optional<std::filesystem::path> cached_ceilings_path(const std::string& uuid) {
  std::vector<std::filesystem::path> folders;
  if (const char* dir = std::getenv("RIDGE_CACHE_DIR"); dir && *dir) folders.emplace_back(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) folders.emplace_back(std::filesystem::path(xdg) / "ridge");
  if (const char* home = std::getenv("HOME"); home && *home)
    folders.emplace_back(std::filesystem::path(home) / ".cache" / "ridge");
  for (const auto& folder : folders) {
    const auto path = folder / fmt::format("ceilings-{}.json", uuid);
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return std::nullopt;
}

}  // namespace

std::optional<MeasuredCeilings> measured_ceilings_for(int device, const DeviceDescription& description,
                                                      const std::string& mode, std::FILE* out) {
  validate_ceilings_mode(mode);
  if (mode == "none") return std::nullopt;
  if (mode == "auto") {
    const auto path = cached_ceilings_path(description.uuid);
    if (!path) {
      fmt::print(out,
                 "No measured ceilings cached for this GPU: percentages are of the datasheet only. "
                 "Add --ceilings measure (tens of seconds, then cached) for % of measured.\n");
      return std::nullopt;
    }
    try {
      return ceilings_from_json(read_json_file(*path));
    } catch (const std::exception& e) {
      fmt::print(out, "Ignoring the cached ceilings in {} ({}); use --ceilings refresh to measure again.\n",
                 path->string(), e.what());
      return std::nullopt;
    }
  }
  return measured_ceilings(device, mode == "refresh");
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
