// Chrome trace-event JSON, the format Perfetto and chrome://tracing open, written with the
// categories and argument names PyTorch's profiler (Kineto) uses, and read back.
//
// Written by hand with fmt rather than through a JSON DOM: a million-kernel trace has four
// million events, and building a DOM for them would cost gigabytes and seconds.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/events.hpp"
#include "ridge/version.hpp"
#include "ridge/writers.hpp"
#include "results/gzip.hpp"
#include "trace/model/json_fields.hpp"

namespace ridge::trace {

namespace {

/// Track ids of the host-side wait records: one per stream, apart from the kernel tracks so
/// that slices on each track nest.
constexpr std::int64_t sync_track_base = 1LL << 30;
constexpr std::uint32_t no_stream = 0xffffffffu;

void append_escaped(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", u);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

std::string escaped(std::string_view text) {
  std::string s;
  s.reserve(text.size() + 2);
  append_escaped(s, text);
  return s;
}

/// Writes `ns` nanoseconds as microseconds with exactly three decimals: no precision lost.
struct Us {
  Nanoseconds ns;
};

}  // namespace
}  // namespace ridge::trace

template <>
struct fmt::formatter<ridge::trace::Us> : fmt::formatter<std::string_view> {
  auto format(ridge::trace::Us v, fmt::format_context& ctx) const {
    return fmt::format_to(ctx.out(), "{}.{:03}", v.ns / 1000, v.ns % 1000);
  }
};

namespace ridge::trace {

namespace {

struct Writer {
  const Trace& trace;
  Nanoseconds origin;
  std::int64_t host_pid;
  std::string out;
  std::vector<std::string> names;  // escaped strings, by id
  std::unordered_map<std::uint32_t, const ApiCall*> api_by_correlation;
  std::set<std::pair<std::int64_t, std::int64_t>> threads;  // (pid, tid) that carry events
  std::uint64_t next_flow = 1;
  bool first = true;

  explicit Writer(const Trace& t) : trace(t), origin(t.origin()) {
    host_pid = t.process_id;
    // GPU tracks use the device index as pid (as PyTorch does): keep the host clear of them.
    std::set<std::uint32_t> devices;
    for (const auto& k : t.kernels) devices.insert(k.device);
    for (const auto& m : t.memcpys) devices.insert(m.device);
    for (const auto& m : t.memsets) devices.insert(m.device);
    for (const auto& s : t.syncs) devices.insert(s.device);
    while (devices.count(static_cast<std::uint32_t>(host_pid))) host_pid += 1000000;
    names.reserve(t.strings.size());
    for (std::size_t i = 0; i < t.strings.size(); ++i) names.push_back(escaped(t.strings.at(static_cast<std::uint32_t>(i))));
    api_by_correlation.reserve(t.api_calls.size());
    for (const auto& a : t.api_calls) {
      auto [it, inserted] = api_by_correlation.emplace(a.correlation, &a);
      if (!inserted && it->second->domain == ApiDomain::driver && a.domain == ApiDomain::runtime) it->second = &a;
    }
  }

  /// A profiled launch's counters as kernel args (Perfetto shows them); the rows themselves are
  /// in the metadata, which is what the reader reads back.
  void counter_args(std::uint32_t correlation) {
    if (trace.counters.rows.empty()) return;
    if (counter_rows.empty())
      for (const auto& r : trace.counters.rows) counter_rows.emplace(r.correlation, &r);
    const auto it = counter_rows.find(correlation);
    if (it == counter_rows.end()) return;
    put(R"(,"profiled":true,"counters":{)");
    for (std::size_t i = 0; i < trace.counters.metrics.size() && i < it->second->values.size(); ++i) {
      if (i > 0) put(",");
      const double v = it->second->values[i];
      fmt::format_to(std::back_inserter(out), "\"{}\":", trace.counters.metrics[i]);
      if (std::isfinite(v))
        fmt::format_to(std::back_inserter(out), "{}", v);
      else
        put("null");
    }
    put("}");
  }
  std::unordered_map<std::uint32_t, const CounterRow*> counter_rows;

  Us rel(Nanoseconds t) const { return Us{t >= origin ? t - origin : 0}; }
  static Us dur(Nanoseconds s, Nanoseconds e) { return Us{e > s ? e - s : 0}; }

  // Hot-path appenders: a million-kernel trace formats millions of numbers.
  void put(std::string_view text) { out.append(text); }
  void put_uint(std::uint64_t v) {
    char buffer[24];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    out.append(buffer, r.ptr);
  }
  void put_int(std::int64_t v) {
    char buffer[24];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    out.append(buffer, r.ptr);
  }
  /// Nanoseconds as microseconds with exactly three decimals.
  void put_us(Us v) {
    put_uint(v.ns / 1000);
    const auto f = static_cast<unsigned>(v.ns % 1000);
    const char frac[4] = {'.', static_cast<char>('0' + f / 100), static_cast<char>('0' + f / 10 % 10), static_cast<char>('0' + f % 10)};
    out.append(frac, 4);
  }
  /// ,"pid":P,"tid":T,"ts":X
  void put_track(std::int64_t pid, std::int64_t tid, Us ts) {
    put(",\"pid\":");
    put_int(pid);
    put(",\"tid\":");
    put_int(tid);
    put(",\"ts\":");
    put_us(ts);
  }

  void begin_event() {
    if (!first) out += ",\n";
    first = false;
  }

  std::int64_t pid_of_process(std::uint32_t process) const {
    return process == trace.process_id || process == 0 ? host_pid : static_cast<std::int64_t>(process);
  }

  void external(std::uint64_t id) {
    if (id == 0) return;
    put(",\"External id\":");
    put_uint(id);
  }

  void flow(const ApiCall* call, std::int64_t gpu_pid, std::int64_t gpu_tid, Nanoseconds gpu_start) {
    if (call == nullptr) return;
    const std::uint64_t id = next_flow++;
    begin_event();
    put(R"({"ph":"s","id":)");
    put_uint(id);
    put_track(pid_of_process(call->process), call->thread, rel(call->start));
    put(R"(,"cat":"ac2g","name":"ac2g"})");
    begin_event();
    put(R"({"ph":"f","id":)");
    put_uint(id);
    put_track(gpu_pid, gpu_tid, rel(gpu_start));
    put(R"(,"cat":"ac2g","name":"ac2g","bp":"e"})");
  }

  const ApiCall* launch_of(std::uint32_t correlation) const {
    if (correlation == 0) return nullptr;
    auto it = api_by_correlation.find(correlation);
    return it == api_by_correlation.end() ? nullptr : it->second;
  }

  void write_events() {
    auto o = std::back_inserter(out);
    for (const auto& a : trace.api_calls) {
      const std::int64_t pid = pid_of_process(a.process);
      threads.emplace(pid, a.thread);
      begin_event();
      put(a.domain == ApiDomain::runtime ? R"({"ph":"X","cat":"cuda_runtime","name":)"
                                         : R"({"ph":"X","cat":"cuda_driver","name":)");
      put(names[a.name]);
      put_track(pid, a.thread, rel(a.start));
      put(R"(,"dur":)");
      put_us(dur(a.start, a.end));
      put(R"(,"args":{"correlation":)");
      put_uint(a.correlation);
      external(a.external_id);
      out += "}}";
    }
    for (const auto& k : trace.kernels) {
      threads.emplace(k.device, k.stream);
      begin_event();
      put(R"({"ph":"X","cat":"kernel","name":)");
      put(names[k.name]);
      put_track(k.device, k.stream, rel(k.start));
      put(R"(,"dur":)");
      put_us(dur(k.start, k.end));
      put(R"(,"args":{"device":)");
      put_uint(k.device);
      put(R"(,"stream":)");
      put_uint(k.stream);
      put(R"(,"correlation":)");
      put_uint(k.correlation);
      external(k.external_id);
      put(R"(,"grid":[)");
      put_int(k.grid.x);
      put(",");
      put_int(k.grid.y);
      put(",");
      put_int(k.grid.z);
      put(R"(],"block":[)");
      put_int(k.block.x);
      put(",");
      put_int(k.block.y);
      put(",");
      put_int(k.block.z);
      put(R"(],"registers per thread":)");
      put_uint(k.registers_per_thread);
      put(R"(,"shared memory":)");
      put_uint(k.shared_memory_bytes);
      if (k.graph_id != 0) {
        put(R"(,"graph id":)");
        put_uint(k.graph_id);
      }
      if (k.queued != 0 && k.queued <= k.start) {  // relative, in exact ns: the "ts" fields are rounded
        put(R"(,"queued ns before start":)");
        put_uint(k.start - k.queued);
      }
      counter_args(k.correlation);
      out += "}}";
      flow(launch_of(k.correlation), k.device, k.stream, k.start);
    }
    for (const auto& m : trace.memcpys) {
      threads.emplace(m.device, m.stream);
      const double seconds = static_cast<double>(m.end > m.start ? m.end - m.start : 0) / 1e9;
      begin_event();
      fmt::format_to(o,
                     R"j({{"ph":"X","cat":"gpu_memcpy","name":"Memcpy {}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"device":{},"stream":{},"correlation":{},"bytes":{},"memory bandwidth (GB/s)":{:.3f})j",
                     to_string(m.kind), m.device, m.stream, rel(m.start), dur(m.start, m.end), m.device, m.stream,
                     m.correlation, m.bytes, seconds > 0 ? static_cast<double>(m.bytes) / seconds / 1e9 : 0.0);
      external(m.external_id);
      out += "}}";
      flow(launch_of(m.correlation), m.device, m.stream, m.start);
    }
    for (const auto& m : trace.memsets) {
      threads.emplace(m.device, m.stream);
      begin_event();
      fmt::format_to(o,
                     R"({{"ph":"X","cat":"gpu_memset","name":"Memset","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"device":{},"stream":{},"correlation":{},"bytes":{})",
                     m.device, m.stream, rel(m.start), dur(m.start, m.end), m.device, m.stream, m.correlation, m.bytes);
      external(m.external_id);
      out += "}}";
      flow(launch_of(m.correlation), m.device, m.stream, m.start);
    }
    for (const auto& s : trace.syncs) {
      const std::int64_t tid = s.stream == no_stream ? sync_track_base - 1 : sync_track_base + s.stream;
      threads.emplace(s.device, tid);
      begin_event();
      fmt::format_to(o,
                     R"({{"ph":"X","cat":"cuda_sync","name":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"device":{},"stream":{},"correlation":{}}}}})",
                     to_string(s.kind), s.device, tid, rel(s.start), dur(s.start, s.end), s.device,
                     s.stream == no_stream ? -1 : static_cast<std::int64_t>(s.stream), s.correlation);
    }
    for (const auto& r : trace.ranges) {
      const std::int64_t pid = pid_of_process(r.process);
      threads.emplace(pid, r.thread);
      begin_event();
      if (r.marker)
        fmt::format_to(o, R"({{"ph":"i","s":"t","cat":"user_annotation","name":{},"pid":{},"tid":{},"ts":{}}})",
                       names[r.name], pid, r.thread, rel(r.start));
      else
        fmt::format_to(o,
                       R"({{"ph":"X","cat":"user_annotation","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"depth":{}}}}})",
                       names[r.name], pid, r.thread, rel(r.start), dur(r.start, r.end), r.depth);
    }
  }

  void write_metadata() {
    auto o = std::back_inserter(out);
    std::set<std::int64_t> pids;
    for (const auto& [pid, tid] : threads) pids.insert(pid);
    pids.insert(host_pid);
    for (std::int64_t pid : pids) {
      std::string name;
      int sort = 0;
      if (pid == host_pid) {
        name = fmt::format("host: {} (pid {})", trace.command.empty() ? std::string("process") : trace.command.substr(0, 120),
                           trace.process_id);
      } else if (pid >= 0 && pid < 1000000 && (trace.device_names.count(static_cast<std::uint32_t>(pid)) || pid < 64)) {
        auto it = trace.device_names.find(static_cast<std::uint32_t>(pid));
        name = fmt::format("GPU {}{}", pid, it != trace.device_names.end() ? ": " + it->second : std::string());
        sort = 1000 + static_cast<int>(pid);
      } else {
        name = fmt::format("process {}", pid);
        sort = 500;
      }
      begin_event();
      fmt::format_to(o, R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid, escaped(name));
      begin_event();
      fmt::format_to(o, R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid, sort);
    }
    for (const auto& [pid, tid] : threads) {
      std::string name;
      if (pid == host_pid || !(pid >= 0 && pid < 1000000)) name = fmt::format("thread {}", tid);
      else if (tid == sync_track_base - 1) name = "host waits: context/event sync";
      else if (tid >= sync_track_base) name = fmt::format("host waits: stream {}", tid - sync_track_base);
      else name = fmt::format("stream {}", tid);
      begin_event();
      fmt::format_to(o, R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, tid, escaped(name));
      begin_event();
      fmt::format_to(o, R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid, tid,
                     tid >= sync_track_base ? tid : tid % sync_track_base);
    }
  }

  std::string run() {
    out.reserve(256 + trace.kernels.size() * 560 + (trace.api_calls.size() + trace.memcpys.size()) * 200 +
                trace.ranges.size() * 160);
    nlohmann::json meta{{"format", "ridge.chrome_trace/1"},
                        {"tool_version", tool_version()},
                        {"origin_ns", origin},
                        {"host_pid", host_pid},
                        {"process_id", trace.process_id},
                        {"command", trace.command},
                        {"window", trace.window},
                        {"dropped_records", trace.dropped_records},
                        {"incomplete_records", trace.incomplete_records},
                        {"rejected_events", nlohmann::json::array()},
                        {"collection_start_ns", trace.collection_start},
                        {"collection_stop_ns", trace.collection_stop},
                        {"devices", nlohmann::json::object()}};
    for (const auto& [id, name] : trace.device_names) meta["devices"][std::to_string(id)] = name;
    if (!trace.counters.metrics.empty()) meta["counters"] = to_json(trace.counters);
    if (trace.schedule) {
      meta["schedule"] = to_json(*trace.schedule);
      meta["recorded_steps"] = nlohmann::json::array();
      for (const auto& step : trace.recorded_steps)
        meta["recorded_steps"].push_back({{"number", step.number}, {"start_ns", step.start_ns}, {"end_ns", step.end_ns}});
    }
    for (const auto& r : trace.rejected_events) meta["rejected_events"].push_back({{"reason", r.reason}, {"count", r.count}});
    const DistributedInfo& d = trace.distributed;
    if (d.known())
      meta["distributed"] = {{"launcher", d.launcher}, {"job", d.job}, {"host", d.host}, {"local_rank", d.local_rank}};
    out += "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",";
    // The key Holistic Trace Analysis reads to know which rank a file is.
    if (d.known())
      fmt::format_to(std::back_inserter(out), "\"distributedInfo\":{},\n",
                     nlohmann::json{{"rank", d.rank}, {"world_size", d.world_size}, {"backend", d.backend}}.dump(
                         -1, ' ', false, nlohmann::json::error_handler_t::replace));
    fmt::format_to(std::back_inserter(out), "\"baseTimeNanoseconds\":{},\n\"ridge\":{},\n\"traceEvents\":[\n", origin,
                   meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    write_events();
    write_metadata();
    out += "\n]}\n";
    return std::move(out);
  }
};

}  // namespace

std::string to_chrome_json(const Trace& trace) { return Writer(trace).run(); }

void write_chrome_trace(const Trace& trace, const std::string& path) { write_text(path, to_chrome_json(trace)); }

// ---- reading back ------------------------------------------------------------------------------

namespace {

Dim3 dim3_of(const nlohmann::json& args, const char* key) {
  Dim3 d;
  auto it = args.find(key);
  if (it == args.end() || !it->is_array() || it->size() != 3) return d;
  std::int32_t v[3] = {};
  for (int i = 0; i < 3; ++i) {
    const auto& x = (*it)[i];
    if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() > 0x7fffffff)
      throw UsageError(fmt::format("not a trace ridge can read: \"{}\" must hold three non-negative integers", key));
    v[i] = static_cast<std::int32_t>(x.get<std::int64_t>());
  }
  return Dim3{v[0], v[1], v[2]};
}

}  // namespace

namespace {

/// The event list of a Chrome trace document: {"traceEvents": [...]} or a bare array.
const nlohmann::json& trace_events(const nlohmann::json& doc) {
  if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) return doc["traceEvents"];
  if (doc.is_array()) return doc;
  throw UsageError("not a Chrome trace: no \"traceEvents\" array (ridge reads traces written by `ridge trace` or PyTorch's profiler)");
}

/// What ridge's writer stores beside the events (absent in PyTorch's traces): the clock's origin,
/// the host process, how the trace was collected.
struct RidgeMetadata {
  Nanoseconds origin = 0;
  std::int64_t host_pid = -1;
};

RidgeMetadata read_ridge_metadata(const nlohmann::json& doc, Trace& trace) {
  RidgeMetadata meta;
  if (!doc.is_object() || !doc.contains("ridge")) return meta;
  const auto& m = doc["ridge"];
  using detail::integer_field;
  meta.origin = integer_field(m, "origin_ns", Nanoseconds{0}, "ridge");
  meta.host_pid = integer_field(m, "host_pid", std::int64_t{-1}, "ridge");
  trace.process_id = integer_field(m, "process_id", std::uint32_t{0}, "ridge");
  trace.command = m.value("command", std::string());
  trace.window = m.value("window", std::string());
  trace.dropped_records = integer_field(m, "dropped_records", std::uint64_t{0}, "ridge");
  trace.incomplete_records = integer_field(m, "incomplete_records", std::uint64_t{0}, "ridge");
  if (m.contains("rejected_events"))
    for (const auto& r : m["rejected_events"])
      trace.count_rejected(r.at("reason").get<std::string>(), integer_field(r, "count", std::uint64_t{0}, "ridge.rejected_events"));
  trace.collection_start = integer_field(m, "collection_start_ns", Nanoseconds{0}, "ridge");
  trace.collection_stop = integer_field(m, "collection_stop_ns", Nanoseconds{0}, "ridge");
  if (m.contains("devices"))
    for (const auto& [k, v] : m["devices"].items()) {
      std::uint32_t device = 0;
      const auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), device);
      if (ec != std::errc() || ptr != k.data() + k.size() || !v.is_string())
        throw UsageError(fmt::format("not a trace ridge can read: ridge.devices maps device numbers to names, not "
                                     "'{}'",
                                     k));
      trace.device_names[device] = v.get<std::string>();
    }
  if (const auto c = m.find("counters"); c != m.end()) trace.counters = kernel_counters_from_json(*c);
  if (const auto sc = m.find("schedule"); sc != m.end()) {
    trace.schedule = trace_schedule_from_json(*sc);
    if (const auto steps = m.find("recorded_steps"); steps != m.end()) {
      if (!steps->is_array()) throw UsageError("not a trace ridge can read: ridge.recorded_steps must be an array");
      for (const auto& step : *steps)
        trace.recorded_steps.push_back({integer_field(step, "number", std::uint64_t{0}, "ridge.recorded_steps"),
                                        integer_field(step, "start_ns", Nanoseconds{0}, "ridge.recorded_steps"),
                                        integer_field(step, "end_ns", Nanoseconds{0}, "ridge.recorded_steps")});
    }
  }
  if (const auto d = m.find("distributed"); d != m.end() && d->is_object()) {
    trace.distributed.launcher = d->value("launcher", std::string());
    trace.distributed.job = d->value("job", std::string());
    trace.distributed.host = d->value("host", std::string());
    trace.distributed.local_rank = detail::integer_field(*d, "local_rank", -1, "ridge.distributed");
  }
  return meta;
}

}  // namespace

namespace {

/// Chrome trace times as nanoseconds, wide enough that no sum of them overflows before it is checked.
using WideNs = __int128;

/// |time| in microseconds beyond which nanoseconds no longer fit in 64 bits (292 years).
constexpr double max_abs_us = 9.2e15;

constexpr const char* negative_duration_reason =
    "dropped: Chrome trace events with a negative duration (they end before they begin)";

/// A JSON value as an error message shows it: short, and never throwing on invalid UTF-8.
std::string shown(const nlohmann::json& j) {
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

/// The categories the reader turns into events; every other event is skipped unread.
bool read_by_ridge(const std::string& ph, const std::string& cat) {
  if (ph == "i" || ph == "I") return cat == "user_annotation";
  if (ph != "X") return false;
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_runtime" ||
         cat == "cuda_driver" || cat == "cuda_sync" || cat == "user_annotation";
}

/// Reads one event's times: validates "ts" and "dur" (microseconds) and returns [start, end) in
/// nanoseconds relative to the file's origin, or nothing for a negative duration.
struct EventTimes {
  const std::string& source;
  std::string list;  // JSON path of the event list: "traceEvents", or "" for a bare array

  std::string path(std::size_t index, const char* key) const { return fmt::format("{}[{}].{}", list, index, key); }

  WideNs field_ns(const nlohmann::json& e, std::size_t index, const char* key, bool required) const {
    auto it = e.find(key);
    if (it == e.end()) {
      if (!required) return 0;
      throw UsageError(fmt::format("{}: {}: missing (every event needs a time in microseconds)", source, path(index, key)));
    }
    if (!it->is_number())
      throw UsageError(fmt::format("{}: {}: expected a number of microseconds, got {}", source, path(index, key), shown(*it)));
    const double us = it->get<double>();
    if (!std::isfinite(us) || std::fabs(us) > max_abs_us)
      throw UsageError(fmt::format("{}: {}: {} us is out of range (a time must be finite and within +-9.2e15 us, "
                                   "292 years)",
                                   source, path(index, key), shown(*it)));
    return static_cast<WideNs>(std::llround(us * 1000.0));
  }

  std::optional<std::pair<WideNs, WideNs>> read(const nlohmann::json& e, std::size_t index, bool has_duration) const {
    const WideNs start = field_ns(e, index, "ts", true);
    const WideNs length = has_duration ? field_ns(e, index, "dur", false) : 0;
    if (length < 0) return std::nullopt;
    return std::pair{start, start + length};
  }
};

/// A PyTorch/ridge trace's "distributedInfo" (rank, world size, backend), where it is well formed.
void read_distributed_info(const nlohmann::json& doc, Trace& trace) {
  const auto d = doc.find("distributedInfo");  // end() for an array
  if (d == doc.end() || !d->is_object()) return;
  const auto rank = d->find("rank");
  if (rank == d->end() || !rank->is_number_integer() || rank->get<std::int64_t>() < 0 ||
      rank->get<std::int64_t>() >= (1 << 24))
    return;
  trace.distributed.rank = rank->get<int>();
  const auto world = d->find("world_size");
  const int world_size = world != d->end() && world->is_number_integer() && world->get<std::int64_t>() > 0 &&
                                 world->get<std::int64_t>() < (1 << 24)
                             ? world->get<int>()
                             : 0;
  trace.distributed.world_size = std::max(world_size, trace.distributed.rank + 1);
  const auto backend = d->find("backend");
  trace.distributed.backend = backend != d->end() && backend->is_string() ? backend->get<std::string>() : "nccl";
}

/// The process id of an event of process `pid`: the host process's id is ridge's, others are kept.
std::uint32_t process_of(std::int64_t pid, std::int64_t host_pid, const Trace& trace) {
  return pid == host_pid ? trace.process_id : static_cast<std::uint32_t>(pid);
}

/// Adds one event the reader reads (read_by_ridge) to the trace, at [start, end).
void add_event(Trace& trace, const nlohmann::json& e, const std::string& ph, const std::string& cat, Nanoseconds start,
               Nanoseconds end, std::int64_t host_pid) {
  static const nlohmann::json no_args = nlohmann::json::object();
  const std::string name = e.value("name", std::string());
  const auto args_it = e.find("args");
  const nlohmann::json& args = args_it != e.end() && args_it->is_object() ? *args_it : no_args;
  const std::int64_t pid = detail::id_field(e, "pid", 0), tid = detail::id_field(e, "tid", 0);
  const auto correlation = static_cast<std::uint32_t>(detail::id_field(args, "correlation", 0));
  const auto external = static_cast<std::uint64_t>(detail::id_field(args, "External id", 0));
  const auto device = static_cast<std::uint32_t>(detail::id_field(args, "device", pid));
  const auto stream = static_cast<std::uint32_t>(detail::id_field(args, "stream", tid));
  // What every GPU activity (kernel, memcpy, memset) carries.
  auto place_on_gpu = [&](auto& activity) {
    activity.device = device;
    activity.stream = stream;
    activity.start = start;
    activity.end = end;
    activity.correlation = correlation;
    activity.external_id = external;
  };
  if (cat == "kernel") {
    Kernel k;
    k.name = trace.strings.intern(name);
    place_on_gpu(k);
    k.grid = dim3_of(args, "grid");
    k.block = dim3_of(args, "block");
    k.registers_per_thread = static_cast<std::uint32_t>(detail::id_field(args, "registers per thread", 0));
    k.shared_memory_bytes = static_cast<std::uint32_t>(detail::id_field(args, "shared memory", 0));
    k.graph_id = static_cast<std::uint32_t>(detail::id_field(args, "graph id", 0));
    if (const std::int64_t before = detail::id_field(args, "queued ns before start", -1); before >= 0)
      k.queued = k.start > static_cast<Nanoseconds>(before) ? k.start - static_cast<Nanoseconds>(before) : 0;
    trace.kernels.push_back(k);
  } else if (cat == "gpu_memcpy") {
    Memcpy m;
    // "Memcpy HtoD" (ours) or "Memcpy HtoD (Pageable -> Device)" (PyTorch).
    std::string kind = name.rfind("Memcpy ", 0) == 0 ? name.substr(7, 4) : std::string();
    m.kind = memcpy_kind_from_string(kind);
    m.bytes = static_cast<std::uint64_t>(detail::id_field(args, "bytes", 0));
    place_on_gpu(m);
    trace.memcpys.push_back(m);
  } else if (cat == "gpu_memset") {
    Memset m;
    m.bytes = static_cast<std::uint64_t>(detail::id_field(args, "bytes", 0));
    place_on_gpu(m);
    trace.memsets.push_back(m);
  } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
    ApiCall a;
    a.domain = cat == "cuda_runtime" ? ApiDomain::runtime : ApiDomain::driver;
    a.name = trace.strings.intern(name);
    a.process = process_of(pid, host_pid, trace);
    a.thread = static_cast<std::uint32_t>(tid);
    a.start = start;
    a.end = end;
    a.correlation = correlation;
    a.external_id = external;
    trace.api_calls.push_back(a);
  } else if (cat == "cuda_sync") {
    Sync s;
    s.kind = sync_kind_from_string(name);
    s.device = device;
    const std::int64_t st = detail::id_field(args, "stream", -1);
    s.stream = st < 0 ? no_stream : static_cast<std::uint32_t>(st);
    s.start = start;
    s.end = end;
    s.correlation = correlation;
    trace.syncs.push_back(s);
  } else {  // user_annotation
    NvtxRange r;
    r.name = trace.strings.intern(name);
    r.process = process_of(pid, host_pid, trace);
    r.thread = static_cast<std::uint32_t>(tid);
    r.start = start;
    r.marker = ph != "X";
    r.end = r.marker ? start : end;
    trace.ranges.push_back(r);
  }
}

}  // namespace

Trace parse_chrome_json(const std::string& text, const std::string& source) {
  const nlohmann::json doc = parse_json(text, source);
  const nlohmann::json* events_ptr = nullptr;
  try {
    events_ptr = &trace_events(doc);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", source, e.what()));
  }
  const nlohmann::json& events = *events_ptr;
  const EventTimes times{source, doc.is_array() ? std::string() : std::string("traceEvents")};
  Trace trace;
  RidgeMetadata meta;
  try {
    meta = read_ridge_metadata(doc, trace);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: ridge: malformed metadata: {}", source, e.what()));
  }
  read_distributed_info(doc, trace);
  const std::int64_t host_pid = meta.host_pid;
  // Which events are read, and the earliest time among them: negative times are shifted to 0.
  std::vector<bool> read(events.size(), false);
  WideNs earliest = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (!e.is_object()) continue;
    auto text_field = [&](const char* key) {
      auto it = e.find(key);
      return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string ph = text_field("ph");
    if (!read_by_ridge(ph, text_field("cat"))) continue;
    read[i] = true;
    if (auto t = times.read(e, i, ph == "X")) earliest = std::min(earliest, static_cast<WideNs>(meta.origin) + t->first);
  }
  const WideNs shift = -earliest;  // >= 0
  if (shift > 0) {  // the file's own clock fields move with the events
    if (trace.collection_start) trace.collection_start += static_cast<Nanoseconds>(shift);
    if (trace.collection_stop) trace.collection_stop += static_cast<Nanoseconds>(shift);
    for (auto& step : trace.recorded_steps) {
      step.start_ns += static_cast<Nanoseconds>(shift);
      step.end_ns += static_cast<Nanoseconds>(shift);
    }
  }

  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!read[i]) continue;
    const auto& e = events[i];
    try {
      const std::string ph = e.value("ph", std::string());
      const std::string cat = e.value("cat", std::string());
      const auto span = times.read(e, i, ph == "X");
      if (!span) {
        trace.count_rejected(negative_duration_reason);
        continue;
      }
      const WideNs wide_start = static_cast<WideNs>(meta.origin) + span->first + shift;
      const WideNs wide_end = static_cast<WideNs>(meta.origin) + span->second + shift;
      if (wide_end > static_cast<WideNs>(std::numeric_limits<Nanoseconds>::max()))
        throw UsageError(fmt::format("{}: {}[{}]: ends beyond 2^64 ns after the file's origin", source, times.list, i));
      const auto start = static_cast<Nanoseconds>(wide_start), end = static_cast<Nanoseconds>(wide_end);
      add_event(trace, e, ph, cat, start, end, host_pid);
    } catch (const UsageError& x) {
      const std::string what = x.what();
      if (what.rfind(source, 0) == 0) throw;  // already names the file and the path
      throw UsageError(fmt::format("{}: {}[{}]: malformed event: {}", source, times.list, i, what));
    } catch (const std::exception& x) {  // a field of the wrong type or size (nlohmann, stoll)
      throw UsageError(fmt::format("{}: {}[{}]: malformed event: {}", source, times.list, i, x.what()));
    }
  }
  finalize(trace);
  return trace;
}

Trace load_chrome_trace(const std::string& path) {
  return parse_chrome_json(detail::gunzip_if_compressed(read_text(path), path), path);
}

bool chrome_trace_has_counters(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (in.peek() == 0x1f) {  // gzip's magic: stored traces are kept compressed; read it whole
    try {
      const Trace t = load_chrome_trace(path);
      return !t.counters.metrics.empty();
    } catch (const std::exception&) {
      return false;
    }
  }
  std::string head;
  std::string chunk(1 << 16, '\0');
  // ridge's writer puts "ridge":{...,"counters":{...}} before "traceEvents".
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    head.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    const auto events = head.find("\"traceEvents\"");
    const auto counters = head.find("\"counters\":{\"captured_launches\"");  // keys sorted: the first
    if (counters != std::string::npos && (events == std::string::npos || counters < events)) return true;
    if (events != std::string::npos) return false;
  }
  return false;
}

}  // namespace ridge::trace
