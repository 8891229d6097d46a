// The trace event model: interning, finalization (external ids, ordering, NVTX nesting) and
// windows that keep warm-up out of the numbers.
#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "ridge/trace.hpp"
#include "trace/model/record_times.hpp"

namespace ridge::trace {

std::uint32_t StringTable::intern(std::string_view text) {
  std::string key(text);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(strings_.size());
  strings_.push_back(key);
  index_.emplace(std::move(key), id);
  return id;
}

std::optional<std::uint32_t> StringTable::find(std::string_view text) const {
  auto it = index_.find(std::string(text));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::string to_string(MemcpyKind kind) {
  switch (kind) {
    case MemcpyKind::host_to_device: return "HtoD";
    case MemcpyKind::device_to_host: return "DtoH";
    case MemcpyKind::device_to_device: return "DtoD";
    case MemcpyKind::host_to_host: return "HtoH";
    case MemcpyKind::peer_to_peer: return "PtoP";
    case MemcpyKind::unknown: break;
  }
  return "unknown";
}

MemcpyKind memcpy_kind_from_string(std::string_view text) {
  for (auto k : {MemcpyKind::host_to_device, MemcpyKind::device_to_host, MemcpyKind::device_to_device,
                 MemcpyKind::host_to_host, MemcpyKind::peer_to_peer})
    if (text == to_string(k)) return k;
  return MemcpyKind::unknown;
}

std::string to_string(SyncKind kind) {
  switch (kind) {
    case SyncKind::event_synchronize: return "Event Sync";
    case SyncKind::stream_wait_event: return "Stream Wait Event";
    case SyncKind::stream_synchronize: return "Stream Sync";
    case SyncKind::context_synchronize: return "Context Sync";
    case SyncKind::unknown: break;
  }
  return "Sync";
}

SyncKind sync_kind_from_string(std::string_view text) {
  for (auto k : {SyncKind::event_synchronize, SyncKind::stream_wait_event, SyncKind::stream_synchronize,
                 SyncKind::context_synchronize})
    if (text == to_string(k)) return k;
  return SyncKind::unknown;
}

namespace {

template <typename Events, typename Fn>
void for_each_interval(const Events& events, Fn&& fn) {
  for (const auto& e : events) fn(e.start, e.end);
}

template <typename Fn>
void for_each_event_interval(const Trace& t, Fn&& fn) {
  for_each_interval(t.kernels, fn);
  for_each_interval(t.memcpys, fn);
  for_each_interval(t.memsets, fn);
  for_each_interval(t.api_calls, fn);
  for_each_interval(t.syncs, fn);
  for_each_interval(t.ranges, fn);
}

template <typename Events>
void sort_by_start(Events& events) {
  auto by_start = [](const auto& a, const auto& b) { return a.start < b.start; };
  if (!std::is_sorted(events.begin(), events.end(), by_start))  // CUPTI mostly delivers in order
    std::stable_sort(events.begin(), events.end(), by_start);
}

}  // namespace

Nanoseconds Trace::origin() const {
  Nanoseconds first = std::numeric_limits<Nanoseconds>::max();
  for_each_event_interval(*this, [&](Nanoseconds s, Nanoseconds) { first = std::min(first, s); });
  return first == std::numeric_limits<Nanoseconds>::max() ? collection_start : first;
}

Nanoseconds Trace::last_end() const {
  Nanoseconds last = 0;
  for_each_event_interval(*this, [&](Nanoseconds s, Nanoseconds e) { last = std::max({last, s, e}); });
  return last == 0 ? collection_stop : last;
}

std::size_t Trace::event_count() const {
  return kernels.size() + memcpys.size() + memsets.size() + api_calls.size() + syncs.size() + ranges.size();
}

void Trace::count_rejected(const std::string& reason, std::uint64_t count) {
  if (count == 0) return;
  for (auto& r : rejected_events)
    if (r.reason == reason) {
      r.count += count;
      return;
    }
  rejected_events.push_back({reason, count});
}

void finalize(Trace& trace) {
  if (!trace.external_correlations.empty()) {
    std::unordered_map<std::uint32_t, std::uint64_t> external;
    external.reserve(trace.external_correlations.size());
    for (const auto& x : trace.external_correlations) external[x.correlation] = x.external_id;
    auto apply = [&](auto& events) {
      for (auto& e : events)
        if (e.external_id == 0)
          if (auto it = external.find(e.correlation); it != external.end()) e.external_id = it->second;
    };
    apply(trace.kernels);
    apply(trace.memcpys);
    apply(trace.memsets);
    apply(trace.api_calls);
  }
  sort_by_start(trace.kernels);
  sort_by_start(trace.memcpys);
  sort_by_start(trace.memsets);
  sort_by_start(trace.api_calls);
  sort_by_start(trace.syncs);
  // Ranges: by start, the longer first when two begin together, so the outer one nests the inner.
  std::stable_sort(trace.ranges.begin(), trace.ranges.end(), [](const NvtxRange& a, const NvtxRange& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  std::unordered_map<std::uint64_t, std::vector<Nanoseconds>> open;  // per thread: ends of open ranges
  for (auto& r : trace.ranges) {
    auto& stack = open[(static_cast<std::uint64_t>(r.process) << 32) | r.thread];
    while (!stack.empty() && stack.back() <= r.start && !(r.marker && stack.back() == r.start)) stack.pop_back();
    r.depth = static_cast<int>(stack.size());
    if (!r.marker) stack.push_back(r.end);
  }
}

std::string demangle(const char* symbol) {
  if (symbol == nullptr) return "?";
  if (symbol[0] != '_' || symbol[1] != 'Z') return symbol;
  int status = 0;
  char* text = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return symbol;
  std::string result(text);
  std::free(text);
  return result;
}

std::string strip_api_version(std::string_view name) {
  // "cudaGetDeviceProperties_v2_v12000" -> "cudaGetDeviceProperties": strip every numeric suffix.
  for (;;) {
    const auto pos = name.rfind("_v");
    if (pos == std::string_view::npos || pos + 2 >= name.size() ||
        !std::all_of(name.begin() + static_cast<long>(pos) + 2, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::string(name);
    name = name.substr(0, pos);
  }
}

// ---- windows -------------------------------------------------------------------------------------

std::string Window::describe() const {
  std::vector<std::string> parts;
  if (skip_seconds > 0) parts.push_back(fmt::format("after the first {:g} s", skip_seconds));
  if (skip_kernels > 0) parts.push_back(fmt::format("from kernel launch #{} on (the first {} skipped)", skip_kernels + 1, skip_kernels));
  if (!nvtx_range.empty()) parts.push_back(fmt::format("inside NVTX ranges named \"{}\"", nvtx_range));
  if (profiler_range) parts.push_back("between cudaProfilerStart and cudaProfilerStop");
  if (!from_range.empty())
    parts.push_back(fmt::format("from the first NVTX range named \"{}\" on (steady state: start-up left out)", from_range));
  if (parts.empty()) return "";
  std::string out = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) out += "; " + parts[i];
  return out;
}

namespace {

using Interval = std::pair<Nanoseconds, Nanoseconds>;

std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

bool inside(const std::vector<Interval>& merged, Nanoseconds t) {
  auto it = std::upper_bound(merged.begin(), merged.end(), t, [](Nanoseconds v, const Interval& i) { return v < i.first; });
  if (it == merged.begin()) return false;
  --it;
  return t >= it->first && t <= it->second;
}

bool is_profiler_call(const std::string& name, bool start) {
  return start ? (name == "cudaProfilerStart" || name == "cuProfilerStart")
               : (name == "cudaProfilerStop" || name == "cuProfilerStop");
}

}  // namespace

Trace apply_window(const Trace& trace, const Window& window) {
  if (window.empty()) return trace;
  Nanoseconds lower = 0;
  if (window.skip_seconds > 0) {
    const Nanoseconds base = trace.collection_start ? trace.collection_start : trace.origin();
    lower = base + static_cast<Nanoseconds>(std::llround(window.skip_seconds * 1e9));
  }
  std::unordered_map<std::uint32_t, std::size_t> api_by_correlation;
  api_by_correlation.reserve(trace.api_calls.size());
  for (std::size_t i = 0; i < trace.api_calls.size(); ++i) api_by_correlation.emplace(trace.api_calls[i].correlation, i);

  bool nothing = false;
  if (window.skip_kernels > 0) {
    std::vector<Nanoseconds> launches;
    launches.reserve(trace.kernels.size());
    for (const auto& k : trace.kernels) {
      auto it = api_by_correlation.find(k.correlation);
      launches.push_back(it != api_by_correlation.end() ? trace.api_calls[it->second].start : k.queued_or_start());
    }
    std::sort(launches.begin(), launches.end());
    // Graph launches run many kernels under one call: skip by distinct launch times.
    launches.erase(std::unique(launches.begin(), launches.end()), launches.end());
    if (window.skip_kernels >= launches.size())
      nothing = true;
    else
      lower = std::max(lower, launches[window.skip_kernels]);
  }
  bool from_range_missing = false;
  if (!window.from_range.empty()) {
    std::optional<Nanoseconds> first;
    if (auto id = trace.strings.find(window.from_range))
      for (const auto& r : trace.ranges)  // sorted by start after finalize
        if (r.name == *id && !r.marker) {
          first = r.start;
          break;
        }
    if (first)
      lower = std::max(lower, *first);
    else
      from_range_missing = nothing = true;
  }
  std::vector<Interval> ranges;
  bool use_ranges = false;
  if (!window.nvtx_range.empty()) {
    use_ranges = true;
    if (auto id = trace.strings.find(window.nvtx_range))
      for (const auto& r : trace.ranges)
        if (r.name == *id && !r.marker) ranges.emplace_back(r.start, r.end);
  }
  if (window.profiler_range) {
    std::vector<Interval> profiled;
    bool open = false;
    Nanoseconds opened_at = 0;
    for (const auto& a : trace.api_calls) {  // sorted by start after finalize
      const std::string& name = trace.strings.at(a.name);
      if (is_profiler_call(name, true) && !open) {
        open = true;
        opened_at = a.end;
      }
      if (is_profiler_call(name, false) && open) {
        profiled.emplace_back(opened_at, a.start);
        open = false;
      }
    }
    if (open) profiled.emplace_back(opened_at, std::numeric_limits<Nanoseconds>::max());
    profiled = merge(std::move(profiled));
    if (use_ranges) {  // both asked: their intersection
      std::vector<Interval> both;
      for (const auto& r : merge(ranges))
        for (const auto& p : profiled) {
          const Nanoseconds s = std::max(r.first, p.first), e = std::min(r.second, p.second);
          if (s < e) both.emplace_back(s, e);
        }
      ranges = std::move(both);
    } else {
      ranges = std::move(profiled);
    }
    use_ranges = true;
  }
  ranges = merge(std::move(ranges));
  auto keep_time = [&](Nanoseconds t) {
    if (nothing || t < lower) return false;
    return !use_ranges || inside(ranges, t);
  };

  Trace out;
  out.strings = trace.strings;
  out.external_correlations = trace.external_correlations;
  out.dropped_records = trace.dropped_records;
  out.incomplete_records = trace.incomplete_records;
  out.rejected_events = trace.rejected_events;
  out.process_id = trace.process_id;
  out.command = trace.command;
  out.device_names = trace.device_names;
  out.distributed = trace.distributed;
  out.collection_start = trace.collection_start;
  out.collection_stop = trace.collection_stop;
  std::string described = window.describe();
  if (from_range_missing)
    described += fmt::format(" - the trace has no NVTX range named \"{}\", so nothing is kept", window.from_range);
  out.window = trace.window.empty() ? described : trace.window + "; " + described;

  std::unordered_set<std::uint32_t> kept_correlations;
  for (const auto& a : trace.api_calls)
    if (keep_time(a.start)) {
      out.api_calls.push_back(a);
      kept_correlations.insert(a.correlation);
    }
  // Kept with its launch call; without one, by when it was launched as far as its record says.
  auto keep_gpu = [&](const auto& e, Nanoseconds launched) {
    if (api_by_correlation.count(e.correlation)) return kept_correlations.count(e.correlation) > 0;
    return keep_time(launched);
  };
  for (const auto& k : trace.kernels)
    if (keep_gpu(k, k.queued_or_start())) out.kernels.push_back(k);
  for (const auto& m : trace.memcpys)
    if (keep_gpu(m, m.start)) out.memcpys.push_back(m);
  for (const auto& m : trace.memsets)
    if (keep_gpu(m, m.start)) out.memsets.push_back(m);
  for (const auto& s : trace.syncs)
    if (keep_gpu(s, s.start)) out.syncs.push_back(s);
  for (const auto& r : trace.ranges)
    if (keep_time(r.start)) out.ranges.push_back(r);
  return out;
}

}  // namespace ridge::trace

namespace ridge::trace_detail {

RecordTimes classify_record_times(trace::Nanoseconds start, trace::Nanoseconds end) {
  if (start == 0 || end == 0) return RecordTimes::missing;
  return end < start ? RecordTimes::reversed : RecordTimes::complete;
}

}  // namespace ridge::trace_detail
