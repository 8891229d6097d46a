// Trace analysis: what dominates, how many kernels a step launches, how much of the time the GPU
// sat idle and whether it was waiting for the host.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include <fmt/format.h>

#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/stats.hpp"
#include "ridge/trace/analysis.hpp"
#include "ridge/trace/chrome_json.hpp"
#include "launch_index.hpp"
#include "ridge/trace/trace_file.hpp"

namespace ridge::trace {

void DurationStats::add(Nanoseconds d) {
  if (count == 0 || d < min_ns) min_ns = d;
  if (count == 0 || d > max_ns) max_ns = d;
  ++count;
  total_ns += d;
  mean_ns = static_cast<double>(total_ns) / static_cast<double>(count);
}

Nanoseconds union_length(std::vector<std::pair<Nanoseconds, Nanoseconds>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  Nanoseconds total = 0;
  bool open = false;
  Nanoseconds s = 0, e = 0;
  for (const auto& [a, b] : intervals) {
    if (b <= a) continue;
    if (open && a <= e) {
      e = std::max(e, b);
      continue;
    }
    if (open) total += e - s;
    s = a;
    e = b;
    open = true;
  }
  if (open) total += e - s;
  return total;
}

namespace {

Nanoseconds duration(Nanoseconds start, Nanoseconds end) { return end > start ? end - start : 0; }

double ms(double ns) { return ns / 1e6; }

std::string pct(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

using detail::any_thread;
using detail::LaunchIndex;
using detail::LaunchPoint;
using detail::thread_key;

/// The launches that ran under hardware-counter profiling: those with a counter row (replayed per
/// kernel, or pass 0 of a replayed step) and KernelCounters::perturbed (the later passes). Their
/// times are profiling's, not the program's.
class LeftOut {
 public:
  explicit LeftOut(const Trace& trace) : first_(trace.kernels.data()), out_(trace.kernels.size(), false) {
    const KernelCounters& c = trace.counters;
    std::unordered_set<std::uint32_t> with_row;
    for (const auto& r : c.rows) with_row.insert(r.correlation);
    for (std::size_t i = 0; i < trace.kernels.size(); ++i) {
      const std::uint32_t corr = trace.kernels[i].correlation;
      out_[i] = corr != 0 && (with_row.count(corr) > 0 || c.is_perturbed(corr));
      count += out_[i] ? 1 : 0;
    }
    reason = c.replay == CounterReplay::steps
                 ? "they ran in the steps replayed for their hardware counters' passes, serialized by CUPTI's range "
                   "profiler"
                 : "CUPTI replayed them once per hardware-counter pass, serialized: their times are the profiled "
                   "passes'";
  }
  bool operator()(const Kernel& k) const { return out_[static_cast<std::size_t>(&k - first_)]; }
  /// Leaves `k` out too; false when it was already.
  bool add(const Kernel& k) {
    const auto i = static_cast<std::size_t>(&k - first_);
    if (out_[i]) return false;
    out_[i] = true;
    ++count;
    return true;
  }
  std::uint64_t count = 0;
  std::string reason;

 private:
  const Kernel* first_;
  std::vector<bool> out_;
};

/// Kernel launches of one thread, by launch-call start, with prefix sums for range queries (the
/// time of the kept launches, and how many were left out).
struct Launches {
  std::vector<Nanoseconds> starts;
  std::vector<std::uint64_t> count_prefix{0};
  std::vector<Nanoseconds> time_prefix{0};
  std::vector<std::uint64_t> left_out_prefix{0};
};

/// Launches of each thread (any_thread: those known by queue time alone), and every kernel by its
/// launch point: which kernels a range or a step launched.
struct LaunchTimeline {
  std::unordered_map<std::uint64_t, Launches> per_thread;
  std::vector<std::pair<Nanoseconds, const Kernel*>> all;  ///< (launch point, kernel), sorted
};

LaunchTimeline launch_timeline(const Trace& trace, const LaunchIndex& launches, const LeftOut& left_out) {
  LaunchTimeline timeline;
  timeline.all.reserve(trace.kernels.size());
  struct Raw {
    Nanoseconds at, time;
    bool left_out;
    bool operator<(const Raw& o) const { return at < o.at; }
  };
  std::unordered_map<std::uint64_t, std::vector<Raw>> raw;
  for (const auto& k : trace.kernels) {
    const auto point = launches.launch_of(k);
    if (!point) {
      timeline.all.emplace_back(k.start, &k);  // launch unknown: its start places it in a step
      continue;
    }
    const std::uint64_t key = point->call ? thread_key(point->call->process, point->call->thread) : any_thread;
    raw[key].push_back({point->at, duration(k.start, k.end), left_out(k)});
    timeline.all.emplace_back(point->at, &k);
  }
  for (auto& [key, v] : raw) {
    std::stable_sort(v.begin(), v.end());
    Launches& l = timeline.per_thread[key];
    l.starts.reserve(v.size());
    for (const Raw& r : v) {
      l.starts.push_back(r.at);
      l.count_prefix.push_back(l.count_prefix.back() + 1);
      l.time_prefix.push_back(l.time_prefix.back() + (r.left_out ? 0 : r.time));
      l.left_out_prefix.push_back(l.left_out_prefix.back() + (r.left_out ? 1 : 0));
    }
  }
  std::sort(timeline.all.begin(), timeline.all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return timeline;
}

/// Step replay profiles whole steps: every kernel launched inside a step that ran a pass ran under
/// profiling, also those the passes' launch lists lack (a CUDA graph's kernels). Returns whether
/// any kernel was added.
bool leave_out_replayed_steps(const Trace& trace, const LaunchTimeline& timeline, const std::string& step_range,
                              LeftOut& left_out) {
  if (trace.counters.replay != CounterReplay::steps || left_out.count == 0 || step_range.empty()) return false;
  const auto id = trace.strings.find(step_range);
  if (!id) return false;
  bool added = false;
  for (const auto& r : trace.ranges) {
    if (r.marker || r.name != *id) continue;
    const auto lo = std::lower_bound(timeline.all.begin(), timeline.all.end(), r.start,
                                     [](const auto& x, Nanoseconds t) { return x.first < t; });
    auto hi = lo;
    bool profiled = false;
    for (; hi != timeline.all.end() && hi->first <= r.end; ++hi) profiled = profiled || left_out(*hi->second);
    if (!profiled) continue;
    for (auto it = lo; it != hi; ++it) added = left_out.add(*it->second) || added;
  }
  return added;
}

/// Without synchronization records (ridge trace's default: they are costly), the waits are the
/// *Synchronize API calls; runtime ones when there are any, so a runtime call and the driver call
/// under it are not counted twice.
std::vector<const ApiCall*> synchronize_calls(const Trace& trace) {
  std::vector<const ApiCall*> calls;
  if (!trace.syncs.empty()) return calls;
  for (ApiDomain domain : {ApiDomain::runtime, ApiDomain::driver}) {
    for (const auto& c : trace.api_calls)
      if (c.domain == domain && trace.strings.at(c.name).find("Synchronize") != std::string::npos) calls.push_back(&c);
    if (!calls.empty()) break;
  }
  return calls;
}

void count_events(const Trace& trace, const std::vector<const ApiCall*>& sync_calls, Analysis& a) {
  a.kernel_count = trace.kernels.size();
  a.memcpy_count = trace.memcpys.size();
  a.memset_count = trace.memsets.size();
  a.api_count = trace.api_calls.size();
  a.sync_count = trace.syncs.empty() ? sync_calls.size() : trace.syncs.size();
  a.range_count = trace.ranges.size();
  a.dropped_records = trace.dropped_records;
  a.incomplete_records = trace.incomplete_records;
  a.rejected_events = trace.rejected_events;
  a.window = trace.window;
  if (trace.event_count() > 0) a.trace_span_ns = duration(trace.origin(), trace.last_end());
}

/// An idle gap in which the GPU waited for the host to issue the next launch.
struct HostWait {
  Nanoseconds start = 0, end = 0;
};

/// Busy stretches of the GPU (kernels merged where they overlap or touch), in time order, each
/// marked when a left-out launch is in it.
struct BusyStretch {
  Nanoseconds start = 0, end = 0;
  const Kernel* first = nullptr;
  bool left_out = false;
};

std::vector<BusyStretch> busy_stretches(const std::vector<const Kernel*>& by_start, const LeftOut& left_out) {
  std::vector<BusyStretch> out;
  for (const auto* k : by_start) {
    if (out.empty() || k->start > out.back().end) {
      out.push_back({k->start, k->end, k, left_out(*k)});
      continue;
    }
    out.back().end = std::max(out.back().end, k->end);
    out.back().left_out = out.back().left_out || left_out(*k);
  }
  return out;
}

/// GPU busy and active time, the kernel span, and the idle gaps inside it: was the GPU waiting on
/// the host? Returns the gaps in which it was. Left-out launches add no busy time, and a gap beside
/// one is profiling's, not idle: both leave the kernel span.
std::vector<HostWait> busy_and_gaps(const Trace& trace, const std::vector<const Kernel*>& by_start,
                                    const LeftOut& left_out, const LaunchIndex& launches, Analysis& a) {
  std::vector<HostWait> host_waits;
  std::vector<std::pair<Nanoseconds, Nanoseconds>> kernel_intervals;
  kernel_intervals.reserve(by_start.size());
  for (const auto* k : by_start) {
    if (left_out(*k)) continue;
    kernel_intervals.emplace_back(k->start, k->end);
    a.kernel_time_ns += duration(k->start, k->end);
  }
  a.gpu_busy_ns = union_length(kernel_intervals);
  auto active = kernel_intervals;
  for (const auto& m : trace.memcpys) active.emplace_back(m.start, m.end);
  for (const auto& m : trace.memsets) active.emplace_back(m.start, m.end);
  a.gpu_active_ns = union_length(std::move(active));
  if (a.kernel_time_ns > a.gpu_busy_ns)
    a.kernel_overlap_fraction = static_cast<double>(a.kernel_time_ns - a.gpu_busy_ns) / static_cast<double>(a.kernel_time_ns);
  if (by_start.empty()) return host_waits;

  const std::vector<BusyStretch> stretches = busy_stretches(by_start, left_out);
  Nanoseconds last = 0;
  for (const auto& s : stretches) last = std::max(last, s.end);
  const Nanoseconds whole_span = duration(stretches.front().start, last);
  for (std::size_t i = 1; i < stretches.size(); ++i) {
    if (stretches[i].left_out || stretches[i - 1].left_out) continue;  // profiling's gap
    const Nanoseconds gap = stretches[i].start - stretches[i - 1].end;
    ++a.gap_count;
    a.idle_time_ns += gap;
    a.largest_gap_ns = std::max(a.largest_gap_ns, gap);
    const auto point = launches.launch_of(*stretches[i].first);
    if (!point)
      a.idle_unattributed_ns += gap;
    else if (point->at >= stretches[i - 1].end) {
      a.idle_waiting_on_host_ns += gap;  // the host had not even begun (or queued) the launch
      host_waits.push_back({stretches[i - 1].end, stretches[i].start});
    }
  }
  // Without left-out launches busy + idle is the whole span; with them, what is left of it.
  a.kernel_span_ns = left_out.count == 0 ? whole_span : std::min(whole_span, a.gpu_busy_ns + a.idle_time_ns);
  a.left_out_span_ns = whole_span - a.kernel_span_ns;
  a.idle_time_ns = a.kernel_span_ns > a.gpu_busy_ns ? a.kernel_span_ns - a.gpu_busy_ns : 0;
  const Nanoseconds trace_span = a.trace_span_ns > a.left_out_span_ns ? a.trace_span_ns - a.left_out_span_ns : 0;
  if (a.kernel_span_ns > 0) a.busy_fraction_of_kernel_span = static_cast<double>(a.gpu_busy_ns) / static_cast<double>(a.kernel_span_ns);
  if (trace_span > 0) a.busy_fraction_of_trace_span = static_cast<double>(a.gpu_busy_ns) / static_cast<double>(trace_span);
  if (a.idle_time_ns > 0)
    a.host_bound_fraction_of_idle = static_cast<double>(a.idle_waiting_on_host_ns) / static_cast<double>(a.idle_time_ns);
  return host_waits;
}

/// Median, mean, p90, min and max of `values` (sorted here) into the given fields.
void describe(std::vector<double>& values, double& median_ns, double& mean_ns, double& p90_ns, double& min_ns,
              double& max_ns) {
  if (values.empty()) return;
  std::sort(values.begin(), values.end());
  median_ns = quantile_sorted(values, 0.5);
  p90_ns = quantile_sorted(values, 0.9);
  min_ns = values.front();
  max_ns = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  mean_ns = sum / static_cast<double>(values.size());
}

/// For each kernel, when the work queued before it on its stream (kernels, copies, memsets that
/// started earlier on the same device and stream) had all ended; nullopt for the first activity
/// on its stream, where the trace shows no earlier work.
std::unordered_map<const Kernel*, std::optional<Nanoseconds>> stream_free_at(const Trace& trace) {
  struct Item {
    std::uint64_t stream;
    Nanoseconds start, end;
    const Kernel* kernel;
  };
  std::vector<Item> items;
  items.reserve(trace.kernels.size() + trace.memcpys.size() + trace.memsets.size());
  auto key = [](std::uint32_t device, std::uint32_t stream) { return (static_cast<std::uint64_t>(device) << 32) | stream; };
  for (const auto& k : trace.kernels) items.push_back({key(k.device, k.stream), k.start, k.end, &k});
  for (const auto& m : trace.memcpys) items.push_back({key(m.device, m.stream), m.start, m.end, nullptr});
  for (const auto& m : trace.memsets) items.push_back({key(m.device, m.stream), m.start, m.end, nullptr});
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& x, const Item& y) { return x.stream != y.stream ? x.stream < y.stream : x.start < y.start; });
  std::unordered_map<const Kernel*, std::optional<Nanoseconds>> free_at;
  free_at.reserve(trace.kernels.size());
  std::optional<Nanoseconds> busy_until;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i == 0 || items[i].stream != items[i - 1].stream) busy_until.reset();
    if (items[i].kernel != nullptr) free_at.emplace(items[i].kernel, busy_until);
    busy_until = std::max(busy_until.value_or(0), items[i].end);
  }
  return free_at;
}

/// Kernel start minus the start of its launch call, for the first kernel of each launch call (a
/// graph launch runs many), split into the time queued behind earlier work on the stream and the
/// launch overhead. In a windowed trace the first kernel on a stream is not split: the window may
/// have cut out the work it waited behind (e.g. un-synchronized warm-up steps before a step range).
void launch_latency(const Trace& trace, const std::vector<const Kernel*>& by_start, const LaunchIndex& launches,
                    Analysis& a) {
  std::unordered_map<std::uint32_t, std::pair<const Kernel*, Nanoseconds>> first_kernel;  // with its launch point
  first_kernel.reserve(by_start.size());
  for (const auto* k : by_start) {
    const auto point = launches.launch_of(*k);
    if (!point) {
      ++a.kernels_without_launch_call;
      continue;
    }
    if (!point->call) ++a.launches_timed_from_queue;
    first_kernel.emplace(k->correlation, std::pair{k, point->at});  // by_start order: the first one wins
  }
  if (first_kernel.empty()) return;
  const auto free_at = stream_free_at(trace);
  std::vector<double> latency, queued, overhead;
  latency.reserve(first_kernel.size());
  queued.reserve(first_kernel.size());
  overhead.reserve(first_kernel.size());
  for (const auto& [corr, launch] : first_kernel) {
    const auto [k, at] = launch;
    const double issued = static_cast<double>(at);
    const double total = static_cast<double>(k->start) - issued;
    // Behind earlier work: until the stream was free (or the kernel started, whichever came first:
    // with programmatic dependent launch a kernel may start before its predecessor ends).
    latency.push_back(total);
    const std::optional<Nanoseconds> stream_free = free_at.at(k);
    if (!stream_free && !trace.window.empty()) {
      ++a.launches_not_split;
      continue;
    }
    const double free = static_cast<double>(std::min(stream_free.value_or(0), k->start));
    const double waited = std::clamp(free - issued, 0.0, std::max(total, 0.0));
    if (waited > 0) ++a.launches_queued;
    queued.push_back(waited);
    overhead.push_back(total - waited);
  }
  a.launch_latency_count = latency.size();
  describe(latency, a.launch_latency_median_ns, a.launch_latency_mean_ns, a.launch_latency_p90_ns,
           a.launch_latency_min_ns, a.launch_latency_max_ns);
  describe(queued, a.launch_queued_median_ns, a.launch_queued_mean_ns, a.launch_queued_p90_ns, a.launch_queued_min_ns,
           a.launch_queued_max_ns);
  describe(overhead, a.launch_overhead_median_ns, a.launch_overhead_mean_ns, a.launch_overhead_p90_ns,
           a.launch_overhead_min_ns, a.launch_overhead_max_ns);
}

void top_kernels(const Trace& trace, const LeftOut& left_out, std::size_t top, Analysis& a) {
  std::unordered_map<std::uint32_t, DurationStats> per_name;
  std::unordered_set<std::uint32_t> names;
  for (const auto& k : trace.kernels) {
    names.insert(k.name);
    if (!left_out(k)) per_name[k.name].add(duration(k.start, k.end));
  }
  a.distinct_kernels = names.size();
  std::vector<KernelStat> all;
  all.reserve(per_name.size());
  for (const auto& [name, stats] : per_name) {
    KernelStat s{trace.strings.at(name), stats, 0};
    if (a.kernel_time_ns > 0) s.percent_of_kernel_time = 100.0 * static_cast<double>(stats.total_ns) / static_cast<double>(a.kernel_time_ns);
    all.push_back(std::move(s));
  }
  std::sort(all.begin(), all.end(), [](const KernelStat& x, const KernelStat& y) {
    return x.time.total_ns != y.time.total_ns ? x.time.total_ns > y.time.total_ns : x.name < y.name;
  });
  if (all.size() > top) all.resize(top);
  a.top_kernels = std::move(all);
}

/// NVTX ranges: host time and the kernels launched inside them (same thread). A range that
/// launched a left-out kernel ran under profiling: it is counted in ranges_left_out instead.
void top_ranges(const Trace& trace, const LaunchTimeline& timeline, std::size_t top, Analysis& a) {
  std::unordered_map<std::uint32_t, RangeStat> per_name;
  for (const auto& r : trace.ranges) {
    if (r.marker) continue;
    RangeStat inside;
    std::uint64_t left_out = 0;
    for (const std::uint64_t key : {thread_key(r.process, r.thread), any_thread}) {
      auto it = timeline.per_thread.find(key);
      if (it == timeline.per_thread.end()) continue;
      const Launches& l = it->second;
      const auto lo = static_cast<std::size_t>(std::lower_bound(l.starts.begin(), l.starts.end(), r.start) - l.starts.begin());
      const auto hi = static_cast<std::size_t>(std::upper_bound(l.starts.begin(), l.starts.end(), r.end) - l.starts.begin());
      if (hi > lo) {
        inside.kernels += l.count_prefix[hi] - l.count_prefix[lo];
        inside.kernel_time_ns += l.time_prefix[hi] - l.time_prefix[lo];
        left_out += l.left_out_prefix[hi] - l.left_out_prefix[lo];
      }
    }
    if (left_out > 0) {
      ++a.ranges_left_out;
      continue;
    }
    RangeStat& s = per_name[r.name];
    s.time.add(duration(r.start, r.end));
    s.kernels += inside.kernels;
    s.kernel_time_ns += inside.kernel_time_ns;
  }
  std::vector<RangeStat> all;
  for (auto& [name, s] : per_name) {
    s.name = trace.strings.at(name);
    all.push_back(std::move(s));
  }
  std::sort(all.begin(), all.end(), [](const RangeStat& x, const RangeStat& y) {
    return x.time.total_ns != y.time.total_ns ? x.time.total_ns > y.time.total_ns : x.name < y.name;
  });
  if (all.size() > top) all.resize(top);
  a.top_ranges = std::move(all);
}

/// The program's number of the step whose range began at `start`: the recorded step holding it
/// in a scheduled trace, else `place` (its place among the trace's steps).
std::uint64_t step_number(const Trace& trace, Nanoseconds start, std::size_t place) {
  for (const RecordedStep& s : trace.recorded_steps)
    if (start >= s.start_ns && start < s.end_ns) return s.number;
  return place;
}

/// Steps: kernels whose launch call began (or, without a call, whose launch was queued) inside each
/// step range (any thread); for a kernel with neither, that began inside it.
void steps(const Trace& trace, const LaunchTimeline& timeline, const LeftOut& left_out, const std::string& step_range,
           Analysis& a) {
  if (step_range.empty()) return;
  if (auto id = trace.strings.find(step_range)) {
    std::size_t place = 0;
    for (const auto& r : trace.ranges) {
      if (r.marker || r.name != *id) continue;
      StepStat step;
      step.number = step_number(trace, r.start, place++);
      step.start_ns = r.start;
      step.duration_ns = duration(r.start, r.end);
      auto lo = std::lower_bound(timeline.all.begin(), timeline.all.end(), r.start,
                                 [](const auto& x, Nanoseconds t) { return x.first < t; });
      std::vector<std::pair<Nanoseconds, Nanoseconds>> intervals;
      Nanoseconds gpu_end = 0;
      bool profiled = false;
      for (auto it = lo; it != timeline.all.end() && it->first <= r.end; ++it) {
        const Kernel& k = *it->second;
        profiled = profiled || left_out(k);
        step.gpu_start_ns = step.kernels == 0 ? k.start : std::min(step.gpu_start_ns, k.start);
        gpu_end = std::max(gpu_end, k.end);
        ++step.kernels;
        intervals.emplace_back(k.start, k.end);
      }
      if (profiled) {  // its times are profiling's: out of the steps' numbers
        ++a.steps_left_out;
        continue;
      }
      step.gpu_span_ns = duration(step.gpu_start_ns, gpu_end);
      step.gpu_busy_ns = union_length(std::move(intervals));
      a.steps.push_back(step);
    }
  }
  if (a.steps.empty()) return;
  std::vector<double> counts, times, busy, spans, shares;
  a.kernels_per_step_min = std::numeric_limits<std::uint64_t>::max();
  for (const auto& s : a.steps) {
    counts.push_back(static_cast<double>(s.kernels));
    times.push_back(static_cast<double>(s.duration_ns));
    busy.push_back(static_cast<double>(s.gpu_busy_ns));
    spans.push_back(static_cast<double>(s.gpu_span_ns));
    if (s.gpu_span_ns > 0) shares.push_back(static_cast<double>(s.gpu_busy_ns) / static_cast<double>(s.gpu_span_ns));
    if (s.kernels > 0 && s.gpu_start_ns + s.gpu_span_ns > s.start_ns + s.duration_ns) ++a.steps_gpu_outlasting_host;
    a.kernels_per_step_min = std::min(a.kernels_per_step_min, s.kernels);
    a.kernels_per_step_max = std::max(a.kernels_per_step_max, s.kernels);
  }
  a.kernels_per_step_median = median(counts);
  a.step_time_median_ns = median(times);
  a.step_gpu_busy_median_ns = median(busy);
  a.step_gpu_span_median_ns = median(spans);
  if (!shares.empty()) a.step_busy_fraction_of_gpu_span_median = median(shares);
}

/// Of the time the GPU waited on the host, the part before the first step began (start-up).
void start_up_waits(const std::vector<HostWait>& host_waits, Analysis& a) {
  if (a.steps.empty()) return;
  Nanoseconds first_step = a.steps.front().start_ns;
  for (const auto& s : a.steps) first_step = std::min(first_step, s.start_ns);
  for (const auto& w : host_waits)
    if (w.start < first_step) a.idle_waiting_on_host_before_first_step_ns += std::min(w.end, first_step) - w.start;
}

/// Copies and memsets by kind, and the host's time waiting in synchronization.
void memory_traffic(const Trace& trace, const std::vector<const ApiCall*>& sync_calls, Analysis& a) {
  std::map<MemcpyKind, MemcpyStat> per_kind;
  for (const auto& m : trace.memcpys) {
    MemcpyStat& s = per_kind[m.kind];
    s.kind = m.kind;
    ++s.count;
    s.bytes += m.bytes;
    s.time_ns += duration(m.start, m.end);
  }
  for (auto& [kind, s] : per_kind) a.memcpy_totals.push_back(s);
  for (const auto& m : trace.memsets) {
    a.memset_bytes += m.bytes;
    a.memset_time_ns += duration(m.start, m.end);
  }
  for (const auto& s : trace.syncs) a.sync_time_ns += duration(s.start, s.end);
  for (const ApiCall* c : sync_calls) a.sync_time_ns += duration(c->start, c->end);
}

/// Device-to-host copies of one size by one API call, repeated often enough to be in a loop, and
/// how long the GPU sat idle after them.
void hidden_syncs(const Trace& trace, const std::vector<const Kernel*>& by_start, const LaunchIndex& launches,
                  std::uint64_t min_repeats, Analysis& a) {
  std::vector<Nanoseconds> kernel_starts;
  kernel_starts.reserve(by_start.size());
  for (const auto* k : by_start) kernel_starts.push_back(k->start);
  std::map<std::pair<std::string, std::uint64_t>, HiddenSync> copies;
  for (const auto& m : trace.memcpys) {
    if (m.kind != MemcpyKind::device_to_host) continue;
    const ApiCall* call = launches.find(m.correlation);
    const std::string api = call ? trace.strings.at(call->name) : std::string("(no API record)");
    HiddenSync& h = copies[{api, m.bytes}];
    h.api = api;
    h.bytes = m.bytes;
    ++h.count;
    h.copy_time_ns += duration(m.start, m.end);
    auto next = std::lower_bound(kernel_starts.begin(), kernel_starts.end(), m.end);
    if (next != kernel_starts.end()) h.idle_after_ns += *next - m.end;
  }
  for (auto& [key, h] : copies)
    if (h.count >= min_repeats) a.hidden_syncs.push_back(h);
  std::sort(a.hidden_syncs.begin(), a.hidden_syncs.end(),
            [](const HiddenSync& x, const HiddenSync& y) { return x.count > y.count; });
}

/// "in the window (...)" or "over the whole trace, start-up included": what a finding covers.
std::string coverage(const Analysis& a) {
  return a.window.empty() ? "Over the whole trace (start-up included)" : fmt::format("In the window ({})", a.window);
}

/// Warnings worth the user's attention, from the numbers above.
std::vector<std::string> findings(const Analysis& a) {
  std::vector<std::string> out;
  for (const auto& r : a.rejected_events)
    out.push_back(fmt::format("{} event{} {}.", r.count, r.count == 1 ? "" : "s", r.reason));
  if (a.dropped_records > 0)
    out.push_back(fmt::format(
        "CUPTI dropped {} activity records for lack of buffer space: the counts and times below are incomplete.",
        a.dropped_records));
  if (a.incomplete_records > 0)
    out.push_back(fmt::format(
        "{} GPU activity records were still incomplete when tracing stopped (work queued but unfinished: synchronize "
        "before stopping) and were left out.",
        a.incomplete_records));
  if (a.kernel_count == 0)
    out.push_back("No kernels were recorded" + std::string(a.window.empty() ? "" : " in the window") +
                  ": did the program run CUDA work (and was the window right)?");
  if (a.kernel_times_overlap())
    out.push_back(fmt::format(
        "Kernels overlapped: their times sum to {} against {} of GPU busy time, so {} of the summed kernel time ran "
        "while another kernel was running too. With programmatic dependent launch (or concurrent streams) a kernel "
        "starts before the one it depends on ends and its time includes that wait: the per-kernel totals and shares "
        "of kernel time overstate what each kernel costs. GPU busy time is the measure of the whole.",
        format_ms(ms(static_cast<double>(a.kernel_time_ns))), format_ms(ms(static_cast<double>(a.gpu_busy_ns))),
        pct(a.kernel_overlap_fraction)));
  if (a.kernel_span_ns > 0 && a.idle_time_ns > a.kernel_span_ns / 5 && a.host_bound_fraction_of_idle > 0.5) {
    std::string text = fmt::format(
        "{}, the GPU was idle {} of the kernel span and, for {} of that idle time, the next launch had not even been "
        "issued: the host is the bottleneck (launch overhead, Python, synchronization). CUDA graphs, kernel fusion "
        "or more work per launch help.",
        coverage(a), pct(1 - a.busy_fraction_of_kernel_span), pct(a.host_bound_fraction_of_idle));
    if (a.idle_waiting_on_host_before_first_step_ns > 0)
      text += fmt::format(" {} of that waiting came before the first \"{}\" step (start-up: loading weights, "
                          "compiling, warming up); a window that starts at the first step, or skips the first seconds, leaves start-up "
                          "out.",
                          format_ms(ms(static_cast<double>(a.idle_waiting_on_host_before_first_step_ns))), a.step_range);
    out.push_back(std::move(text));
  }
  if (a.launches_queued > 0 && a.launch_queued_median_ns > a.launch_overhead_median_ns)
    out.push_back(fmt::format(
        "{} of {} launches were issued while their stream was still busy with earlier work: their launch latency "
        "(median {}) is mostly time queued behind that work (median {}), not launch overhead (median {}). The host "
        "runs ahead of the GPU here, which is what it should do.",
        a.launches_queued, a.launches_split(), format_ms(ms(a.launch_latency_median_ns)),
        format_ms(ms(a.launch_queued_median_ns)), format_ms(ms(a.launch_overhead_median_ns))));
  if (a.steps_gpu_outlasting_host > 0)
    out.push_back(fmt::format(
        "In {} of {} steps the GPU worked past the end of the step's host range (launches return before the GPU runs "
        "them): a step's GPU share is computed against its GPU span (first kernel start to last kernel end), and the "
        "host range is reported on its own.",
        a.steps_gpu_outlasting_host, a.steps.size()));
  for (const auto& h : a.hidden_syncs)
    out.push_back(fmt::format(
        "{} device-to-host copies of {} by {}: each one makes the host wait for the GPU to drain (a hidden "
        "synchronization, e.g. .item() or .cpu() in a loop); the GPU then sat idle {} after them in total.",
        h.count, format_bytes(static_cast<double>(h.bytes)), h.api, format_ms(ms(static_cast<double>(h.idle_after_ns)))));
  if (a.kernels_without_launch_call > 0 && a.kernels_without_launch_call < a.kernel_count)
    out.push_back(fmt::format("{} kernels have no launch call in the trace (launched before the window, by a "
                              "graph, or their API records were lost)",
                              a.kernels_without_launch_call));
  return out;
}

}  // namespace

Analysis analyze(const Trace& trace, const AnalysisOptions& options) {
  Analysis a;
  const std::vector<const ApiCall*> sync_calls = synchronize_calls(trace);
  count_events(trace, sync_calls, a);
  a.step_range = options.step_range;
  const LaunchIndex launches(trace);
  LeftOut left_out(trace);
  LaunchTimeline timeline = launch_timeline(trace, launches, left_out);
  if (leave_out_replayed_steps(trace, timeline, options.step_range, left_out))
    timeline = launch_timeline(trace, launches, left_out);
  std::vector<const Kernel*> by_start, kept_by_start;
  by_start.reserve(trace.kernels.size());
  for (const auto& k : trace.kernels) by_start.push_back(&k);
  std::stable_sort(by_start.begin(), by_start.end(), [](const Kernel* x, const Kernel* y) { return x->start < y->start; });
  kept_by_start.reserve(by_start.size());
  for (const Kernel* k : by_start)
    if (!left_out(*k)) kept_by_start.push_back(k);

  const std::vector<HostWait> host_waits = busy_and_gaps(trace, by_start, left_out, launches, a);
  launch_latency(trace, kept_by_start, launches, a);
  top_kernels(trace, left_out, options.top, a);
  top_ranges(trace, timeline, options.top, a);
  steps(trace, timeline, left_out, options.step_range, a);
  a.kernels_left_out = left_out.count;
  if (left_out.count > 0) a.left_out_reason = left_out.reason;
  start_up_waits(host_waits, a);
  memory_traffic(trace, sync_calls, a);
  hidden_syncs(trace, by_start, launches, options.hidden_sync_min_repeats, a);
  a.findings = findings(a);
  return a;
}

// ---- the printed summary ---------------------------------------------------------------------

namespace {

std::string t(double ns) { return format_ms(ns / 1e6); }
std::string t(Nanoseconds ns) { return format_ms(static_cast<double>(ns) / 1e6); }

std::string shorten(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name;
  return name.substr(0, width - 3) + "...";
}

}  // namespace

std::string launch_split_text(const Analysis& a) {
  if (a.launch_latency_count == 0) return "-";
  if (a.launches_split() == 0)
    return fmt::format("not split (latency {}: the first launch on its stream in the window)",
                       format_ms(ms(a.launch_latency_median_ns)));
  std::string text = fmt::format("{} / {}", format_ms(ms(a.launch_queued_median_ns)), format_ms(ms(a.launch_overhead_median_ns)));
  if (a.launches_not_split > 0) text += fmt::format(" ({} of {} not split)", a.launches_not_split, a.launch_latency_count);
  return text;
}

std::string format_analysis(const Analysis& a) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("Trace: {} kernels ({} distinct), {} memcpy, {} memset, {} API calls, {} sync waits, {} NVTX ranges",
                   a.kernel_count, a.distinct_kernels, a.memcpy_count, a.memset_count, a.api_count, a.sync_count,
                   a.range_count));
  line("Window: " + (a.window.empty() ? std::string("the whole trace, start-up included (a window from the first step, or one "
                                                   "that skips the first seconds, leaves start-up out)")
                                     : a.window));
  line(fmt::format("CUPTI dropped records: {}{}", a.dropped_records,
                   a.incomplete_records ? fmt::format("; incomplete records left out: {}", a.incomplete_records) : std::string()));
  if (a.kernels_left_out > 0) {
    std::string launched;  // the steps and ranges that launched them, where there are any
    if (a.steps_left_out > 0 || a.ranges_left_out > 0)
      launched = fmt::format("{} step{} and {} NVTX range{} that launched them, ", a.steps_left_out,
                             a.steps_left_out == 1 ? "" : "s", a.ranges_left_out, a.ranges_left_out == 1 ? "" : "s");
    line(fmt::format("Left out of every time below: {} launch{} under hardware counters ({}{} of the kernel span): {}. "
                     "The trace file keeps them.",
                     a.kernels_left_out, a.kernels_left_out == 1 ? "" : "es", launched, t(a.left_out_span_ns),
                     a.left_out_reason));
  }
  if (a.kernel_count > 0) {
    line(fmt::format("Span: {} from first to last event; kernels ran over {}", t(a.trace_span_ns), t(a.kernel_span_ns)));
    line(fmt::format("GPU busy (union of kernels, all streams): {} = {} of the kernel span, {} of the trace span",
                     t(a.gpu_busy_ns), pct(a.busy_fraction_of_kernel_span), pct(a.busy_fraction_of_trace_span)));
    line(fmt::format("Kernel times summed: {}; overlap share {} (summed time during which another kernel also ran)",
                     t(a.kernel_time_ns), pct(a.kernel_overlap_fraction)));
    line(fmt::format("Idle: {} in {} gaps (largest {}); GPU waiting on the host (next launch issued after it went "
                     "idle): {} = {} of idle",
                     t(a.idle_time_ns), a.gap_count, t(a.largest_gap_ns), t(a.idle_waiting_on_host_ns),
                     pct(a.host_bound_fraction_of_idle)));
    if (a.launch_latency_count > 0) {
      const char* from = a.launches_timed_from_queue == 0 ? "launch call start"
                         : a.launches_timed_from_queue >= a.launch_latency_count
                             ? "launch queued"
                             : "launch call start, or launch queued where the call was not recorded,";
      line(fmt::format("Launch latency ({} to kernel start): median {}, p90 {}, min {}, max {} ({} launches)", from,
                       t(a.launch_latency_median_ns), t(a.launch_latency_p90_ns), t(a.launch_latency_min_ns),
                       t(a.launch_latency_max_ns), a.launch_latency_count));
      if (a.launches_not_split > 0)
        line(fmt::format("  {} launch(es) not split into queued and overhead: the first on their stream in this window, "
                         "which may have cut out the work they waited behind",
                         a.launches_not_split));
      if (a.launches_split() > 0) {
        line(fmt::format("  queued behind earlier work on the stream: median {}, p90 {}, max {} ({} launches queued)",
                         t(a.launch_queued_median_ns), t(a.launch_queued_p90_ns), t(a.launch_queued_max_ns),
                         a.launches_queued));
        line(fmt::format("  launch overhead (the rest): median {}, p90 {}, min {}, max {}",
                         t(a.launch_overhead_median_ns), t(a.launch_overhead_p90_ns), t(a.launch_overhead_min_ns),
                         t(a.launch_overhead_max_ns)));
      }
    }
  }
  if (!a.top_kernels.empty()) {
    line("");
    if (a.kernel_times_overlap())
      line(fmt::format("Top kernels by total GPU time (kernels overlapped: their times sum to {} against {} busy, so "
                       "totals include time run alongside other kernels and % is of the sum):",
                       t(a.kernel_time_ns), t(a.gpu_busy_ns)));
    else
      line("Top kernels by total GPU time:");
    line(fmt::format("  {:>6}  {:>10}  {:>8}  {:>10}  {:>10}  {:>10}  {}", "% time", "total", "count", "mean", "min",
                     "max", "name"));
    for (const auto& k : a.top_kernels)
      line(fmt::format("  {:>5.1f}%  {:>10}  {:>8}  {:>10}  {:>10}  {:>10}  {}", k.percent_of_kernel_time,
                       t(k.time.total_ns), k.time.count, t(k.time.mean_ns), t(k.time.min_ns), t(k.time.max_ns),
                       shorten(k.name, 90)));
  }
  if (!a.top_ranges.empty()) {
    line("");
    line("Top NVTX ranges by host time:");
    line(fmt::format("  {:>10}  {:>8}  {:>10}  {:>9}  {:>12}  {}", "total", "count", "mean", "kernels", "kernel time",
                     "name"));
    for (const auto& r : a.top_ranges)
      line(fmt::format("  {:>10}  {:>8}  {:>10}  {:>9}  {:>12}  {}", t(r.time.total_ns), r.time.count,
                       t(r.time.mean_ns), r.kernels, t(r.kernel_time_ns), shorten(r.name, 60)));
  }
  if (!a.step_range.empty()) {
    line("");
    if (a.steps.empty())
      line(fmt::format("Steps: no NVTX range named \"{}\" in the trace", a.step_range));
    else
      line(fmt::format("Steps (\"{}\"): {} steps{}; kernels per step median {:g} (min {}, max {}); per step (medians): "
                       "host range {}, GPU span {} (first kernel start to last kernel end), GPU busy {} = {} of the "
                       "GPU span",
                       a.step_range, a.steps.size(),
                       a.steps_left_out > 0 ? fmt::format(" ({} more ran under hardware counters: left out)", a.steps_left_out)
                                            : std::string(),
                       a.kernels_per_step_median, a.kernels_per_step_min,
                       a.kernels_per_step_max, t(a.step_time_median_ns), t(a.step_gpu_span_median_ns),
                       t(a.step_gpu_busy_median_ns), pct(a.step_busy_fraction_of_gpu_span_median)));
    // A scheduled trace holds some of the program's steps: say which.
    std::vector<std::uint64_t> numbers;
    bool renumbered = false;
    for (std::size_t i = 0; i < a.steps.size(); ++i) {
      numbers.push_back(a.steps[i].number);
      renumbered |= a.steps[i].number != i;
    }
    if (renumbered) line(fmt::format("  the program's steps {} (0-based)", describe_step_numbers(numbers)));
  }
  if (!a.memcpy_totals.empty() || a.memset_count > 0) {
    line("");
    for (const auto& m : a.memcpy_totals)
      line(fmt::format("Memcpy {}: {} copies, {}, {} on the GPU", to_string(m.kind), m.count,
                       format_bytes(static_cast<double>(m.bytes)), t(m.time_ns)));
    if (a.memset_count > 0)
      line(fmt::format("Memset: {} calls, {}, {}", a.memset_count, format_bytes(static_cast<double>(a.memset_bytes)),
                       t(a.memset_time_ns)));
  }
  if (a.sync_count > 0) line(fmt::format("Host waited in synchronization calls: {} ({} waits)", t(a.sync_time_ns), a.sync_count));
  if (!a.findings.empty()) {
    line("");
    line("Findings:");
    for (const auto& f : a.findings) line("  - " + f);
  }
  return out;
}

// ---- JSON --------------------------------------------------------------------------------------

NLOHMANN_JSON_SERIALIZE_ENUM(MemcpyKind, {{MemcpyKind::unknown, "unknown"},
                                          {MemcpyKind::host_to_device, "HtoD"},
                                          {MemcpyKind::device_to_host, "DtoH"},
                                          {MemcpyKind::device_to_device, "DtoD"},
                                          {MemcpyKind::host_to_host, "HtoH"},
                                          {MemcpyKind::peer_to_peer, "PtoP"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DurationStats, count, total_ns, min_ns, max_ns, mean_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelStat, name, time, percent_of_kernel_time)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RangeStat, name, time, kernels, kernel_time_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StepStat, number, start_ns, duration_ns, kernels, gpu_start_ns, gpu_span_ns,
                                                gpu_busy_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RejectedEvents, reason, count)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MemcpyStat, kind, count, bytes, time_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HiddenSync, api, bytes, count, copy_time_ns, idle_after_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(
    Analysis, kernel_count, memcpy_count, memset_count, api_count, sync_count, range_count, dropped_records, incomplete_records,
    rejected_events, window, trace_span_ns, kernel_span_ns, kernel_time_ns, gpu_busy_ns, kernel_overlap_fraction,
    gpu_active_ns, busy_fraction_of_kernel_span, busy_fraction_of_trace_span, gap_count, idle_time_ns,
    idle_waiting_on_host_ns, idle_unattributed_ns, host_bound_fraction_of_idle, largest_gap_ns,
    idle_waiting_on_host_before_first_step_ns, launch_latency_count, launch_latency_median_ns, launch_latency_mean_ns,
    launch_latency_p90_ns, launch_latency_min_ns, launch_latency_max_ns, launches_queued, launch_queued_median_ns,
    launch_queued_mean_ns, launch_queued_p90_ns, launch_queued_min_ns, launch_queued_max_ns, launch_overhead_median_ns,
    launch_overhead_mean_ns, launch_overhead_p90_ns, launch_overhead_min_ns, launch_overhead_max_ns,
    kernels_without_launch_call, launches_timed_from_queue, top_kernels, top_ranges, distinct_kernels, step_range, steps, kernels_per_step_median,
    kernels_per_step_min, kernels_per_step_max, step_time_median_ns, step_gpu_busy_median_ns, step_gpu_span_median_ns,
    step_busy_fraction_of_gpu_span_median, steps_gpu_outlasting_host, memcpy_totals, memset_time_ns, memset_bytes,
    hidden_syncs, sync_time_ns, findings)

nlohmann::json to_json(const Analysis& analysis) {
  nlohmann::json j = analysis;
  // past the field limit of the macro above
  j["launches_not_split"] = analysis.launches_not_split;
  if (analysis.kernels_left_out > 0) {  // only traces with hardware counters have them
    j["kernels_left_out"] = analysis.kernels_left_out;
    j["steps_left_out"] = analysis.steps_left_out;
    j["ranges_left_out"] = analysis.ranges_left_out;
    j["left_out_span_ns"] = analysis.left_out_span_ns;
    j["left_out_reason"] = analysis.left_out_reason;
  }
  j["schema"] = "ridge.trace_analysis/1";
  return j;
}

Analysis analysis_from_json(const nlohmann::json& j) {
  try {
    Analysis a = j.get<Analysis>();
    a.launches_not_split = j.value("launches_not_split", std::uint64_t{0});
    a.kernels_left_out = j.value("kernels_left_out", std::uint64_t{0});
    a.steps_left_out = j.value("steps_left_out", std::uint64_t{0});
    a.ranges_left_out = j.value("ranges_left_out", std::uint64_t{0});
    a.left_out_span_ns = j.value("left_out_span_ns", Nanoseconds{0});
    a.left_out_reason = j.value("left_out_reason", std::string());
    return a;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("not a ridge trace summary: {}", e.what()));
  }
}

TraceFileAnalysis analyze_trace_file(const std::string& path, const Window& window, const AnalysisOptions& options) {
  Trace t = load_trace(path);
  if (!window.empty()) t = apply_window(t, window);
  return {path, t.command, analyze(t, options)};
}

nlohmann::json to_json(const TraceFileAnalysis& f) {
  nlohmann::json j = to_json(f.analysis);
  j["trace_file"] = f.file;
  j["command"] = f.command;
  return j;
}

}  // namespace ridge::trace
