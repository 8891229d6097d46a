// Chrome trace-event JSON, the format Perfetto and chrome://tracing open, written with the
// categories and argument names PyTorch's profiler (Kineto) uses, and read back.
//
// Written by hand with fmt rather than through a JSON DOM: a million-kernel trace has four
// million events, and building a DOM for them would cost gigabytes and seconds.
#include <algorithm>
#include <charconv>
#include <cmath>
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
#include "trace/model/chrome_metadata.hpp"
#include "trace/model/chunked_file.hpp"
#include "trace/model/event_fields.hpp"
#include "trace/model/event_tokens.hpp"
#include "trace/model/json_fields.hpp"

namespace ridge::trace {

namespace {

using detail::EventArg;
using detail::EventCategory;
using detail::name_of;

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
    api_by_correlation = detail::launch_calls_by_correlation(t);
  }

  /// A profiled launch's counters as kernel args (Perfetto shows them); the rows themselves are
  /// in the metadata, which is what the reader reads back.
  void counter_args(const Kernel& k) {
    if (trace.counters.rows.empty()) return;
    const CounterRow* row = counter_rows.find(k);
    if (row == nullptr) return;
    key(EventArg::profiled);
    put("true");
    key(EventArg::counters);
    put("{");
    for (std::size_t i = 0; i < trace.counters.metrics.size() && i < row->values.size(); ++i) {
      if (i > 0) put(",");
      const double v = row->values[i];
      fmt::format_to(std::back_inserter(out), "\"{}\":", trace.counters.metrics[i]);
      if (std::isfinite(v))
        fmt::format_to(std::back_inserter(out), "{}", v);
      else
        put("null");
    }
    put("}");
  }
  CounterRowIndex counter_rows{trace.counters};

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

  /// {"ph":"X","cat":C,"name": (the name follows).
  void begin_complete(EventCategory c) {
    put(R"({"ph":"X","cat":")");
    put(name_of(c));
    put(R"(","name":)");
  }
  /// ,"dur":D,"args": (the arguments follow, the first with `first` set).
  void put_duration_and_open_args(Us duration) {
    put(R"(,"dur":)");
    put_us(duration);
    put(R"(,"args":)");
  }
  /// An argument's key: {"name": for the first of an event, ,"name": for the others.
  void key(EventArg a, bool first = false) {
    put(first ? R"({")" : R"(,")");
    put(name_of(a));
    put(R"(":)");
  }
  void arg_id(detail::IdArg a, std::uint64_t v, bool first = false) {
    key(a.arg, first);
    put_uint(v);
  }
  void arg_signed(detail::IdArg a, std::int64_t v, bool first = false) {
    key(a.arg, first);
    put_int(v);
  }
  void arg_dims(detail::DimsArg a, Dim3 d) {
    key(a.arg);
    put("[");
    put_int(d.x);
    put(",");
    put_int(d.y);
    put(",");
    put_int(d.z);
    put("]");
  }
  /// device, stream and correlation: the first arguments of every GPU activity.
  void gpu_args(std::uint32_t device, std::int64_t stream, std::uint32_t correlation) {
    arg_id(EventArg::device, device, true);
    arg_signed(EventArg::stream, stream);
    arg_id(EventArg::correlation, correlation);
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
    arg_id(EventArg::external_id, id);
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
    for (const auto& a : trace.api_calls) {
      const std::int64_t pid = pid_of_process(a.process);
      threads.emplace(pid, a.thread);
      begin_event();
      begin_complete(a.domain == ApiDomain::runtime ? EventCategory::runtime : EventCategory::driver);
      put(names[a.name]);
      put_track(pid, a.thread, rel(a.start));
      put_duration_and_open_args(dur(a.start, a.end));
      arg_id(EventArg::correlation, a.correlation, true);
      external(a.external_id);
      out += "}}";
    }
    for (const auto& k : trace.kernels) {
      threads.emplace(k.device, k.stream);
      begin_event();
      begin_complete(EventCategory::kernel);
      put(names[k.name]);
      put_track(k.device, k.stream, rel(k.start));
      put_duration_and_open_args(dur(k.start, k.end));
      gpu_args(k.device, k.stream, k.correlation);
      external(k.external_id);
      arg_dims(EventArg::grid, k.grid);
      arg_dims(EventArg::block, k.block);
      arg_id(EventArg::registers, k.registers_per_thread);
      arg_id(EventArg::shared_memory, k.shared_memory_bytes);
      if (k.graph_id != 0) arg_id(EventArg::graph_id, k.graph_id);
      // relative, in exact ns: the "ts" fields are rounded
      if (k.queued != 0 && k.queued <= k.start) arg_id(EventArg::queued_before, k.start - k.queued);
      counter_args(k);
      out += "}}";
      flow(launch_of(k.correlation), k.device, k.stream, k.start);
    }
    for (const auto& m : trace.memcpys) {
      threads.emplace(m.device, m.stream);
      const double seconds = static_cast<double>(m.end > m.start ? m.end - m.start : 0) / 1e9;
      begin_event();
      begin_complete(EventCategory::memcpy);
      put(R"("Memcpy )");
      put(to_string(m.kind));
      put("\"");
      put_track(m.device, m.stream, rel(m.start));
      put_duration_and_open_args(dur(m.start, m.end));
      gpu_args(m.device, m.stream, m.correlation);
      arg_id(EventArg::bytes, m.bytes);
      key(EventArg::bandwidth);
      fmt::format_to(std::back_inserter(out), "{:.3f}", seconds > 0 ? static_cast<double>(m.bytes) / seconds / 1e9 : 0.0);
      external(m.external_id);
      out += "}}";
      flow(launch_of(m.correlation), m.device, m.stream, m.start);
    }
    for (const auto& m : trace.memsets) {
      threads.emplace(m.device, m.stream);
      begin_event();
      begin_complete(EventCategory::memset);
      put(R"("Memset")");
      put_track(m.device, m.stream, rel(m.start));
      put_duration_and_open_args(dur(m.start, m.end));
      gpu_args(m.device, m.stream, m.correlation);
      arg_id(EventArg::bytes, m.bytes);
      external(m.external_id);
      out += "}}";
      flow(launch_of(m.correlation), m.device, m.stream, m.start);
    }
    for (const auto& s : trace.syncs) {
      const std::int64_t tid = s.stream == no_stream ? sync_track_base - 1 : sync_track_base + s.stream;
      threads.emplace(s.device, tid);
      begin_event();
      begin_complete(EventCategory::sync);
      put("\"");
      put(to_string(s.kind));
      put("\"");
      put_track(s.device, tid, rel(s.start));
      put_duration_and_open_args(dur(s.start, s.end));
      gpu_args(s.device, s.stream == no_stream ? -1 : static_cast<std::int64_t>(s.stream), s.correlation);
      out += "}}";
    }
    for (const auto& r : trace.ranges) {
      const std::int64_t pid = pid_of_process(r.process);
      threads.emplace(pid, r.thread);
      begin_event();
      if (r.marker) {
        put(R"({"ph":"i","s":"t","cat":")");
        put(name_of(EventCategory::nvtx));
        put(R"(","name":)");
        put(names[r.name]);
        put_track(pid, r.thread, rel(r.start));
        put("}");
      } else {
        begin_complete(EventCategory::nvtx);
        put(names[r.name]);
        put_track(pid, r.thread, rel(r.start));
        put_duration_and_open_args(dur(r.start, r.end));
        arg_signed(EventArg::depth, r.depth, true);
        out += "}}";
      }
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
    const nlohmann::json meta = detail::ridge_metadata_json(trace, origin, host_pid);
    const DistributedInfo& d = trace.distributed;
    out += "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",";
    // The key Holistic Trace Analysis reads to know which rank a file is.
    if (d.known())
      fmt::format_to(std::back_inserter(out), "\"{}\":{},\n", name_of(EventArg::distributed),
                     json_text(detail::distributed_info_json(d), -1));
    fmt::format_to(std::back_inserter(out), "\"baseTimeNanoseconds\":{},\n\"{}\":{},\n\"traceEvents\":[\n", origin,
                   name_of(EventArg::ridge), json_text(meta, -1));
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

Dim3 dim3_of(const nlohmann::json& args, detail::DimsArg arg) {
  const char* key = arg.name();
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

/// Whether `cat` is the category of events the reader reads (any but the metadata's).
bool is_event_category(std::string_view cat) {
  const EventCategory c = detail::event_category_named(cat);
  return c != EventCategory::count && c != EventCategory::ridge;
}

/// The categories the reader turns into events; every other event is skipped unread.
bool read_by_ridge(std::string_view ph, std::string_view cat) {
  if (ph == "i" || ph == "I") return cat == name_of(EventCategory::nvtx);
  if (ph != "X") return false;
  return is_event_category(cat);
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

}  // namespace


namespace {

/// The process id of an event of process `pid`: the host process's id is ridge's, others are kept.
std::uint32_t process_of(std::int64_t pid, std::int64_t host_pid, const Trace& trace) {
  return pid == host_pid ? trace.process_id : static_cast<std::uint32_t>(pid);
}

/// The fields of one event that the reader uses, with the defaults of absent ones applied. The
/// DOM reader (fields_from_json) and the token reader (fields_from_tokens) both fill it, and
/// add_event alone says what an event becomes.
struct EventFields {
  std::string_view ph, cat, name;  // into the event being read
  std::int64_t pid = 0, tid = 0;
  std::int64_t correlation = 0, external = 0;
  std::int64_t device = 0, stream = 0;  // default: the pid and the tid
  std::int64_t sync_stream = -1;        // a wait's stream, -1: none
  std::int64_t registers = 0, shared_memory = 0, graph = 0, queued_before = -1, bytes = 0;
  Dim3 grid, block;
};

/// `e`'s fields as the DOM reader reads them (throws UsageError or nlohmann's errors on bad ones);
/// `f.ph` and `f.cat` are set already, `name` holds the name `f.name` views.
void fields_from_json(const nlohmann::json& e, EventFields& f, std::string& name) {
  static const nlohmann::json no_args = nlohmann::json::object();
  name = e.value("name", std::string());
  f.name = name;
  const auto args_it = e.find("args");
  const nlohmann::json& args = args_it != e.end() && args_it->is_object() ? *args_it : no_args;
  f.pid = detail::id_field(e, "pid", 0);
  f.tid = detail::id_field(e, "tid", 0);
  auto id = [&](detail::IdArg arg, std::int64_t fallback) { return detail::id_field(args, arg.name(), fallback); };
  f.correlation = id(EventArg::correlation, 0);
  f.external = id(EventArg::external_id, 0);
  f.device = id(EventArg::device, f.pid);
  f.stream = id(EventArg::stream, f.tid);
  if (f.cat == name_of(EventCategory::kernel)) {
    f.grid = dim3_of(args, EventArg::grid);
    f.block = dim3_of(args, EventArg::block);
    f.registers = id(EventArg::registers, 0);
    f.shared_memory = id(EventArg::shared_memory, 0);
    f.graph = id(EventArg::graph_id, 0);
    f.queued_before = id(EventArg::queued_before, -1);
  } else if (f.cat == name_of(EventCategory::memcpy) || f.cat == name_of(EventCategory::memset)) {
    f.bytes = id(EventArg::bytes, 0);
  } else if (f.cat == name_of(EventCategory::sync)) {
    f.sync_stream = id(EventArg::stream, -1);
  }
}

/// The fields of the event in `t` (an object), read straight from its tokens: true when every field
/// the reader uses is of the plain kind ridge's and PyTorch's writers write (strings, integer ids,
/// numeric times within range, three-integer grid and block). False otherwise, and then the event
/// goes through the DOM reader (fields_from_json), which says what is wrong or reads what is unusual.
bool fields_from_tokens(const detail::EventTokens& t, EventFields& f, double& ts_us, std::optional<double>& dur_us) {
  using Kind = detail::EventTokens::Kind;
  const auto& tokens = t.tokens();
  auto number = [&](std::size_t i, double& out) {  // a time in microseconds, within range
    const auto& v = tokens[i];
    if (v.kind == Kind::integer) out = static_cast<double>(v.integer);
    else if (v.kind == Kind::unsigned_integer) out = static_cast<double>(t.unsigned_value(v));
    else if (v.kind == Kind::floating) out = v.floating;
    else return false;
    return std::isfinite(out) && std::fabs(out) <= max_abs_us;
  };
  auto integer = [&](std::size_t i, std::int64_t& out) {  // as detail::id_field reads an integer
    const auto& v = tokens[i];
    if (v.kind != Kind::integer && v.kind != Kind::unsigned_integer) return false;
    out = v.integer;
    return true;
  };
  auto dim3 = [&](std::size_t i, Dim3& out) {  // as dim3_of reads it, when it is three integers in range
    if (tokens[i].kind != Kind::open_array || i + 4 >= tokens.size() || tokens[i + 4].kind != Kind::close_array)
      return false;
    std::int32_t v[3] = {};
    for (int k = 0; k < 3; ++k) {
      std::int64_t x = 0;
      if (!integer(i + 1 + static_cast<std::size_t>(k), x) || x < 0 || x > 0x7fffffff) return false;
      v[k] = static_cast<std::int32_t>(x);
    }
    out = Dim3{v[0], v[1], v[2]};
    return true;
  };
  // Each field the reader uses may appear once (the DOM keeps the last of repeated keys): bits
  // 0-7 of `seen` are the event's own fields, the ones from first_arg_field up its arguments.
  constexpr int first_arg_field = 8;
  static_assert(first_arg_field + static_cast<int>(EventArg::count) <= 32);
  std::uint32_t seen = 0;
  auto first_time = [&](int field) { return !(std::exchange(seen, seen | (1u << field)) & (1u << field)); };
  std::optional<std::int64_t> device, stream;
  bool have_ts = false;
  const std::size_t end = tokens.size() - 1;  // the event's closing brace
  for (std::size_t i = 1; i < end; i = t.skip_value(i + 1)) {
    const std::string_view key = t.text(tokens[i]);
    const std::size_t v = i + 1;
    auto text = [&](int field, std::string_view& out) {
      if (tokens[v].kind != Kind::string || !first_time(field)) return false;
      out = t.text(tokens[v]);
      return true;
    };
    bool ok = true;
    if (key == "ph") ok = text(0, f.ph);
    else if (key == "cat") ok = text(1, f.cat);
    else if (key == "name") ok = text(2, f.name);
    else if (key == "ts") ok = first_time(3) && (have_ts = number(v, ts_us));
    else if (key == "dur") ok = first_time(4) && number(v, dur_us.emplace());
    else if (key == "pid") ok = first_time(5) && integer(v, f.pid);
    else if (key == "tid") ok = first_time(6) && integer(v, f.tid);
    else if (key == "args") {
      if (tokens[v].kind != Kind::open_object || !first_time(7)) return false;
      const std::size_t args_end = t.skip_value(v) - 1;
      for (std::size_t a = v + 1; a < args_end && ok; a = t.skip_value(a + 1)) {
        const EventArg arg = detail::event_arg_named(t.text(tokens[a]));
        const std::size_t w = a + 1;
        const int field = first_arg_field + static_cast<int>(arg);  // a bit of `seen`
        auto id = [&](std::int64_t& out) { return first_time(field) && integer(w, out); };
        auto optional_id = [&](std::optional<std::int64_t>& out) { return id(out.emplace()); };
        switch (arg) {
          case EventArg::correlation: ok = id(f.correlation); break;
          case EventArg::external_id: ok = id(f.external); break;
          case EventArg::device: ok = optional_id(device); break;
          case EventArg::stream: ok = optional_id(stream); break;
          case EventArg::registers: ok = id(f.registers); break;
          case EventArg::shared_memory: ok = id(f.shared_memory); break;
          case EventArg::graph_id: ok = id(f.graph); break;
          case EventArg::queued_before: ok = id(f.queued_before); break;
          case EventArg::bytes: ok = id(f.bytes); break;
          case EventArg::grid: ok = first_time(field) && dim3(w, f.grid); break;
          case EventArg::block: ok = first_time(field) && dim3(w, f.block); break;
          default: break;  // not read
        }
      }
    }
    if (!ok) return false;
  }
  if (!have_ts) return false;
  f.device = device.value_or(f.pid);
  f.stream = stream.value_or(f.tid);
  f.sync_stream = stream.value_or(-1);
  return true;
}

/// Adds one event the reader reads (read_by_ridge) to the trace, at [start, end).
void add_event(Trace& trace, const EventFields& f, Nanoseconds start, Nanoseconds end, std::int64_t host_pid) {
  const std::string_view cat = f.cat, name = f.name;
  const std::int64_t pid = f.pid, tid = f.tid;
  const auto correlation = static_cast<std::uint32_t>(f.correlation);
  const auto external = static_cast<std::uint64_t>(f.external);
  const auto device = static_cast<std::uint32_t>(f.device);
  const auto stream = static_cast<std::uint32_t>(f.stream);
  // What every GPU activity (kernel, memcpy, memset) carries.
  auto place_on_gpu = [&](auto& activity) {
    activity.device = device;
    activity.stream = stream;
    activity.start = start;
    activity.end = end;
    activity.correlation = correlation;
    activity.external_id = external;
  };
  if (cat == name_of(EventCategory::kernel)) {
    Kernel k;
    k.name = trace.strings.intern(name);
    place_on_gpu(k);
    k.grid = f.grid;
    k.block = f.block;
    k.registers_per_thread = static_cast<std::uint32_t>(f.registers);
    k.shared_memory_bytes = static_cast<std::uint32_t>(f.shared_memory);
    k.graph_id = static_cast<std::uint32_t>(f.graph);
    if (const std::int64_t before = f.queued_before; before >= 0)
      k.queued = k.start > static_cast<Nanoseconds>(before) ? k.start - static_cast<Nanoseconds>(before) : 0;
    trace.kernels.push_back(k);
  } else if (cat == name_of(EventCategory::memcpy)) {
    Memcpy m;
    // "Memcpy HtoD" (ours) or "Memcpy HtoD (Pageable -> Device)" (PyTorch).
    const std::string_view kind = name.starts_with("Memcpy ") ? name.substr(7, 4) : std::string_view();
    m.kind = memcpy_kind_from_string(kind);
    m.bytes = static_cast<std::uint64_t>(f.bytes);
    place_on_gpu(m);
    trace.memcpys.push_back(m);
  } else if (cat == name_of(EventCategory::memset)) {
    Memset m;
    m.bytes = static_cast<std::uint64_t>(f.bytes);
    place_on_gpu(m);
    trace.memsets.push_back(m);
  } else if (cat == name_of(EventCategory::runtime) || cat == name_of(EventCategory::driver)) {
    ApiCall a;
    a.domain = cat == name_of(EventCategory::runtime) ? ApiDomain::runtime : ApiDomain::driver;
    a.name = trace.strings.intern(name);
    a.process = process_of(pid, host_pid, trace);
    a.thread = static_cast<std::uint32_t>(tid);
    a.start = start;
    a.end = end;
    a.correlation = correlation;
    a.external_id = external;
    trace.api_calls.push_back(a);
  } else if (cat == name_of(EventCategory::sync)) {
    Sync s;
    s.kind = sync_kind_from_string(name);
    s.device = device;
    s.stream = f.sync_stream < 0 ? no_stream : static_cast<std::uint32_t>(f.sync_stream);
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
    r.marker = f.ph != "X";
    r.end = r.marker ? start : end;
    trace.ranges.push_back(r);
  }
}

}  // namespace


namespace {

constexpr const char* not_a_chrome_trace =
    "not a Chrome trace: no \"traceEvents\" array (ridge reads traces written by `ridge trace` or PyTorch's profiler)";

/// Reads a Chrome trace as nlohmann's parser goes through it (SAX): each event is built as a
/// small JSON value, turned into the trace's typed events and dropped, so memory stays that of the
/// Trace itself instead of a DOM of every event (3.1 GB for a million kernels). The "ridge" and
/// "distributedInfo" objects are kept whole; every other top-level value is skipped.
class StreamingReader {
 public:
  using json = nlohmann::json;

  /// `prelude`: the file's "ridge" metadata when a first pass found it after the events; `shift`:
  /// nanoseconds added to every time (when the first pass found negative times).
  /// `through_dom`: read every event as a DOM, never straight from its tokens (for tests that
  /// check both ways read the same).
  StreamingReader(const std::string& source, const json* prelude, WideNs shift, bool metadata_only,
                  bool through_dom = false)
      : source_(source), shift_(shift), metadata_only_(metadata_only), through_dom_(through_dom),
        times_{source_, "traceEvents"} {
    if (prelude != nullptr) apply_ridge_metadata(*prelude);
  }

  Trace& trace() { return trace_; }
  bool saw_events() const { return saw_events_; }
  /// The file's earliest time relative to the origin (< 0 when times must be shifted).
  WideNs earliest() const { return earliest_; }
  /// The "ridge" metadata came after the events it applies to: read again with it known first.
  const json* late_metadata() const { return late_metadata_ ? &ridge_json_ : nullptr; }
  bool needs_second_pass() const { return late_metadata_ || earliest_ + shift_ < 0; }

  // ---- nlohmann's SAX interface ----
  bool null() { return scalar([&] { tokens_.null(); }, [&] { return capture_->null(); }); }
  bool boolean(bool v) { return scalar([&] { tokens_.boolean(v); }, [&] { return capture_->boolean(v); }); }
  bool number_integer(json::number_integer_t v) {
    return scalar([&] { tokens_.integer(v); }, [&] { return capture_->number_integer(v); });
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return scalar([&] { tokens_.unsigned_integer(v); }, [&] { return capture_->number_unsigned(v); });
  }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return scalar([&] { tokens_.floating(v); }, [&] { return capture_->number_float(v, s); });
  }
  bool string(json::string_t& v) {
    // An event whose "ph" or "cat" says it is not read is dropped as soon as that is known
    // (ridge's own files write "ph" first: flow arrows and metadata are never built).
    if (in_event_ && depth_ == capture_depth_ && event_key_ != EventKey::other && !may_be_read(event_key_, v)) {
      in_event_ = false;
      skipping_ = true;
      return true;
    }
    return scalar([&] { tokens_.string(v); }, [&] { return capture_->string(v); });
  }
  bool binary(json::binary_t&) { return true; }  // JSON text has none (nlohmann's binary formats do)
  bool key(json::string_t& k) {
    if (in_event_) {
      if (depth_ == capture_depth_) event_key_ = k == "ph" ? EventKey::ph : k == "cat" ? EventKey::cat : EventKey::other;
      tokens_.key(k);
      return true;
    }
    if (capture_) return capture_->key(k);
    if (depth_ == 1) key_ = k;
    return true;
  }
  bool start_object(std::size_t n) { return open(true, n); }
  bool start_array(std::size_t n) { return open(false, n); }
  bool end_object() { return close(true); }
  bool end_array() { return close(false); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw UsageError(fmt::format("{} is not valid JSON: {}", source_, e.what()));
  }

 private:
  enum class Capture { none, event, ridge, distributed };
  enum class EventKey { other, ph, cat };

  /// Whether an event whose "ph" or "cat" is `value` may be one read_by_ridge reads.
  static bool may_be_read(EventKey key, const std::string& value) {
    if (key == EventKey::ph) return value == "X" || value == "i" || value == "I";
    return is_event_category(value);
  }

  /// A scalar goes to the event being read (`to_event`), to a kept value (`to_capture`), or nowhere.
  template <typename ToEvent, typename ToCapture>
  bool scalar(ToEvent to_event, ToCapture to_capture) {
    if (in_event_) {
      to_event();
      return true;
    }
    if (capture_) return to_capture();
    if (skipping_) return true;
    if (in_events_ && depth_ == events_depth_) ++event_index_;  // not an object: skipped
    return true;
  }

  bool open(bool object, std::size_t n) {
    if (++depth_ > max_json_depth)
      throw UsageError(fmt::format("{}: JSON nested deeper than {} levels; ridge's files nest a few levels (see "
                                   "docs/results-schema.md)",
                                   source_, max_json_depth));
    if (in_event_) {
      tokens_.open(object);
      return true;
    }
    if (capture_) return object ? capture_->start_object(n) : capture_->start_array(n);
    if (skipping_) return true;
    if (depth_ == 1) {
      root_is_object_ = object;
      if (!object) enter_events(1);
      return true;
    }
    if (in_events_ && depth_ == events_depth_ + 1) {
      if (object) begin_event();
      else ++event_index_;
      return true;
    }
    if (depth_ == 2 && root_is_object_) {
      if (key_ == "traceEvents" && !object && !saw_events_) {
        if (metadata_only_) return false;  // stops the parser: the metadata comes first
        enter_events(2);
      } else if (key_ == name_of(EventArg::ridge)) {
        begin_capture(Capture::ridge, object);
      } else if (key_ == name_of(EventArg::distributed)) {
        begin_capture(Capture::distributed, object);
      }
    }
    return true;
  }

  bool close(bool object) {
    if (in_event_) {
      tokens_.close(object);
      if (--depth_ < capture_depth_) {
        in_event_ = false;
        capture_what_ = Capture::none;
        event(event_index_++);
      }
      return true;
    }
    if (capture_) {
      const bool ok = object ? capture_->end_object() : capture_->end_array();
      if (--depth_ < capture_depth_) end_capture();
      return ok;
    }
    if (skipping_) {
      if (--depth_ < capture_depth_) {
        skipping_ = false;
        capture_what_ = Capture::none;
        ++event_index_;
      }
      return true;
    }
    if (in_events_ && depth_ == events_depth_) in_events_ = false;
    --depth_;
    return true;
  }

  void enter_events(int depth) {
    in_events_ = saw_events_ = true;
    events_depth_ = depth;
    times_.list = depth == 1 ? std::string() : std::string("traceEvents");
  }

  void begin_event() {
    in_event_ = true;
    tokens_.clear();
    tokens_.open(true);
    capture_what_ = Capture::event;
    capture_depth_ = depth_;
    event_key_ = EventKey::other;
  }

  void begin_capture(Capture what, bool object) {
    captured_ = json();
    capture_.emplace(captured_);
    if (object) capture_->start_object(std::size_t(-1));
    else capture_->start_array(std::size_t(-1));
    capture_what_ = what;
    capture_depth_ = depth_;
    event_key_ = EventKey::other;
  }

  void end_capture() {
    capture_.reset();
    switch (std::exchange(capture_what_, Capture::none)) {
      case Capture::event: break;  // events are read from tokens_ (close)
      case Capture::ridge:
        if (!have_ridge_) {
          ridge_json_ = std::move(captured_);
          if (events_read_) late_metadata_ = true;
          else apply_ridge_metadata(ridge_json_);
        }
        break;
      case Capture::distributed: detail::read_distributed_info(captured_, trace_); break;
      case Capture::none: break;
    }
  }

  void apply_ridge_metadata(const json& m) {
    have_ridge_ = true;
    ridge_json_ = m;
    try {
      meta_ = detail::read_ridge_metadata(m, trace_);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: ridge: malformed metadata: {}", source_, e.what()));
    }
    if (shift_ > 0) {  // the file's own clock fields move with the events
      if (trace_.collection_start) trace_.collection_start += static_cast<Nanoseconds>(shift_);
      if (trace_.collection_stop) trace_.collection_stop += static_cast<Nanoseconds>(shift_);
      for (auto& step : trace_.recorded_steps) {
        step.start_ns += static_cast<Nanoseconds>(shift_);
        step.end_ns += static_cast<Nanoseconds>(shift_);
      }
    }
  }

  /// Reads the event in tokens_, number `i` of the list: straight from the tokens, or, when one
  /// of its fields is not of the plain kind fields_from_tokens takes, as a DOM (event_from_json),
  /// whose errors name what is wrong.
  void event(std::size_t i) {
    EventFields f;
    double ts_us = 0;
    std::optional<double> dur_us;
    if (through_dom_ || !fields_from_tokens(tokens_, f, ts_us, dur_us)) return event_from_json(tokens_.to_json(), i);
    if (!read_by_ridge(f.ph, f.cat)) return;
    events_read_ = true;
    const WideNs start = std::llround(ts_us * 1000.0);
    const WideNs length = f.ph == "X" && dur_us ? std::llround(*dur_us * 1000.0) : 0;
    if (length < 0) return trace_.count_rejected(negative_duration_reason);
    place({start, start + length}, i, [&]() -> const EventFields& { return f; });
  }

  void event_from_json(const json& e, std::size_t i) {
    auto text_field = [&](const char* key) -> std::string_view {
      auto it = e.find(key);
      return it != e.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
    };
    EventFields f;
    f.ph = text_field("ph");
    f.cat = text_field("cat");
    if (!read_by_ridge(f.ph, f.cat)) return;
    events_read_ = true;
    try {
      const auto span = times_.read(e, i, f.ph == "X");
      if (!span) return trace_.count_rejected(negative_duration_reason);
      place(*span, i, [&]() -> const EventFields& {
        fields_from_json(e, f, name_storage_);
        return f;
      });
    } catch (const UsageError& x) {
      const std::string what = x.what();
      if (what.rfind(source_, 0) == 0) throw;  // already names the file and the path
      throw UsageError(fmt::format("{}: {}[{}]: malformed event: {}", source_, times_.list, i, what));
    } catch (const std::exception& x) {  // a field of the wrong type or size (nlohmann, stoll)
      throw UsageError(fmt::format("{}: {}[{}]: malformed event: {}", source_, times_.list, i, x.what()));
    }
  }

  /// Adds event `i`, at `span` from the file's origin, with the fields `fields()` gives (read only
  /// once the times are known to be final: a first pass that will be repeated reads no more).
  template <typename Fields>
  void place(std::pair<WideNs, WideNs> span, std::size_t i, Fields fields) {
    earliest_ = std::min(earliest_, static_cast<WideNs>(meta_.origin) + span.first);
    if (needs_second_pass()) return;  // the times are shifted then: only the earliest counts now
    const WideNs wide_start = static_cast<WideNs>(meta_.origin) + span.first + shift_;
    const WideNs wide_end = static_cast<WideNs>(meta_.origin) + span.second + shift_;
    if (wide_end > static_cast<WideNs>(std::numeric_limits<Nanoseconds>::max()))
      throw UsageError(fmt::format("{}: {}[{}]: ends beyond 2^64 ns after the file's origin", source_, times_.list, i));
    add_event(trace_, fields(), static_cast<Nanoseconds>(wide_start), static_cast<Nanoseconds>(wide_end),
              meta_.host_pid);
  }

  const std::string& source_;
  WideNs shift_ = 0;
  bool metadata_only_ = false;
  bool through_dom_ = false;
  EventTimes times_;
  Trace trace_;
  detail::RidgeMetadata meta_;
  json ridge_json_;
  bool have_ridge_ = false, late_metadata_ = false, events_read_ = false;
  WideNs earliest_ = 0;

  int depth_ = 0, events_depth_ = 0, capture_depth_ = 0;
  bool root_is_object_ = false, in_events_ = false, saw_events_ = false;
  bool skipping_ = false;  // inside an event dropped early (may_be_read)
  EventKey event_key_ = EventKey::other;
  std::string key_;
  std::size_t event_index_ = 0;
  Capture capture_what_ = Capture::none;
  json captured_;
  std::optional<nlohmann::detail::json_sax_dom_parser<json>> capture_;  // the "ridge" or "distributedInfo" value
  bool in_event_ = false;             // inside an event that is being read into tokens_
  detail::EventTokens tokens_;        // the event being read
  std::string name_storage_;          // the DOM reader's event name
};

/// Parses the JSON that `parse` feeds to a StreamingReader (once, or twice when the first pass
/// finds the metadata after the events or times before the origin).
template <typename Parse>
Trace read_streamed(const std::string& source, Parse parse, bool through_dom = false) {
  nlohmann::json late_metadata;
  const nlohmann::json* prelude = nullptr;
  WideNs shift = 0;
  // At most three passes: the second knows the metadata, the third the shift it implies.
  for (int pass = 1;; ++pass) {
    StreamingReader reader(source, prelude, shift, false, through_dom);
    parse(reader);
    if (!reader.saw_events()) throw UsageError(fmt::format("{}: {}", source, not_a_chrome_trace));
    const WideNs needed = -std::min<WideNs>(reader.earliest(), 0);
    if ((reader.late_metadata() == nullptr && needed == shift) || pass == 3) {
      finalize(reader.trace());
      return std::move(reader.trace());
    }
    if (reader.late_metadata() != nullptr) {
      late_metadata = *reader.late_metadata();
      prelude = &late_metadata;
      shift = 0;  // this pass's earliest time lacked the origin
    } else {
      shift = needed;
    }
  }
}

}  // namespace

Trace parse_chrome_json(const std::string& text, const std::string& source) {
  return read_streamed(source, [&](StreamingReader& reader) { nlohmann::json::sax_parse(text, &reader); });
}

Trace load_chrome_trace(const std::string& path) {
  return read_streamed(path, [&](StreamingReader& reader) {
    detail::ChunkedFile file(path);
    nlohmann::json::sax_parse(detail::ChunkIterator{&file}, detail::ChunkIterator{}, &reader);
  });
}

bool chrome_trace_has_counters(const std::string& path) {
  // ridge's writer puts "ridge":{...,"counters":{...}} before "traceEvents": the parse stops there.
  try {
    StreamingReader reader(path, nullptr, 0, true);
    detail::ChunkedFile file(path);
    nlohmann::json::sax_parse(detail::ChunkIterator{&file}, detail::ChunkIterator{}, &reader);
    return !reader.trace().counters.metrics.empty();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace ridge::trace

// What both file formats keep beside the events (trace/model/chrome_metadata.hpp).
namespace ridge::detail {

using namespace ridge::trace;

Trace parse_chrome_json_through_dom(const std::string& text, const std::string& source) {
  return read_streamed(
      source, [&](StreamingReader& reader) { nlohmann::json::sax_parse(text, &reader); }, true);
}

RidgeMetadata read_ridge_metadata(const nlohmann::json& m, Trace& trace) {
  using ridge::detail::integer_field;
  RidgeMetadata meta;
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
    trace.schedule = trace::trace_schedule_from_json(*sc);
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

void read_distributed_info(const nlohmann::json& info, Trace& trace) {
  if (!info.is_object()) return;
  const nlohmann::json* d = &info;
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

nlohmann::json ridge_metadata_json(const Trace& trace, Nanoseconds origin, std::int64_t host_pid) {
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
  return meta;
}

nlohmann::json distributed_info_json(const DistributedInfo& info) {
  return {{"rank", info.rank}, {"world_size", info.world_size}, {"backend", info.backend}};
}

std::unordered_map<std::uint32_t, const ApiCall*> launch_calls_by_correlation(const Trace& trace) {
  std::unordered_map<std::uint32_t, const ApiCall*> calls;
  calls.reserve(trace.api_calls.size());
  for (const auto& a : trace.api_calls) {
    auto [it, inserted] = calls.emplace(a.correlation, &a);
    if (!inserted && it->second->domain == ApiDomain::driver && a.domain == ApiDomain::runtime) it->second = &a;
  }
  return calls;
}

}  // namespace ridge::detail
