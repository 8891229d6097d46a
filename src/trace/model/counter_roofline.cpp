// The measured roofline of a trace: every profiled kernel name placed by its counted bytes and
// FLOPs, its time taken from the launches that ran untouched, its bound named, and the time it
// would save at its roof, ranked.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "ridge/ceilings.hpp"
#include "ridge/format.hpp"
#include "ridge/trace/counters.hpp"
#include "ridge/errors.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/roofline.hpp"
#include "ridge/trace/events.hpp"
#include "launch_index.hpp"

namespace ridge::trace {

namespace {

struct NameTotals {
  std::uint64_t calls = 0, profiled = 0, untouched = 0;
  double untouched_ns = 0, profiled_pass_ns = 0;
  double dram = 0, l2 = 0;
  std::map<std::string, double> flops;
};

std::map<std::uint32_t, NameTotals> totals_by_name(const Trace& trace) {
  const CounterRowIndex index(trace.counters);
  std::map<std::uint32_t, NameTotals> totals;
  for (const auto& k : trace.kernels) {
    if (index.profiler_kernel(k)) continue;  // not the program's
    NameTotals& t = totals[k.name];
    ++t.calls;
    const CounterRow* row = index.find(k);
    if (row == nullptr && trace.counters.is_perturbed(k.correlation)) continue;  // serialized by profiling
    if (row == nullptr) {
      ++t.untouched;
      t.untouched_ns += static_cast<double>(k.end - k.start);
      continue;
    }
    const LaunchWork w = launch_work(trace.counters, *row);
    ++t.profiled;
    t.profiled_pass_ns += w.profiled_duration_ns > 0 ? w.profiled_duration_ns : static_cast<double>(k.end - k.start);
    t.dram += w.dram_bytes();
    t.l2 += w.l2_bytes;
    for (const auto& [precision, f] : w.flops) t.flops[precision] += f;
  }
  return totals;
}

/// Time of all calls of a name: the untouched launches' mean per call, else the profiled passes'.
double name_time_ns(const NameTotals& t, bool* from_profiled) {
  *from_profiled = t.untouched == 0;
  if (t.untouched > 0) return t.untouched_ns / static_cast<double>(t.untouched) * static_cast<double>(t.calls);
  return t.profiled == 0 ? 0 : t.profiled_pass_ns / static_cast<double>(t.profiled) * static_cast<double>(t.calls);
}

/// Seconds the FLOPs of one call take at the peaks; precisions without a peak are named in `unknown`.
double compute_seconds(const std::map<std::string, double>& flops, const DeviceCeilings& c, std::vector<std::string>& unknown) {
  double seconds = 0;
  for (const auto& [precision, f] : flops) {
    const double peak = c.peak_flops(ceiling_dtype_of(precision));
    if (peak > 0)
      seconds += f / peak;
    else if (std::find(unknown.begin(), unknown.end(), precision) == unknown.end())
      unknown.push_back(precision);
  }
  return seconds;
}

void classify(CounterRooflineRow& r, double per_call_ns, double memory_s, double compute_s) {
  const double roof_ns = std::max(memory_s, compute_s) * 1e9;
  const double share_of_roof = per_call_ns > 0 ? roof_ns / per_call_ns : 0;
  if (share_of_roof >= bound_share_threshold) {
    r.bound = memory_s >= compute_s ? Bound::memory : Bound::compute;
    r.reason = r.bound == Bound::memory
                   ? fmt::format("at {:.0f}% of DRAM bandwidth", 100 * r.bytes_share_of_peak)
                   : fmt::format("at {:.0f}% of the {} peak", 100 * r.flops_share_of_peak, r.precision);
  } else if (per_call_ns < latency_bound_below_ns) {
    r.reason = fmt::format("{:.1f} us a call: launch and latency, not bandwidth or FLOPs, set its time", per_call_ns / 1e3);
  } else {
    r.reason = fmt::format("{:.0f}% of its roof (DRAM {:.0f}%, compute {:.0f}%): latency, occupancy, L2 or another unit binds it",
                           100 * share_of_roof, 100 * r.bytes_share_of_peak, 100 * r.flops_share_of_peak);
  }
  r.time_at_roof_ns = std::min(roof_ns, per_call_ns) * static_cast<double>(r.calls);
  r.win_ns = std::max(0.0, r.time_ns - r.time_at_roof_ns);
}

/// A row's per-call bytes and FLOPs (and calls, time) set: its intensity, rates, shares of the
/// ceilings, bound and time at the roof.
void place(CounterRooflineRow& r, const DeviceCeilings& c, std::vector<std::string>& unknown) {
  LaunchWork w;
  w.flops = r.flops_by_precision;
  r.flops = w.total_flops();
  r.precision = w.dominant_precision();
  r.intensity = r.dram_bytes > 0 ? r.flops / r.dram_bytes : 0;
  const double per_call_ns = r.time_ns / static_cast<double>(r.calls);
  const double per_call_s = per_call_ns * 1e-9;
  if (per_call_s > 0) {
    r.attained_bytes_per_s = r.dram_bytes / per_call_s;
    r.attained_flops_per_s = r.flops / per_call_s;
  }
  if (c.memory_bytes_per_s > 0) r.bytes_share_of_peak = r.attained_bytes_per_s / c.memory_bytes_per_s;
  const double peak = r.precision.empty() ? 0 : c.peak_flops(ceiling_dtype_of(r.precision));
  if (peak > 0) r.flops_share_of_peak = r.attained_flops_per_s / peak;
  const double memory_s = c.memory_bytes_per_s > 0 ? r.dram_bytes / c.memory_bytes_per_s : 0;
  classify(r, per_call_ns, memory_s, compute_seconds(r.flops_by_precision, c, unknown));
}

CounterRooflineRow row_of(const std::string& name, const NameTotals& t, const DeviceCeilings& c, std::vector<std::string>& unknown) {
  CounterRooflineRow r;
  r.name = name;
  r.calls = t.calls;
  r.profiled_calls = t.profiled;
  r.time_ns = name_time_ns(t, &r.time_from_profiled_pass);
  const double n = static_cast<double>(t.profiled);
  r.dram_bytes = t.dram / n;
  r.l2_bytes = t.l2 / n;
  for (const auto& [precision, f] : t.flops) r.flops_by_precision[precision] = f / n;
  place(r, c, unknown);
  return r;
}

/// Per call of one kernel name: what a launch without counters of its own is taken to do.
struct NameEstimate {
  double time_ns = 0, roof_ns = 0;  // roof: the time at the roof (<= time)
  double dram = 0, l2 = 0;
  std::map<std::string, double> flops;
  bool profiled = false;
  bool time_from_profiled_pass = false;
};

/// The launches of one group of kernels (an NVTX range, a step), added up.
struct GroupTotals {
  std::uint64_t calls = 0, own_counters = 0, without_counters = 0;
  double time_ns = 0, roof_ns = 0, time_without_counters_ns = 0;
  double dram = 0, l2 = 0;
  std::map<std::string, double> flops;
  bool time_from_profiled_pass = false;
};

/// The group row: per-call figures are the group's totals over its launches; the time at the roof
/// is the sum of its launches' (each kernel at its own roof), not the roof of the averages.
CounterRooflineRow group_row(const std::string& name, const GroupTotals& g, const DeviceCeilings& c,
                             std::vector<std::string>& unknown) {
  CounterRooflineRow r;
  r.name = name;
  r.calls = g.calls;
  r.profiled_calls = g.own_counters;
  r.time_ns = g.time_ns;
  r.time_from_profiled_pass = g.time_from_profiled_pass;
  const double n = static_cast<double>(g.calls);
  r.dram_bytes = g.dram / n;
  r.l2_bytes = g.l2 / n;
  for (const auto& [precision, f] : g.flops) r.flops_by_precision[precision] = f / n;
  place(r, c, unknown);
  r.time_at_roof_ns = std::min(g.roof_ns, r.time_ns);
  r.win_ns = std::max(0.0, r.time_ns - r.time_at_roof_ns);
  if (g.without_counters > 0)
    r.reason += fmt::format("; {} of its {} launches ({}) are kernels without counters, counted at their time", g.without_counters,
                            g.calls, format_ms(g.time_without_counters_ns / 1e6));
  return r;
}

/// Which group each kernel launch falls in: the innermost NVTX range on its launching thread (the
/// step range left out), or the step it was launched in. Empty: none (left out of a step grouping).
class GroupOf {
 public:
  GroupOf(const Trace& trace, const CounterRooflineOptions& options) : trace_(trace), launches_(trace), by_(options.by) {
    const std::optional<std::uint32_t> step = options.step_range.empty() ? std::nullopt : trace.strings.find(options.step_range);
    for (const auto& r : trace.ranges) {
      if (r.marker) continue;
      const bool is_step = step && r.name == *step;
      if (by_ == CounterGrouping::step && is_step) steps_.push_back(&r);
      if (by_ == CounterGrouping::nvtx_range && !is_step) {
        by_thread_[detail::thread_key(r.process, r.thread)].push_back(&r);
        by_thread_[detail::any_thread].push_back(&r);
      }
    }
    const auto by_start = [](const NvtxRange* a, const NvtxRange* b) { return a->start < b->start; };
    std::sort(steps_.begin(), steps_.end(), by_start);
    for (auto& [key, ranges] : by_thread_) std::sort(ranges.begin(), ranges.end(), by_start);
  }

  std::string operator()(const Kernel& k) const {
    const std::optional<detail::LaunchPoint> point = launches_.launch_of(k);
    const Nanoseconds at = point ? point->at : k.start;
    if (by_ == CounterGrouping::step) {
      const auto it = std::upper_bound(steps_.begin(), steps_.end(), at, [](Nanoseconds t, const NvtxRange* r) { return t < r->start; });
      if (it == steps_.begin() || (*std::prev(it))->end < at) return {};
      return fmt::format("step {}", std::prev(it) - steps_.begin());
    }
    const std::uint64_t key = point && point->call ? detail::thread_key(point->call->process, point->call->thread) : detail::any_thread;
    const auto found = by_thread_.find(key);
    if (found == by_thread_.end()) return outside;
    const auto& ranges = found->second;
    // The innermost range holding `at` is the latest-starting one that has not ended by then.
    auto it = std::upper_bound(ranges.begin(), ranges.end(), at, [](Nanoseconds t, const NvtxRange* r) { return t < r->start; });
    while (it != ranges.begin()) {
      --it;
      if ((*it)->end >= at) return trace_.strings.at((*it)->name);
    }
    return outside;
  }

  static constexpr const char* outside = "(outside NVTX ranges)";

 private:
  const Trace& trace_;
  detail::LaunchIndex launches_;
  CounterGrouping by_;
  std::vector<const NvtxRange*> steps_;
  std::unordered_map<std::uint64_t, std::vector<const NvtxRange*>> by_thread_;
};

std::vector<CounterRooflineRow> group_rows(const Trace& trace, const CounterRooflineOptions& options,
                                           const std::unordered_map<std::uint32_t, NameEstimate>& names,
                                           const DeviceCeilings& ceilings, std::vector<std::string>& unknown,
                                           std::uint64_t* outside_steps) {
  const CounterRowIndex index(trace.counters);
  const GroupOf group_of(trace, options);
  std::map<std::string, GroupTotals> groups;
  for (const auto& k : trace.kernels) {
    if (index.profiler_kernel(k)) continue;  // not the program's
    std::string key = group_of(k);
    if (key.empty()) {
      ++*outside_steps;
      continue;
    }
    GroupTotals& g = groups[std::move(key)];
    const NameEstimate& e = names.at(k.name);
    ++g.calls;
    const CounterRow* row = index.find(k);
    // A launch's time: its own when it ran untouched, else its name's per-call time.
    const bool own_time = row == nullptr && !trace.counters.is_perturbed(k.correlation);
    const double time = own_time ? static_cast<double>(k.end - k.start) : e.time_ns;
    g.time_ns += time;
    g.time_from_profiled_pass = g.time_from_profiled_pass || (row != nullptr && e.time_from_profiled_pass);
    if (!e.profiled) {
      ++g.without_counters;
      g.time_without_counters_ns += time;
      g.roof_ns += time;  // nothing known to win
      continue;
    }
    g.roof_ns += e.time_ns > 0 ? time * e.roof_ns / e.time_ns : 0;
    if (row == nullptr) {
      g.dram += e.dram;
      g.l2 += e.l2;
      for (const auto& [p, f] : e.flops) g.flops[p] += f;
      continue;
    }
    ++g.own_counters;
    const LaunchWork w = launch_work(trace.counters, *row);
    g.dram += w.dram_bytes();
    g.l2 += w.l2_bytes;
    for (const auto& [p, f] : w.flops) g.flops[p] += f;
  }
  std::vector<CounterRooflineRow> rows;
  for (const auto& [name, g] : groups)
    if (g.calls > g.without_counters)  // some of its kernels have counters
      rows.push_back(group_row(name, g, ceilings, unknown));
  return rows;
}

}  // namespace

std::string to_string(CounterGrouping g) {
  switch (g) {
    case CounterGrouping::kernel: return "kernel";
    case CounterGrouping::nvtx_range: return "nvtx_range";
    case CounterGrouping::step: return "step";
  }
  return "kernel";
}

CounterGrouping counter_grouping_from_string(const std::string& text) {
  if (text == "kernel") return CounterGrouping::kernel;
  if (text == "nvtx_range" || text == "nvtx" || text == "operator") return CounterGrouping::nvtx_range;
  if (text == "step") return CounterGrouping::step;
  throw UsageError(fmt::format("by: unknown grouping '{}': give kernel, nvtx_range (operator) or step", text));
}

void CounterRooflineOptions::validate() const {
  if (by == CounterGrouping::step && step_range.empty())
    throw UsageError("step_range: grouping the measured roofline by step needs the NVTX range that marks a step");
}

CounterRoofline counter_roofline(const Trace& trace, const DeviceCeilings& ceilings, const CounterRooflineOptions& options) {
  options.validate();
  CounterRoofline out;
  out.by = options.by;
  out.ceilings_source = ceilings.source_text;
  out.memory_bytes_per_s = ceilings.memory_bytes_per_s;
  out.peak_flops_per_s = ceilings.peak_flops_per_s;
  const auto totals = totals_by_name(trace);
  std::vector<std::string> unknown;
  double unprofiled_ns = 0;
  std::size_t unprofiled_names = 0;
  std::unordered_map<std::uint32_t, NameEstimate> estimates;
  for (const auto& [name, t] : totals) {
    bool from_profiled = false;
    const double time = name_time_ns(t, &from_profiled);
    out.kernel_time_ns += time;
    NameEstimate& e = estimates[name];
    e.time_ns = e.roof_ns = time / static_cast<double>(t.calls);
    e.time_from_profiled_pass = from_profiled;
    if (t.profiled == 0) {
      unprofiled_ns += time;
      ++unprofiled_names;
      continue;
    }
    CounterRooflineRow row = row_of(trace.strings.at(name), t, ceilings, unknown);
    e.profiled = true;
    e.roof_ns = row.time_at_roof_ns / static_cast<double>(t.calls);
    e.dram = row.dram_bytes;
    e.l2 = row.l2_bytes;
    e.flops = row.flops_by_precision;
    if (options.by == CounterGrouping::kernel) out.kernels.push_back(std::move(row));
  }
  std::uint64_t outside_steps = 0;
  if (options.by != CounterGrouping::kernel) {
    unknown.clear();  // the rows below name them again
    out.kernels = group_rows(trace, options, estimates, ceilings, unknown, &outside_steps);
  }
  for (auto& r : out.kernels) {
    r.time_share = out.kernel_time_ns > 0 ? r.time_ns / out.kernel_time_ns : 0;
    const double whole = options.by == CounterGrouping::step ? r.time_ns : out.kernel_time_ns;
    const double rest = whole - r.win_ns;
    r.whole_speedup = rest > 0 ? whole / rest : 1;
  }
  std::sort(out.kernels.begin(), out.kernels.end(), [](const auto& a, const auto& b) { return a.win_ns > b.win_ns; });
  if (unprofiled_names > 0)
    out.notes.push_back(fmt::format("{} kernel names ({:.1f}% of kernel time) have no counters: not profiled, or run "
                                    "only inside CUDA graphs",
                                    unprofiled_names, out.kernel_time_ns > 0 ? 100 * unprofiled_ns / out.kernel_time_ns : 0));
  if (options.by != CounterGrouping::kernel)
    out.notes.push_back("launches without counters of their own count their kernel name's mean bytes and FLOPs");
  if (outside_steps > 0)
    out.notes.push_back(fmt::format("{} kernel launches were outside every '{}' range and belong to no step", outside_steps,
                                    options.step_range));
  for (const auto& p : unknown)
    out.notes.push_back(fmt::format("no {} peak in the ceilings ({}): those FLOPs do not count toward the roof", p,
                                    ceilings.source_text));
  if (ceilings.memory_bytes_per_s <= 0) out.notes.push_back("no memory bandwidth in the ceilings: no kernel is judged memory-bound");
  return out;
}

std::string to_text(const CounterRoofline& r, std::size_t rows) {
  const char* rows_are = r.by == CounterGrouping::kernel ? "kernel names" : r.by == CounterGrouping::step ? "steps" : "NVTX ranges";
  const char* column = r.by == CounterGrouping::kernel ? "kernel" : r.by == CounterGrouping::step ? "step" : "NVTX range";
  std::string out = fmt::format("Measured roofline ({} {} with counters; ceilings: {})\n", r.kernels.size(), rows_are,
                                r.ceilings_source.empty() ? "none" : r.ceilings_source);
  out += fmt::format("{:>6} {:>6} {:>10} {:>10} {:>8} {:>5} {:>5} {:>8} {:>10} {:>7}  {}\n", "calls", "time%", "DRAM/call",
                     "FLOP/call", "FLOP/B", "%BW", "%peak", "bound", "win", r.by == CounterGrouping::step ? "step" : "whole", column);
  for (std::size_t i = 0; i < r.kernels.size() && i < rows; ++i) {
    const auto& k = r.kernels[i];
    const std::string name = k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name;
    out += fmt::format("{:>6} {:>5.1f}% {:>10} {:>10} {:>8.2f} {:>4.0f}% {:>4.0f}% {:>8} {:>10} {:>6.3f}x  {}\n", k.calls,
                       100 * k.time_share, format_bytes(k.dram_bytes), fmt::format("{:.3g}", k.flops), k.intensity,
                       100 * k.bytes_share_of_peak, 100 * k.flops_share_of_peak, to_string(k.bound),
                       format_ms(k.win_ns / 1e6), k.whole_speedup, name);
  }
  if (!r.kernels.empty()) out += fmt::format("Top: {} -- {}.\n", r.kernels.front().name, r.kernels.front().reason);
  for (const auto& n : r.notes) out += fmt::format("note: {}\n", n);
  return out;
}

namespace {

nlohmann::json row_json(const CounterRooflineRow& k) {
  return {{"name", k.name},
          {"calls", k.calls},
          {"profiled_calls", k.profiled_calls},
          {"time_ns", k.time_ns},
          {"time_from_profiled_pass", k.time_from_profiled_pass},
          {"time_share", k.time_share},
          {"dram_bytes", k.dram_bytes},
          {"l2_bytes", k.l2_bytes},
          {"flops", k.flops},
          {"flops_by_precision", k.flops_by_precision},
          {"precision", k.precision},
          {"intensity", k.intensity},
          {"attained_flops_per_s", k.attained_flops_per_s},
          {"attained_bytes_per_s", k.attained_bytes_per_s},
          {"flops_share_of_peak", k.flops_share_of_peak},
          {"bytes_share_of_peak", k.bytes_share_of_peak},
          {"bound", to_string(k.bound)},
          {"reason", k.reason},
          {"time_at_roof_ns", k.time_at_roof_ns},
          {"win_ns", k.win_ns},
          {"whole_speedup", k.whole_speedup}};
}


}  // namespace

nlohmann::json to_json(const CounterRoofline& r) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : r.kernels) kernels.push_back(row_json(k));
  return {{"by", to_string(r.by)},
          {"kernels", kernels},
          {"kernel_time_ns", r.kernel_time_ns},
          {"ceilings_source", r.ceilings_source},
          {"memory_bytes_per_s", r.memory_bytes_per_s},
          {"peak_flops_per_s", r.peak_flops_per_s},
          {"notes", r.notes}};
}

Plot counter_roofline_plot(const CounterRoofline& r, const DeviceCeilings& ceilings, std::size_t labelled,
                           const std::string& title) {
  static constexpr const char* labelled_series = "largest wins";
  static constexpr const char* other_series = "other rows (hover to read)";
  std::vector<RooflineOperation> operations;
  std::size_t unplaced = 0;
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {  // ranked by win: the first ones are labelled
    const CounterRooflineRow& k = r.kernels[i];
    if (k.flops <= 0 || k.dram_bytes <= 0 || k.attained_flops_per_s <= 0) {
      ++unplaced;
      continue;
    }
    RooflineOperation op;
    op.label = fmt::format("{} ({:.0f}%)", short_kernel_name(k.name), 100 * k.time_share);
    op.dtype = ceiling_dtype_of(k.precision);
    op.intensity_flop_per_byte = k.intensity;
    op.flops_per_s = k.attained_flops_per_s;
    op.series = operations.size() < labelled ? labelled_series : other_series;
    // Area by time share: a row of 2% of the time gets the default marker, half the time 25x it.
    op.marker_area = 50 * k.time_share;
    operations.push_back(std::move(op));
  }
  RooflinePlotOptions options;
  options.title = title.empty() ? fmt::format("Measured roofline: one point per {}, area by time share", to_string(r.by)) : title;
  Plot plot = roofline_plot(ceilings, operations, options);
  for (auto& series : plot.series)
    if (series.name == other_series) series.draw_labels = false;
  if (unplaced > 0)
    plot.warnings.push_back(fmt::format("{} rows without both FLOPs and DRAM bytes are not drawn (no place on a log-log "
                                        "roofline)",
                                        unplaced));
  return plot;
}

std::vector<Record> counter_records(const CounterRoofline& r) {
  std::vector<Record> records;
  for (const auto& k : r.kernels) {
    if (k.calls == 0 || k.time_ns <= 0) continue;
    Record rec;
    rec.name = "trace.counters";
    rec.method = Method::cupti_trace;
    const std::string dtype = ceiling_dtype_of(k.precision);
    for (const DType t : all_dtypes)
      if (to_string(t) == dtype) rec.dtype = t;
    rec.params = {{param_key::grouping, to_string(r.by)}, {param_key::group, k.name}};
    rec.samples_ms = {k.time_ns / static_cast<double>(k.calls) / 1e6};
    finalize(rec);
    rec.bytes = k.dram_bytes;
    rec.flops = k.flops;
    rec.gate = RecordGate{.informational = true,
                          .reason = "hardware counters of a trace: where the time goes, not a timing"};
    extra_key::bound.set(rec, to_string(k.bound));
    extra_key::counter_roofline_row.set(rec, row_json(k));
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace ridge::trace
