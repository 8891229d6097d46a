#include "ridge/result.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/version.hpp"

namespace ridge {

using nlohmann::json;

double Record::bytes_per_s() const {
  return (bytes > 0 && summary.median > 0) ? bytes / median_s() : 0;
}
double Record::flops_per_s() const {
  return (flops > 0 && summary.median > 0) ? flops / median_s() : 0;
}
double Record::intensity_flop_per_byte() const { return (bytes > 0 && flops > 0) ? flops / bytes : 0; }

void finalize(Record& record) { record.summary = summarize(record.samples_ms); }

json to_json(const ClockReading& c) {
  return json{{"sm_mhz", c.sm_mhz},
              {"memory_mhz", c.memory_mhz},
              {"power_w", c.power_w},
              {"temperature_c", c.temperature_c},
              {"throttle_reasons", c.throttle_reasons},
              {"source", c.source}};
}

json to_json(const DeviceDescription& d) {
  return json{{"index", d.index},
              {"name", d.name},
              {"uuid", d.uuid},
              {"compute_capability", fmt::format("{}.{}", d.compute_capability_major, d.compute_capability_minor)},
              {"sm_count", d.sm_count},
              {"l2_bytes", d.l2_bytes},
              {"memory_bytes", d.memory_bytes},
              {"memory_bus_bits", d.memory_bus_bits},
              {"max_sm_clock_mhz", d.max_sm_clock_mhz},
              {"max_memory_clock_mhz", d.max_memory_clock_mhz},
              {"driver_version", d.driver_version},
              {"runtime_version", d.runtime_version},
              {"catalog_key", d.catalog_key}};
}

static json summary_json(const Summary& s) {
  return json{{"count", s.count},       {"median_ms", s.median},
              {"min_ms", s.min},         {"max_ms", s.max},
              {"mean_ms", s.mean},       {"stddev_ms", s.stddev},
              {"cv", s.cv},              {"p10_ms", s.p10},
              {"p25_ms", s.p25},         {"p75_ms", s.p75},
              {"p90_ms", s.p90},         {"iqr_ms", s.iqr},
              {"median_ci_low_ms", s.median_ci_low},
              {"median_ci_high_ms", s.median_ci_high},
              {"confidence", s.confidence}};
}

json to_json(const Record& r) {
  json j = summary_json(r.summary);
  j["name"] = r.name;
  j["method"] = r.method;
  j["dtype"] = r.dtype;
  j["params"] = r.params;
  j["samples_ms"] = r.samples_ms;
  j["repeats_per_sample"] = r.repeats_per_sample;
  j["l2_flushed"] = r.l2_flushed;
  j["bytes"] = r.bytes;
  j["flops"] = r.flops;
  j["bytes_per_s"] = r.bytes_per_s();
  j["flops_per_s"] = r.flops_per_s();
  j["intensity_flop_per_byte"] = r.intensity_flop_per_byte();
  j["verification"] = r.verification;
  j["warnings"] = r.warnings;
  j["clocks_start"] = to_json(r.clocks_start);
  j["clocks_end"] = to_json(r.clocks_end);
  j["extra"] = r.extra;
  return j;
}

json to_json(const ResultSet& s) {
  const auto& c = s.context;
  json ctx{{"tool", c.tool},
           {"tool_version", c.tool_version},
           {"git_sha", c.git_sha},
           {"argv", c.argv},
           {"timestamp_utc", c.timestamp_utc},
           {"hostname", c.hostname},
           {"device", c.device ? to_json(*c.device) : json(nullptr)},
           {"clocks_start", to_json(c.clocks_start)},
           {"clocks_end", to_json(c.clocks_end)},
           {"predictions", c.predictions}};
  json records = json::array();
  for (const auto& r : s.records) records.push_back(to_json(r));
  return json{{"schema", "ridge.results"}, {"schema_version", result_schema_version}, {"context", ctx},
              {"records", records}};
}

ClockReading clock_reading_from_json(const json& j) {
  ClockReading c;
  c.sm_mhz = j.value("sm_mhz", -1.0);
  c.memory_mhz = j.value("memory_mhz", -1.0);
  c.power_w = j.value("power_w", -1.0);
  c.temperature_c = j.value("temperature_c", -1.0);
  c.throttle_reasons = j.value("throttle_reasons", std::int64_t{-1});
  c.source = j.value("source", std::string("none"));
  return c;
}

DeviceDescription device_from_json(const json& j) {
  DeviceDescription d;
  d.index = j.value("index", 0);
  d.name = j.value("name", std::string());
  d.uuid = j.value("uuid", std::string());
  const auto cc = j.value("compute_capability", std::string("0.0"));
  if (std::sscanf(cc.c_str(), "%d.%d", &d.compute_capability_major, &d.compute_capability_minor) != 2)
    d.compute_capability_major = d.compute_capability_minor = 0;
  d.sm_count = j.value("sm_count", 0);
  d.l2_bytes = j.value("l2_bytes", std::int64_t{0});
  d.memory_bytes = j.value("memory_bytes", std::int64_t{0});
  d.memory_bus_bits = j.value("memory_bus_bits", 0);
  d.max_sm_clock_mhz = j.value("max_sm_clock_mhz", 0.0);
  d.max_memory_clock_mhz = j.value("max_memory_clock_mhz", 0.0);
  d.driver_version = j.value("driver_version", 0);
  d.runtime_version = j.value("runtime_version", 0);
  d.catalog_key = j.value("catalog_key", std::string());
  return d;
}

Record record_from_json(const json& j) {
  if (!j.is_object()) throw UsageError("a record must be a JSON object");
  Record r;
  r.name = j.at("name").get<std::string>();
  r.method = j.value("method", std::string());
  r.dtype = j.value("dtype", std::string());
  r.params = j.value("params", json::object());
  r.samples_ms = j.at("samples_ms").get<std::vector<double>>();
  r.repeats_per_sample = j.value("repeats_per_sample", 1);
  r.l2_flushed = j.value("l2_flushed", false);
  r.bytes = j.value("bytes", 0.0);
  r.flops = j.value("flops", 0.0);
  r.verification = j.value("verification", std::string("not_checked"));
  r.warnings = j.value("warnings", std::vector<std::string>{});
  if (j.contains("clocks_start")) r.clocks_start = clock_reading_from_json(j["clocks_start"]);
  if (j.contains("clocks_end")) r.clocks_end = clock_reading_from_json(j["clocks_end"]);
  r.extra = j.value("extra", json::object());
  if (!r.samples_ms.empty()) finalize(r);
  return r;
}

ResultSet result_set_from_json(const json& j) {
  if (!j.is_object() || j.value("schema", std::string()) != "ridge.results")
    throw UsageError("not a ridge result file (missing \"schema\": \"ridge.results\")");
  const int version = j.value("schema_version", 0);
  if (version != result_schema_version)
    throw UsageError(fmt::format("result file has schema_version {}, this ridge reads {}", version,
                                 result_schema_version));
  ResultSet s;
  try {
    const auto& c = j.at("context");
    s.context.tool = c.value("tool", std::string("ridge"));
    s.context.tool_version = c.value("tool_version", std::string());
    s.context.git_sha = c.value("git_sha", std::string());
    s.context.argv = c.value("argv", std::vector<std::string>{});
    s.context.timestamp_utc = c.value("timestamp_utc", std::string());
    s.context.hostname = c.value("hostname", std::string());
    if (c.contains("device") && c["device"].is_object()) s.context.device = device_from_json(c["device"]);
    if (c.contains("clocks_start")) s.context.clocks_start = clock_reading_from_json(c["clocks_start"]);
    if (c.contains("clocks_end")) s.context.clocks_end = clock_reading_from_json(c["clocks_end"]);
    s.context.predictions = c.value("predictions", json::object());
    for (const auto& r : j.at("records")) s.records.push_back(record_from_json(r));
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("malformed ridge result file: {}", e.what()));
  }
  return s;
}

std::string utc_timestamp_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

RunContext make_context(int argc, const char* const* argv) {
  RunContext c;
  c.tool_version = std::string(tool_version());
  c.git_sha = std::string(git_sha());
  for (int i = 0; i < argc; ++i) c.argv.emplace_back(argv[i]);
  c.timestamp_utc = utc_timestamp_now();
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) c.hostname = host;
  return c;
}

}  // namespace ridge
