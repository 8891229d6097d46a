// The trace event model: interning, finalization (external ids, ordering, NVTX nesting).
#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "ridge/trace/events.hpp"
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

}  // namespace ridge::trace

namespace ridge::detail {

RecordTimes classify_record_times(trace::Nanoseconds start, trace::Nanoseconds end) {
  if (start == 0 || end == 0) return RecordTimes::missing;
  return end < start ? RecordTimes::reversed : RecordTimes::complete;
}

}  // namespace ridge::detail
