// Trace windows: the part of a trace that keeps warm-up out of the numbers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ridge/trace/window.hpp"

namespace ridge::trace {

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


/// The times between each cudaProfilerStart's return and the next cudaProfilerStop's call, merged;
/// a start never stopped lasts to the end.
std::vector<Interval> profiler_windows(const Trace& trace) {
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
  return merge(std::move(profiled));
}

/// The events of `trace` whose time `keep_time` keeps: host events by their start, GPU activity
/// with its launch call (without one, by when it was launched as far as its record says).
template <typename KeepTime>
Trace filtered(const Trace& trace, KeepTime&& keep_time, const std::string& described) {
  std::unordered_map<std::uint32_t, std::size_t> api_by_correlation;
  api_by_correlation.reserve(trace.api_calls.size());
  for (std::size_t i = 0; i < trace.api_calls.size(); ++i) api_by_correlation.emplace(trace.api_calls[i].correlation, i);
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
  out.counters = trace.counters;
  out.schedule = trace.schedule;
  out.recorded_steps = trace.recorded_steps;
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
    const std::vector<Interval> profiled = profiler_windows(trace);
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
  std::string described = window.describe();
  if (from_range_missing)
    described += fmt::format(" - the trace has no NVTX range named \"{}\", so nothing is kept", window.from_range);
  return filtered(trace, keep_time, described);
}

Trace keep_recorded_steps(const Trace& trace) {
  if (!trace.schedule) return trace;
  std::vector<RecordedStep> steps = trace.recorded_steps;
  // A step's own range, stamped by CUPTI, may begin just before the push the collector saw, and so
  // may the next step's, at this step's end: of the step ranges from slack before a push to
  // `limit`, the one nearest the push.
  if (auto id = trace.strings.find(trace.schedule->step_range)) {
    auto range_near = [&](Nanoseconds push, Nanoseconds after, Nanoseconds limit) {
      std::optional<Nanoseconds> best;
      auto distance = [&](Nanoseconds t) { return t > push ? t - push : push - t; };
      const Nanoseconds from = std::max(after, push > step_push_slack_ns ? push - step_push_slack_ns : 0);
      for (const auto& r : trace.ranges)  // sorted by start after finalize
        if (r.name == *id && !r.marker && r.start >= from && r.start < limit && (!best || distance(r.start) < distance(*best)))
          best = r.start;
      return best;
    };
    for (RecordedStep& step : steps) {
      const std::optional<Nanoseconds> own = range_near(step.start_ns, 0, step.end_ns);
      if (own) step.start_ns = std::min(step.start_ns, *own);
      const Nanoseconds after = own ? *own + 1 : step.start_ns;
      if (const auto next = range_near(step.end_ns, after, step.end_ns + step_push_slack_ns); next && *next < step.end_ns)
        step.end_ns = std::max(step.start_ns, *next);
    }
  }
  std::vector<Interval> spans;
  for (const RecordedStep& step : steps) spans.emplace_back(step.start_ns, step.end_ns);
  spans = merge(std::move(spans));
  // Half-open spans: the push that ends a recorded step begins the next step.
  auto keep_time = [&](Nanoseconds t) {
    auto it = std::upper_bound(spans.begin(), spans.end(), t, [](Nanoseconds v, const Interval& i) { return v < i.first; });
    return it != spans.begin() && t < std::prev(it)->second;
  };
  Trace out = filtered(trace, keep_time,
                       steps.empty() ? fmt::format("no step recorded by the schedule ({})", trace.schedule->describe())
                                     : fmt::format("the steps recorded by the schedule ({}): {}", trace.schedule->describe(),
                                                   describe_step_numbers(step_numbers(steps))));
  out.recorded_steps = std::move(steps);
  return out;
}

}  // namespace ridge::trace
