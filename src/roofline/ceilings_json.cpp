// The CPU half of the measured ceilings: their JSON form and where they are cached. (The
// measurement itself is in src/gpu/ceilings.cpp.)
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "ridge/ceilings.hpp"
#include "ridge/errors.hpp"

namespace ridge {

namespace {
constexpr const char* schema = "ridge-ceilings-1";
}

std::string ceilings_cache_path(const std::string& uuid) {
  std::filesystem::path dir;
  if (const char* d = std::getenv("RIDGE_CACHE_DIR"); d && *d)
    dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = std::filesystem::path(x) / "ridge";
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = std::filesystem::path(h) / ".cache" / "ridge";
  else
    dir = std::filesystem::temp_directory_path() / "ridge-cache";
  std::string safe = uuid.empty() ? "unknown-device" : uuid;
  for (auto& c : safe)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '_';
  return (dir / fmt::format("ceilings-{}.json", safe)).string();
}

nlohmann::json to_json(const MeasuredCeilings& c) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : c.records) records.push_back(to_json(r));
  return {
      {"schema", schema},
      {"device_uuid", c.device_uuid},
      {"device_name", c.device_name},
      {"measured_at_utc", c.measured_at_utc},
      {"measure_seconds", c.measure_seconds},
      {"hbm_bytes_per_s", c.hbm_bytes_per_s},
      {"hbm_kernel", c.hbm_kernel},
      {"l2_bytes_per_s", c.l2_bytes_per_s},
      {"fp32_flops_per_s", c.fp32_flops_per_s},
      {"fp32_observed_sm_mhz", c.fp32_observed_sm_mhz},
      {"max_sm_clock_mhz", c.max_sm_clock_mhz},
      {"tensor_flops_per_s", c.tensor_flops_per_s},
      {"empty_launch_us", c.empty_launch_us},
      {"empty_launch_graph_us", c.empty_launch_graph_us},
      {"clocks", to_json(c.clocks)},
      {"notes", c.notes},
      {"records", records},
  };
}

MeasuredCeilings ceilings_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("measured ceilings must be a JSON object");
  if (j.value("schema", std::string()) != schema)
    throw UsageError(fmt::format("measured ceilings have schema '{}', expected '{}'", j.value("schema", std::string("none")),
                                 schema));
  MeasuredCeilings c;
  try {
    c.device_uuid = j.at("device_uuid").get<std::string>();
    c.device_name = j.at("device_name").get<std::string>();
    c.measured_at_utc = j.at("measured_at_utc").get<std::string>();
    c.measure_seconds = j.value("measure_seconds", 0.0);
    c.hbm_bytes_per_s = j.at("hbm_bytes_per_s").get<double>();
    c.hbm_kernel = j.value("hbm_kernel", std::string());
    c.l2_bytes_per_s = j.at("l2_bytes_per_s").get<double>();
    c.fp32_flops_per_s = j.at("fp32_flops_per_s").get<double>();
    c.fp32_observed_sm_mhz = j.value("fp32_observed_sm_mhz", 0.0);
    c.max_sm_clock_mhz = j.value("max_sm_clock_mhz", 0.0);
    c.tensor_flops_per_s = j.at("tensor_flops_per_s").get<std::map<std::string, double>>();
    c.empty_launch_us = j.value("empty_launch_us", 0.0);
    c.empty_launch_graph_us = j.value("empty_launch_graph_us", 0.0);
    if (j.contains("clocks")) c.clocks = clock_reading_from_json(j["clocks"]);
    c.notes = j.value("notes", std::vector<std::string>{});
    if (j.contains("records"))
      for (const auto& r : j["records"]) c.records.push_back(record_from_json(r));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("malformed measured ceilings: {}", e.what()));
  }
  if (!(c.hbm_bytes_per_s > 0) || !(c.fp32_flops_per_s > 0))
    throw UsageError("measured ceilings lack the HBM bandwidth or the FP32 peak");
  return c;
}

}  // namespace ridge
