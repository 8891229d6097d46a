#include "ridge/result.hpp"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
  j["method"] = to_string(r.method);
  j["dtype"] = to_string(r.dtype);
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
  if (r.gate) j["gate"] = to_json(*r.gate);  // absent: judged by the threshold alone, as before
  return j;
}

json to_json(const RecordGate& g) {
  return json{{"mode", g.informational ? "informational" : "judged"},
              {"min_threshold", g.min_threshold},
              {"reason", g.reason}};
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

namespace {

// A JSON value as an error message shows it: short, and never throwing on invalid UTF-8.
std::string shown(const json& j) {
  if (j.is_number_float()) return fmt::format("{}", j.get<double>());
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

[[noreturn]] void wrong(const std::string& where, const char* expected, const json& got) {
  throw UsageError(fmt::format("{}: expected {}, got {}", where, expected, shown(got)));
}

// Typed access to the fields of one JSON object; each error names the JSON path of the value
// (e.g. records[3].samples_ms[7]). A missing or null field takes its default.
class Fields {
 public:
  Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) wrong(where_, "an object", j_);
  }
  std::string path(const char* key) const { return where_.empty() ? key : where_ + "." + key; }
  const json* find(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string text(const char* key, const std::string& fallback = "") const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_string()) wrong(path(key), "a string", *v);
    return v->get<std::string>();
  }
  std::string required_text(const char* key) const {
    if (!find(key)) throw UsageError(fmt::format("{}: missing (a string is required)", path(key)));
    return text(key);
  }
  /// A finite number, at least `min`.
  double number(const char* key, double fallback, double min = -HUGE_VAL) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < min)
      wrong(path(key), min == 0 ? "a finite number >= 0" : "a finite number", *v);
    return v->get<double>();
  }
  std::int64_t integer(const char* key, std::int64_t fallback, std::int64_t min = INT64_MIN,
                       std::int64_t max = INT64_MAX) const {
    const json* v = find(key);
    if (!v) return fallback;
    // Compared as unsigned or signed as stored, so 2^64-1 is not read as -1.
    const bool whole =
        v->is_number_unsigned()
            ? v->get<std::uint64_t>() <= std::uint64_t(max) && (min <= 0 || v->get<std::uint64_t>() >= std::uint64_t(min))
            : v->is_number_integer() && v->get<std::int64_t>() >= min && v->get<std::int64_t>() <= max;
    if (!whole) wrong(path(key), min > 0 ? "a positive integer" : "an integer", *v);
    return v->get<std::int64_t>();
  }
  bool flag(const char* key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) wrong(path(key), "true or false", *v);
    return v->get<bool>();
  }
  std::vector<std::string> texts(const char* key) const {
    std::vector<std::string> out;
    const json* v = find(key);
    if (!v) return out;
    if (!v->is_array()) wrong(path(key), "an array of strings", *v);
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) wrong(fmt::format("{}[{}]", path(key), i), "a string", (*v)[i]);
      out.push_back((*v)[i].get<std::string>());
    }
    return out;
  }
  /// An object field (absent: an empty object).
  json object(const char* key) const {
    const json* v = find(key);
    if (!v) return json::object();
    if (!v->is_object()) wrong(path(key), "an object", *v);
    return *v;
  }

 private:
  const json& j_;
  std::string where_;
};

ClockReading clock_reading_from_fields(const Fields& f) {
  ClockReading c;
  c.sm_mhz = f.number("sm_mhz", -1.0);
  c.memory_mhz = f.number("memory_mhz", -1.0);
  c.power_w = f.number("power_w", -1.0);
  c.temperature_c = f.number("temperature_c", -1.0);
  c.throttle_reasons = f.integer("throttle_reasons", -1);
  c.source = f.text("source", "none");
  return c;
}

template <class E, std::size_t N>
std::string names_of(const E (&all)[N]) {
  std::vector<std::string> names;
  for (E e : all) names.push_back(to_string(e));
  return fmt::format("{}", fmt::join(names, ", "));
}

// The value of `all` whose to_string name is the string at `key`; nullopt when absent. An
// unknown name is refused with the accepted ones ("records[3].method: unknown method 'foo'; ...").
template <class E, std::size_t N>
std::optional<E> named(const Fields& f, const char* key, const E (&all)[N], const char* what) {
  if (!f.find(key)) return std::nullopt;
  const std::string text = f.text(key);
  for (E e : all)
    if (to_string(e) == text) return e;
  throw UsageError(fmt::format("{}: unknown {} '{}'; expected one of {}", f.path(key), what, text, names_of(all)));
}

// Times must be positive; a record whose method is "none" (a check, such as decode.check_logits,
// that ridge stores with a sample of 0) carries no time, and its samples need only be >= 0.
std::vector<double> samples_from_json(const json& j, const std::string& where, bool timed) {
  if (!j.is_array()) wrong(where, "an array of times in ms", j);
  if (j.empty()) throw UsageError(fmt::format("{}: no samples; a record needs at least one time in ms", where));
  std::vector<double> samples;
  samples.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& v = j[i];
    const bool valid = v.is_number() && std::isfinite(v.get<double>()) && (timed ? v.get<double>() > 0 : v.get<double>() >= 0);
    if (!valid)
      wrong(fmt::format("{}[{}]", where, i), timed ? "a positive finite number" : "a finite number >= 0", v);
    samples.push_back(v.get<double>());
  }
  return samples;
}

}  // namespace

ClockReading clock_reading_from_json(const json& j, const std::string& where) {
  return clock_reading_from_fields(Fields(j, where));
}

DeviceDescription device_from_json(const json& j, const std::string& where) {
  const Fields f(j, where);
  DeviceDescription d;
  d.index = static_cast<int>(f.integer("index", 0, 0, INT32_MAX));
  d.name = f.text("name");
  d.uuid = f.text("uuid");
  const auto cc = f.text("compute_capability", "0.0");
  if (std::sscanf(cc.c_str(), "%d.%d", &d.compute_capability_major, &d.compute_capability_minor) != 2)
    d.compute_capability_major = d.compute_capability_minor = 0;
  d.sm_count = static_cast<int>(f.integer("sm_count", 0, 0, INT32_MAX));
  d.l2_bytes = f.integer("l2_bytes", 0, 0);
  d.memory_bytes = f.integer("memory_bytes", 0, 0);
  d.memory_bus_bits = static_cast<int>(f.integer("memory_bus_bits", 0, 0, INT32_MAX));
  d.max_sm_clock_mhz = f.number("max_sm_clock_mhz", 0.0, 0);
  d.max_memory_clock_mhz = f.number("max_memory_clock_mhz", 0.0, 0);
  d.driver_version = static_cast<int>(f.integer("driver_version", 0, 0, INT32_MAX));
  d.runtime_version = static_cast<int>(f.integer("runtime_version", 0, 0, INT32_MAX));
  d.catalog_key = f.text("catalog_key");
  return d;
}

RecordGate record_gate_from_json(const json& j, const std::string& where) {
  const Fields f(j, where);
  RecordGate g;
  const std::string mode = f.text("mode", "judged");
  if (mode != "judged" && mode != "informational")
    wrong(f.path("mode"), "\"judged\" or \"informational\"", *f.find("mode"));
  g.informational = mode == "informational";
  g.min_threshold = f.number("min_threshold", 0.0, 0);
  g.reason = f.text("reason");
  return g;
}

Record record_from_json(const json& j, const std::string& where) {
  const Fields f(j, where);
  Record r;
  r.name = f.required_text("name");
  r.method = named(f, "method", all_methods, "method").value_or(r.method);
  if (f.text("dtype").empty()) r.dtype = std::nullopt;  // "": not applicable
  else r.dtype = named(f, "dtype", all_dtypes, "dtype");
  r.params = f.object("params");
  const json* samples = f.find("samples_ms");
  if (!samples) throw UsageError(fmt::format("{}: missing (the record's times in ms are required)", f.path("samples_ms")));
  r.samples_ms = samples_from_json(*samples, f.path("samples_ms"), r.method != Method::none);
  r.repeats_per_sample = static_cast<int>(f.integer("repeats_per_sample", 1, 1, INT32_MAX));
  r.l2_flushed = f.flag("l2_flushed", false);
  r.bytes = f.number("bytes", 0.0, 0);
  r.flops = f.number("flops", 0.0, 0);
  r.verification = f.text("verification", "not_checked");
  r.warnings = f.texts("warnings");
  if (f.find("clocks_start")) r.clocks_start = clock_reading_from_json(*f.find("clocks_start"), f.path("clocks_start"));
  if (f.find("clocks_end")) r.clocks_end = clock_reading_from_json(*f.find("clocks_end"), f.path("clocks_end"));
  r.extra = f.object("extra");
  if (f.find("gate")) r.gate = record_gate_from_json(*f.find("gate"), f.path("gate"));
  finalize(r);
  return r;
}

DType dtype_of(const Record& r) {
  if (!r.dtype)
    throw UsageError(fmt::format("record '{}' ({}) has no dtype; it needs one of {}", r.name, to_string(r.method),
                                 names_of(all_dtypes)));
  return *r.dtype;
}

ResultSet result_set_from_json(const json& j) {
  if (!j.is_object() || !j.contains("schema") || j["schema"] != "ridge.results")
    throw UsageError("not a ridge result file (missing \"schema\": \"ridge.results\")");
  const Fields top(j, "");
  const std::int64_t version = top.integer("schema_version", 0);
  if (version != result_schema_version)
    throw UsageError(fmt::format("result file has schema_version {}, this ridge reads {}", version,
                                 result_schema_version));
  ResultSet s;
  if (!top.find("context")) throw UsageError("context: missing (an object is required)");
  const Fields c(*top.find("context"), "context");
  s.context.tool = c.text("tool", "ridge");
  s.context.tool_version = c.text("tool_version");
  s.context.git_sha = c.text("git_sha");
  s.context.argv = c.texts("argv");
  s.context.timestamp_utc = c.text("timestamp_utc");
  s.context.hostname = c.text("hostname");
  if (c.find("device")) s.context.device = device_from_json(*c.find("device"), "context.device");
  if (c.find("clocks_start")) s.context.clocks_start = clock_reading_from_json(*c.find("clocks_start"), "context.clocks_start");
  if (c.find("clocks_end")) s.context.clocks_end = clock_reading_from_json(*c.find("clocks_end"), "context.clocks_end");
  s.context.predictions = c.object("predictions");
  const json* records = top.find("records");
  if (!records) throw UsageError("records: missing (an array is required)");
  if (!records->is_array()) wrong("records", "an array of records", *records);
  s.records.reserve(records->size());
  for (std::size_t i = 0; i < records->size(); ++i)
    s.records.push_back(record_from_json((*records)[i], fmt::format("records[{}]", i)));
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
