// Hardware counters across passes: which metric entry a GPU collects, which kernels are ridge's own
// timing instruments, how the passes of a step replay line up, the pass plan in words, and what
// profiling cost in the program's own steps.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ridge/format.hpp"
#include "ridge/trace/counters.hpp"
#include "ridge/trace/events.hpp"

namespace ridge::trace {

std::vector<std::string> metric_alternatives(const std::string& entry) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (true) {
    const auto bar = entry.find('|', from);
    out.push_back(entry.substr(from, bar == std::string::npos ? std::string::npos : bar - from));
    if (bar == std::string::npos) return out;
    from = bar + 1;
  }
}

bool is_timing_probe_kernel(std::string_view symbol) {
  // Mangled: _ZN5ridge12_GLOBAL__N_118hold_stream_kernelE...; demangled: ridge::(anonymous namespace)::hold_stream_kernel(...
  const bool ridge_symbol = symbol.starts_with("_ZN5ridge") || symbol.starts_with("ridge::");
  if (!ridge_symbol) return false;
  for (std::string_view probe : {"hold_stream_kernel", "empty_kernel", "busy_wait_kernel"})
    if (symbol.find(probe) != std::string_view::npos) return true;
  return false;
}

bool LaunchSignature::operator==(const LaunchSignature& o) const {
  return name == o.name && std::equal(grid, grid + 3, o.grid) && std::equal(block, block + 3, o.block);
}

namespace {

std::string describe(const LaunchSignature& s) {
  return fmt::format("{} <<<({},{},{}), ({},{},{})>>>", s.name, s.grid[0], s.grid[1], s.grid[2], s.block[0], s.block[1],
                     s.block[2]);
}

}  // namespace

PassMatch match_passes(const std::vector<std::vector<LaunchSignature>>& passes, std::size_t ranges) {
  PassMatch m;
  if (passes.empty()) return m;
  const auto& first = passes.front();
  bool same_count = ranges == first.size();
  for (const auto& pass : passes) same_count = same_count && pass.size() == first.size();
  // CUPTI's range i of every pass is that pass's i-th launch. With as many launches in every pass
  // as ranges, launch i gets range i wherever every pass ran the same kernel there (a grid grown
  // with a KV cache costs that launch only). Otherwise the lists may be shifted: only the prefix
  // before the first difference is certain.
  std::size_t prefix = std::min(first.size(), ranges);
  std::vector<bool> agree(first.size(), true);
  for (std::size_t p = 1; p < passes.size(); ++p) {
    const auto& pass = passes[p];
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (i < pass.size() && pass[i] == first[i]) continue;
      if (agree[i] && (same_count || i < prefix)) {
        if (i < pass.size())
          m.mismatches.push_back(fmt::format("launch {} of the step: pass 1 ran {}, pass {} ran {}", i + 1,
                                             describe(first[i]), p + 1, describe(pass[i])));
        else
          m.mismatches.push_back(fmt::format("launch {} of the step ({}): pass {} launched only {} kernels", i + 1,
                                             describe(first[i]), p + 1, pass.size()));
      }
      agree[i] = false;
      prefix = std::min(prefix, i);
    }
    if (pass.size() != first.size())
      m.mismatches.push_back(fmt::format("pass {} launched {} kernels, pass 1 launched {}: the step's launches differ "
                                         "(data-dependent work?); only the launches before the first difference keep "
                                         "counters", p + 1, pass.size(), first.size()));
  }
  if (ranges != first.size())
    m.mismatches.push_back(fmt::format("CUPTI decoded {} ranges for the {} launches of pass 1", ranges, first.size()));
  const std::size_t last = same_count ? first.size() : prefix;
  for (std::size_t i = 0; i < last; ++i)
    if (agree[i]) m.matched.push_back(i);
  return m;
}

std::string to_text(const CounterPassPlan& plan, const CounterOptions& options) {
  std::string out = fmt::format("Counter plan on {}: {} metrics in {} pass{}", plan.chip, plan.metrics.size(),
                                plan.passes, plan.passes == 1 ? "" : "es");
  if (!plan.metrics_not_offered.empty())
    out += fmt::format(" ({} of the set not offered by this GPU: {})", plan.metrics_not_offered.size(),
                       fmt::join(plan.metrics_not_offered, ", "));
  out += "\n";
  for (std::size_t g = 0; g < plan.groups.size(); ++g)
    out += fmt::format("  group {}: {}\n", g + 1, fmt::join(plan.groups[g], ", "));
  if (options.replay_mode() == CounterReplay::steps && options.steps) {
    const auto [first, last] = options.steps_taken(plan.passes);
    const std::uint64_t profiled = options.steps->second - options.steps->first + 1;
    out += fmt::format("  replay by steps: {} profiled step{} x {} pass{} take the program's steps {}..{} ({} steps); "
                       "each of them runs once, its kernels serialized; the program must run past step {}\n",
                       profiled, profiled == 1 ? "" : "s", plan.passes, plan.passes == 1 ? "" : "es", first, last,
                       last - first + 1, last);
  } else {
    out += fmt::format("  replay by kernel: each profiled launch runs {} time{} inside its launch call, its memory saved "
                       "and restored each pass", plan.passes, plan.passes == 1 ? "" : "s");
    if (options.first_launches_per_kernel > 0)
      out += fmt::format(" (the first {} launches of each kernel name)", options.first_launches_per_kernel);
    out += "\n";
  }
  return out;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

ProfilingCost profiling_cost(const Trace& trace, const std::string& step_range) {
  ProfilingCost cost;
  if (step_range.empty()) return cost;
  const auto name = trace.strings.find(step_range);
  if (!name) return cost;
  std::vector<const NvtxRange*> steps;
  for (const auto& r : trace.ranges)
    if (r.name == *name && !r.marker) steps.push_back(&r);
  std::sort(steps.begin(), steps.end(), [](const NvtxRange* a, const NvtxRange* b) { return a->start < b->start; });
  const KernelCounters& c = trace.counters;
  std::vector<Nanoseconds> profiled_launches;
  for (const auto& row : c.rows) profiled_launches.push_back(row.launch_ns);
  std::sort(profiled_launches.begin(), profiled_launches.end());
  const bool by_steps = c.replay == CounterReplay::steps && c.steps_taken.second >= c.steps_taken.first &&
                        (c.steps_taken.second > 0 || !c.rows.empty());
  std::vector<double> profiled, other;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const NvtxRange& s = *steps[i];
    bool in = false;
    if (by_steps) {
      in = i >= c.steps_taken.first && i <= c.steps_taken.second;
    } else {
      const auto it = std::lower_bound(profiled_launches.begin(), profiled_launches.end(), s.start);
      in = it != profiled_launches.end() && *it <= s.end;
    }
    const double ns = static_cast<double>(s.end - s.start);
    if (in)
      profiled.push_back(ns);
    else if (i > 0)  // the first step holds start-up (allocation, compilation, autotuning)
      other.push_back(ns);
  }
  cost.profiled_steps = profiled.size();
  cost.other_steps = other.size();
  cost.profiled_step_ns = median(profiled);
  cost.other_step_ns = median(other);
  if (cost.known())
    for (double ns : profiled) cost.extra_ns += ns - cost.other_step_ns;
  return cost;
}

std::string to_text(const ProfilingCost& cost) {
  if (!cost.known())
    return cost.profiled_steps == 0 ? "no step ran under profiling" : "no unprofiled step to compare with";
  const double each = cost.profiled_step_ns / std::max(cost.other_step_ns, 1.0);
  return fmt::format("{} step{} under profiling took {} each (median) against {} for the other {} (the first step "
                     "left out): {:.1f}x, {} more in all",
                     cost.profiled_steps, cost.profiled_steps == 1 ? "" : "s", format_ms(cost.profiled_step_ns / 1e6),
                     format_ms(cost.other_step_ns / 1e6), cost.other_steps, each, format_ms(cost.extra_ns / 1e6));
}

std::string counters_summary(const Trace& trace, const std::string& step_range) {
  const KernelCounters& c = trace.counters;
  std::string out = fmt::format("Counters: {} launches with counters, {} pass{} each", c.rows.size(), c.passes,
                                c.passes == 1 ? "" : "es");
  if (c.replay == CounterReplay::steps)
    out += fmt::format(", replayed by the program's own steps {}..{} ({} profiled step{} complete)", c.steps_taken.first,
                       c.steps_taken.second, c.steps_profiled, c.steps_profiled == 1 ? "" : "s");
  else
    out += ", each kernel replayed inside its launch (memory saved and restored each pass)";
  out += fmt::format("; L2 {} before each profiled kernel", c.l2_flushed ? "flushed" : "not flushed");
  // Measured on the H100: with its cache control off, Nsight Compute's save and restore between its
  // passes leave other data in L2 than the program's own steps do (results/h100/counters).
  out += c.l2_flushed ? " (as Nsight Compute's default cache control, all).\n"
                      : ": the DRAM bytes of a kernel whose data may still be in L2 depend on what ran before it "
                        "(Nsight Compute flushes by default, and even at cache control none its save and restore "
                        "between passes leave another L2).\n";
  if (c.graph_launches > 0)
    out += fmt::format("  {} graph launches: their kernels have no counters{}.\n", c.graph_launches,
                       c.replay == CounterReplay::kernel ? " (kernel replay does not reach into CUDA graphs)" : "");
  if (c.captured_launches > 0) out += fmt::format("  {} launches into a capturing stream: not run, not profiled.\n", c.captured_launches);
  if (c.ranges_dropped > 0) out += fmt::format("  {} ranges dropped by CUPTI (more launches than ranges_per_decode).\n", c.ranges_dropped);
  if (c.ranges_unmatched > 0)
    out += fmt::format("  {} decoded ranges could not be tied to one launch and were dropped.\n", c.ranges_unmatched);
  constexpr std::size_t named = 5;
  for (std::size_t i = 0; i < c.mismatches.size() && i < named; ++i) out += fmt::format("  not matched: {}\n", c.mismatches[i]);
  if (c.mismatches.size() > named) out += fmt::format("  ... and {} more differences\n", c.mismatches.size() - named);
  const ProfilingCost cost = profiling_cost(trace, step_range);
  if (cost.profiled_steps > 0) out += fmt::format("  Cost: {}.\n", to_text(cost));
  out += fmt::format("  ridge's own calls into the profiler took {:.2f} s{}.\n", c.profiling_seconds,
                     c.replay == CounterReplay::kernel ? " (kernel replay itself runs inside the launches: the steps' "
                                                         "wall times above, or the program's, tell its cost)" : "");
  return out;
}

}  // namespace ridge::trace
