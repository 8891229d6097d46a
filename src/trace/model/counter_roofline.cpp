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
#include "ridge/trace/events.hpp"

namespace ridge::trace {

namespace {

struct NameTotals {
  std::uint64_t calls = 0, profiled = 0, untouched = 0;
  double untouched_ns = 0, profiled_pass_ns = 0;
  double dram = 0, l2 = 0;
  std::map<std::string, double> flops;
};

std::unordered_map<std::uint32_t, std::size_t> rows_by_correlation(const KernelCounters& c) {
  std::unordered_map<std::uint32_t, std::size_t> index;
  for (std::size_t i = 0; i < c.rows.size(); ++i) index.emplace(c.rows[i].correlation, i);
  return index;
}

std::map<std::uint32_t, NameTotals> totals_by_name(const Trace& trace) {
  const auto index = rows_by_correlation(trace.counters);
  std::map<std::uint32_t, NameTotals> totals;
  for (const auto& k : trace.kernels) {
    NameTotals& t = totals[k.name];
    ++t.calls;
    const auto it = index.find(k.correlation);
    if (it == index.end()) {
      ++t.untouched;
      t.untouched_ns += static_cast<double>(k.end - k.start);
      continue;
    }
    const LaunchWork w = launch_work(trace.counters, trace.counters.rows[it->second]);
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
  return r;
}

}  // namespace

CounterRoofline counter_roofline(const Trace& trace, const DeviceCeilings& ceilings) {
  CounterRoofline out;
  out.ceilings_source = ceilings.source_text;
  out.memory_bytes_per_s = ceilings.memory_bytes_per_s;
  out.peak_flops_per_s = ceilings.peak_flops_per_s;
  const auto totals = totals_by_name(trace);
  std::vector<std::string> unknown;
  double unprofiled_ns = 0;
  std::size_t unprofiled_names = 0;
  for (const auto& [name, t] : totals) {
    bool from_profiled = false;
    const double time = name_time_ns(t, &from_profiled);
    out.kernel_time_ns += time;
    if (t.profiled == 0) {
      unprofiled_ns += time;
      ++unprofiled_names;
      continue;
    }
    out.kernels.push_back(row_of(trace.strings.at(name), t, ceilings, unknown));
  }
  for (auto& r : out.kernels) {
    r.time_share = out.kernel_time_ns > 0 ? r.time_ns / out.kernel_time_ns : 0;
    const double rest = out.kernel_time_ns - r.win_ns;
    r.whole_speedup = rest > 0 ? out.kernel_time_ns / rest : 1;
  }
  std::sort(out.kernels.begin(), out.kernels.end(), [](const auto& a, const auto& b) { return a.win_ns > b.win_ns; });
  if (unprofiled_names > 0)
    out.notes.push_back(fmt::format("{} kernel names ({:.1f}% of kernel time) have no counters: not profiled, or run "
                                    "only inside CUDA graphs",
                                    unprofiled_names, out.kernel_time_ns > 0 ? 100 * unprofiled_ns / out.kernel_time_ns : 0));
  for (const auto& p : unknown)
    out.notes.push_back(fmt::format("no {} peak in the ceilings ({}): those FLOPs do not count toward the roof", p,
                                    ceilings.source_text));
  if (ceilings.memory_bytes_per_s <= 0) out.notes.push_back("no memory bandwidth in the ceilings: no kernel is judged memory-bound");
  return out;
}

std::string to_text(const CounterRoofline& r, std::size_t rows) {
  std::string out = fmt::format("Measured roofline ({} kernel names with counters; ceilings: {})\n", r.kernels.size(),
                                r.ceilings_source.empty() ? "none" : r.ceilings_source);
  out += fmt::format("{:>6} {:>6} {:>10} {:>10} {:>8} {:>5} {:>5} {:>8} {:>10} {:>7}  {}\n", "calls", "time%", "DRAM/call",
                     "FLOP/call", "FLOP/B", "%BW", "%peak", "bound", "win", "whole", "kernel");
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

nlohmann::json to_json(const CounterRoofline& r) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : r.kernels)
    kernels.push_back({{"name", k.name},
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
                       {"whole_speedup", k.whole_speedup}});
  return {{"kernels", kernels},
          {"kernel_time_ns", r.kernel_time_ns},
          {"ceilings_source", r.ceilings_source},
          {"memory_bytes_per_s", r.memory_bytes_per_s},
          {"peak_flops_per_s", r.peak_flops_per_s},
          {"notes", r.notes}};
}

}  // namespace ridge::trace
